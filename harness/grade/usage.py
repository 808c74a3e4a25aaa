"""Usage and cost from usage.jsonl and the project's pinned, versioned price table (never the agent's
figure; `harness.artifacts.prices`).

The model is the run's (the agent spec's `model`, recorded in run.json); only when the run names none
is each turn priced as the model its usage row names (the scripted agent's `scripted`, an adapter that
reports the model it was answered by).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Literal, NamedTuple

from harness.artifacts.grade_sections import Usage
from harness.artifacts.names import GATEWAY_LOG
from harness.artifacts.prices import KINDS as _KINDS
from harness.artifacts.prices import PriceTable, PriceTableError, load_prices
from harness.artifacts.readers import Turn
from harness.artifacts.run_view import RunView
from harness.gateway.log import gateway_turns

__all__ = ["PriceTable", "PriceTableError", "cost", "load_prices", "priced_model", "usage"]


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
        usd = table.usd(name, {kind: getattr(turn, kind) for kind in _KINDS})
        if usd is None:
            return None, f"{table.version}: model {name} is not priced"
        total += usd
    return round(total, 6), table.version


class Account(NamedTuple):
    """Whose turns the usage section counts."""

    turns: Sequence[Turn]
    source: Literal["gateway", "adapter"] | None
    adapter_differs: tuple[str, ...] = ()


def account(view: RunView) -> Account:
    """The gateway's turns where one carried the model (run.json `usage_check`), else the adapter's.

    The gateway knows no context limit; the adapter's (advisory) is kept for the share.
    """
    check = view.record.usage_check
    if check is None:
        return Account(view.turns, "adapter" if view.turns else None)
    limits = [t.context_limit for t in view.turns if t.context_limit is not None]
    limit = max(limits) if limits else None
    turns = [
        dataclasses.replace(t, context_limit=limit)
        for t in gateway_turns(view.run_dir / GATEWAY_LOG)
        if t.t >= view.record.started_at
    ]
    return Account(turns, "gateway", check.differs)


def usage(
    of: Account,
    *,
    malformed: int,
    first_valid_t: float | None,
    model: str | None,
    table: PriceTable | None,
) -> Usage:
    """The usage section; every figure None when the account has no turns."""
    turns, source, differs = of
    if not turns:
        return Usage(malformed_rows=malformed, model=model, source=source, adapter_differs=differs)
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
        source=source,
        adapter_differs=differs,
        **sums,
    )
