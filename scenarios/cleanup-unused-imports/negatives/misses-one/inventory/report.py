"""Summaries for the weekly stock meeting."""

from __future__ import annotations

import sys
from collections import defaultdict
from decimal import Decimal
from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:
    from inventory.models import StockLevel


def value_by_tag(levels: Iterable[StockLevel]) -> dict[str, Decimal]:
    """Stock value per tag (an item with two tags counts towards both)."""
    totals: defaultdict[str, Decimal] = defaultdict(Decimal)
    for level in levels:
        for tag in level.item.tags or ("untagged",):
            totals[tag] += level.item.price * level.total
    return dict(sorted(totals.items()))


def restock_list(levels: Iterable[StockLevel]) -> list[str]:
    """SKUs to bring from the back room, in SKU order."""
    return sorted(level.item.sku for level in levels if level.needs_restock())
