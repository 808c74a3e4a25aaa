"""The project's price table, `specs/prices.yaml`: what a token costs, read by the grader (cost in
grade.json) and by the model gateway (money budgets), so both price the same way.

    kind: prices
    version: "2026-11"            # recorded with every cost computed from it
    unit: usd_per_million_tokens
    models:
      claude-sonnet-4-5: { input: 3.0, output: 15.0, cache_read: 0.3, cache_write: 3.75 }

A model id matches its exact key, else the longest key it starts with (dated snapshots). Cache reads
and writes cost the input rate where the table gives none. Reasoning tokens are part of output where
providers report them, so they are not billed twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.artifacts.store import read_plain

PRICES_FILE = Path("specs") / "prices.yaml"
KINDS = ("input", "output", "cache_read", "cache_write")
"""Token kinds a rate is given for."""


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

    def usd(self, model: str, tokens: Mapping[str, int]) -> float | None:
        """What `tokens` (by kind: input, output, cache_read, cache_write) of `model` cost; None if unpriced."""
        rates = self.rates(model)
        if rates is None:
            return None
        total = sum(
            tokens.get(kind, 0)
            * rates.get(kind, rates.get("input", 0.0) if kind.startswith("cache") else 0.0)
            for kind in KINDS
        )
        return total / 1_000_000


def load_prices(project: Path | None) -> PriceTable | None:
    """The project's price table, or None when it has none.

    Parsed once per version of the file (`read_plain`): every grade prices its run."""
    if project is None or not (project / PRICES_FILE).is_file():
        return None
    raw: Any = read_plain(project / PRICES_FILE)
    if not isinstance(raw, dict) or raw.get("kind") != "prices" or not isinstance(raw.get("models"), dict):
        raise PriceTableError(f"{PRICES_FILE}: expected kind: prices with a models map")
    if not raw.get("version"):
        raise PriceTableError(f"{PRICES_FILE}: a price table needs a version")
    models: dict[str, dict[str, float]] = {}
    for name, rates in raw["models"].items():
        if not isinstance(rates, dict) or set(rates) - set(KINDS):
            raise PriceTableError(f"{PRICES_FILE}: models.{name}: rates must be a map of {', '.join(KINDS)}")
        models[str(name)] = {k: float(v) for k, v in rates.items()}
    return PriceTable(str(raw["version"]), models)
