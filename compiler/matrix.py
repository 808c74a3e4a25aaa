"""GitHub Actions matrix semantics, exactly, over plain dict combinations.

1. The product of the keys in declaration order.
2. `exclude`: every combination that matches an entry on all of the entry's keys goes.
3. `include`: each entry is added to every *original* combination none of whose
   original values it would overwrite (keys an earlier include added may be
   overwritten); an entry that fits no original combination becomes a new one.
   Later includes never extend combinations appended by earlier ones.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Expanded:
    """The combinations, and for each one the include entry that appended it (or None)."""

    combos: list[dict[str, Any]]
    appended_by: list[int | None]
    fitted_by: list[tuple[int, ...]]
    """For each combination, the include entries that fitted (extended) it; none for appended ones."""
    excluded: int = 0
    """How many combinations the exclude entries removed."""


def _matches(combo: dict[str, Any], entry: dict[str, Any]) -> bool:
    return all(combo.get(k) == v for k, v in entry.items())


def expand(
    axes: Mapping[str, Sequence[Any]],
    exclude: Sequence[dict[str, Any]] = (),
    include: Sequence[dict[str, Any]] = (),
    keep: Callable[[dict[str, Any]], bool] | None = None,
) -> Expanded:
    """Expand one matrix the way GitHub Actions does (see the module docstring).

    `keep` narrows the product before exclude (a matrix's explicit cell list); the
    combinations it keeps are the "original" ones include entries may extend.
    """
    keys = list(axes)
    original = set(keys)
    combos = (
        [dict(zip(keys, values, strict=True)) for values in itertools.product(*axes.values())] if keys else []
    )
    if keep is not None:
        combos = [c for c in combos if keep(c)]
    kept = len(combos)
    if exclude:
        combos = [c for c in combos if not any(_matches(c, ex) for ex in exclude)]
    base = [dict(c) for c in combos]
    result = [dict(c) for c in combos]
    appended: list[dict[str, Any]] = []
    appended_by: list[int | None] = [None] * len(result)
    fitted_by: list[list[int]] = [[] for _ in result]
    extra: list[int | None] = []
    for i, entry in enumerate(include):
        fitted = False
        for j, orig in enumerate(base):
            if all(orig[k] == v for k, v in entry.items() if k in original):
                fitted = True
                fitted_by[j].append(i)
                for k, v in entry.items():
                    if k not in original:
                        result[j][k] = v
        if not fitted:
            appended.append(dict(entry))
            extra.append(i)
    return Expanded(
        result + appended,
        appended_by + extra,
        [tuple(f) for f in fitted_by] + [() for _ in appended],
        kept - len(base),
    )
