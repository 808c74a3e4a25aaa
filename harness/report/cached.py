"""The report's aggregate of each block of runs, cached in the results index.

A report over an unchanged tree builds no per-run object: the runs are read through the index in
blocks (the first folder level under the report's root: one scenario, version or matrix each), and
each block's partial aggregate is cached in the index (table `aggregates`). The index drops a block's
entry in the same transaction that writes or removes a row under it (the grader's `record`, a sync
that finds a changed run folder), so a cached block never outlives a change the index has seen. A
block is aggregated again from its runs' cached facts when its entry is missing, and the blocks are
merged in path order (`Aggregator.merge`, exact for everything a block holds whole: its cells'
moments, evidence, pairs, tallies). A block's runs are cached as the outputs list them (`runlist`:
summary.json's items, JUnit test cases, the page's links), so an unchanged block renders no run.

Cached form: the accumulators' state as plain data (dicts, tuples, lists, sets, numbers, strings)
in `marshal`'s format — data only, never code, rebuilt into the classes the caller names and no
other. An entry that does not decode into them is ignored and recomputed. The cache is keyed by a
hash of the source of the report package and the contract, so a change to the aggregation code
invalidates it without anyone remembering to bump a number.
"""

from __future__ import annotations

import hashlib
import marshal
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from itertools import groupby
from pathlib import Path
from typing import Any, Protocol, TypeVar

import compiler.contract as contract
from harness.report.collect import RunFacts, Unreadable
from harness.report.indexed import FACTS_VERSION, Listing, facts

MARK = ...
"""First item of an encoded object: JSON-born data never holds Ellipsis, so it cannot be forged by a run."""


class Accumulator(Protocol):
    def add(self, run: RunFacts | Unreadable) -> None: ...

    def merge(self, other: Any) -> None: ...

    def seal(self) -> None: ...


A = TypeVar("A", bound=Accumulator)


def block_of(rel: str) -> str:
    """The block a run belongs to: its first folder under the report's root, with a slash ('' alone)."""
    head, sep, _rest = rel.partition("/")
    return head + "/" if sep else ""


def code_version(extra: str) -> str:
    """A hash of the source of every module of the report package and of the contract (the budgets a
    run's limits are counted against), plus extra: any change to them drops the cached aggregates."""
    digest = hashlib.sha256(extra.encode())
    report = Path(__file__).parent
    sources = (*sorted(report.glob("*.py")), *sorted(Path(contract.__file__).parent.glob("*.py")))
    for source in sources:
        digest.update(source.name.encode())
        if source.is_file():
            digest.update(source.read_bytes())
    return digest.hexdigest()[:16]


def encode(value: Any) -> Any:
    """value as plain data: dict values and object attributes encoded, other containers kept as they are."""
    kind = type(value)
    if kind is defaultdict:
        factory = value.default_factory
        return (MARK, "defaultdict", factory.__name__, {k: encode(v) for k, v in value.items()})
    if kind is Counter:
        return (MARK, "Counter", "", dict(value))
    if kind is dict:
        return {k: encode(v) for k, v in value.items()}
    slots = getattr(kind, "__slots__", None)
    if slots is not None and kind.__module__.startswith("harness."):
        return (MARK, "object", kind.__name__, {name: encode(getattr(value, name)) for name in slots})
    if hasattr(value, "__dict__") and kind.__module__.startswith("harness."):
        return (MARK, "object", kind.__name__, {k: encode(v) for k, v in vars(value).items()})
    return value


def decode(value: Any, classes: dict[str, type]) -> Any:
    """encode's plain data back as the named classes; KeyError for a class not named."""
    kind = type(value)
    if kind is dict:
        return {k: decode(v, classes) for k, v in value.items()}
    if kind is not tuple or not value or value[0] is not MARK:
        return value
    _mark, what, name, body = value
    if what == "Counter":
        return Counter(body)
    if what == "defaultdict":
        factories: dict[str, Callable[[], Any]] = {"dict": dict, "Counter": Counter, "list": list, **classes}
        return defaultdict(factories[name], {k: decode(v, classes) for k, v in body.items()})
    cls = classes[name]
    obj: Any = object.__new__(cls)
    for attr, item in body.items():
        setattr(obj, attr, decode(item, classes))
    return obj


def dumps(acc: Accumulator) -> bytes | None:
    """acc's cached form, or None when it holds something marshal cannot store (then it is not cached)."""
    try:
        return marshal.dumps(encode(acc))
    except ValueError:
        return None


def loads(blob: bytes, new: Callable[[], A], classes: dict[str, type]) -> A | None:
    """A cached block back, or None when the entry is not one (it is then aggregated again)."""
    try:
        acc = decode(marshal.loads(blob), classes)
    except (ValueError, EOFError, TypeError, KeyError, AttributeError):
        return None
    return acc if type(acc) is type(new()) else None


def aggregate(listing: Listing, new: Callable[[], A], classes: Iterable[type]) -> A:
    """Every run of listing folded into one accumulator, block by block in path order: a block's
    cached aggregate where the index holds one, else its runs' facts, then cached (unless one of its
    runs failed to grade just now: that verdict is the report's, not the run's)."""
    named = {c.__name__: c for c in classes}
    index = listing.index
    version = code_version(FACTS_VERSION)
    if index.meta("aggregates_version") != version:
        index.con.execute("BEGIN IMMEDIATE")
        index.drop_aggregates()
        index.set_meta("aggregates_version", version)
        index.con.execute("COMMIT")
    cached = index.aggregates()
    total = new()
    for block, members in groupby(listing.runs, key=block_of):
        blob = cached.get(block)
        part = loads(blob, new, named) if blob is not None else None
        if part is None:
            part = new()
            runs = list(members)
            for run in facts(listing, runs):
                part.add(run)
            part.seal()  # its runs rendered for the outputs once, cached with it
            state = dumps(part) if block and not any(rel in listing.failed for rel in runs) else None
            if state is not None:
                listing.index.put_aggregate(block, state, listing.generation)
        total.merge(part)
    return total
