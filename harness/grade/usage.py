"""Usage and cost from usage.jsonl and a pinned, versioned price table (never the agent's figure).

`specs/prices.yaml`:

    kind: prices
    version: "2026-11"            # recorded with every cost computed from it
    unit: usd_per_million_tokens
    models:
      claude-sonnet-4-5: { input: 3.0, output: 15.0, cache_read: 0.3, cache_write: 3.75 }

A model id matches its exact key, else the longest key it starts with (dated snapshots). The model is
the run's (the agent spec's `model`, recorded in run.json); only when the run names none is each turn
priced as the model its usage row names (the scripted agent's `scripted`, an adapter that reports the
model it was answered by).
Reasoning tokens are part of output where providers report them, so they are not billed twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from harness.artifacts.grade_sections import Usage
from harness.artifacts.readers import Turn

PRICES_FILE = Path("specs") / "prices.yaml"
_KINDS = ("input", "output", "cache_read", "cache_write")


class PriceTableError(ValueError):
    """specs/prices.yaml is not a price table."""


@dataclass(frozen=True)
class PriceTable:
    """USD per million tokens, per model and token kind."""

    version: str
    models: Mapping[str, Mapping[str, float]]

    def rates(self, model: str) -> Mapping[str, float] | None:
        """The rates of a model id, or None when the table does not price it."""
        if model in self.models:
            return self.models[model]
        keys = sorted((k for k in self.models if model.startswith(k)), key=len, reverse=True)
        return self.models[keys[0]] if keys else None


def load_prices(project: Path | None) -> PriceTable | None:
    """The project's price table, or None when it has none."""
    if project is None or not (project / PRICES_FILE).is_file():
        return None
    raw: Any = yaml.safe_load((project / PRICES_FILE).read_text(encoding="utf-8"))
    if not isinstance(raw, dict) or raw.get("kind") != "prices" or not isinstance(raw.get("models"), dict):
        raise PriceTableError(f"{PRICES_FILE}: expected kind: prices with a models map")
    if not raw.get("version"):
        raise PriceTableError(f"{PRICES_FILE}: a price table needs a version")
    models: dict[str, dict[str, float]] = {}
    for name, rates in raw["models"].items():
        if not isinstance(rates, dict) or set(rates) - set(_KINDS):
            raise PriceTableError(f"{PRICES_FILE}: models.{name}: rates must be a map of {', '.join(_KINDS)}")
        models[str(name)] = {k: float(v) for k, v in rates.items()}
    return PriceTable(str(raw["version"]), models)


def priced_model(turns: Sequence[Turn], model: str | None) -> str | None:
    """What the turns are priced as: the run's model, else the model(s) the usage rows name."""
    if model:
        return model
    named = sorted({t.model for t in turns if t.model})
    return ", ".join(named) if named and all(t.model for t in turns) else None


def cost(turns: Sequence[Turn], model: str | None, table: PriceTable | None) -> tuple[float | None, str]:
    """USD cost of the turns and the table version used (or why there is no cost)."""
    if table is None:
        return None, "no price table (specs/prices.yaml)"
    if not model and not all(t.model for t in turns):
        return None, f"{table.version}: the run names no model (nor does every usage row)"
    total = 0.0
    for turn in turns:
        name = model or turn.model or ""
        rates = table.rates(name)
        if rates is None:
            return None, f"{table.version}: model {name} is not priced"
        total += sum(
            getattr(turn, kind)
            * rates.get(kind, rates.get("input", 0.0) if kind.startswith("cache") else 0.0)
            for kind in _KINDS
        )
    return round(total / 1_000_000, 6), table.version


def usage(
    turns: Sequence[Turn],
    *,
    malformed: int,
    first_valid_t: float | None,
    model: str | None,
    table: PriceTable | None,
) -> Usage:
    """The usage section; every figure None when the adapter reported no usage."""
    if not turns:
        return Usage(malformed_rows=malformed, model=model)
    sums = {k: sum(getattr(t, k) for t in turns) for k in (*_KINDS, "reasoning")}
    contexts = [t.context for t in turns if t.context is not None]
    limits = [t.context_limit for t in turns if t.context_limit is not None]
    peak = max(contexts) if contexts else None
    limit = max(limits) if limits else None
    to_first = None
    if first_valid_t is not None:
        to_first = sum(sum(getattr(t, k) for k in _KINDS) for t in turns if t.t <= first_valid_t)
    usd, version = cost(turns, model, table)
    return Usage(
        present=True,
        turns=len(turns),
        total=sum(sums[k] for k in _KINDS),
        peak_context=peak,
        context_limit=limit,
        peak_context_share=round(peak / limit, 4) if peak is not None and limit else None,
        tokens_to_first_valid=to_first,
        cost_usd=usd,
        price_table=version,
        model=priced_model(turns, model),
        malformed_rows=malformed,
        **sums,
    )
