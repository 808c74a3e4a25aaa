"""Reading the supplier's CSV export."""

from __future__ import annotations

import csv
import json
import re
from decimal import Decimal, InvalidOperation

from inventory.models import Item, StockLevel
from inventory.units import to_pieces

_SKU = re.compile(r"^[A-Z]{3}-\d{4}$")


def parse_csv_row(row: list[str]) -> StockLevel:
    """One export row: sku, name, price, quantity, unit, tags (semicolon-separated)."""
    sku, name, price, quantity, unit, tags = (cell.strip() for cell in row)
    if not _SKU.match(sku):
        raise ValueError(f"bad SKU {sku!r}")
    try:
        amount = Decimal(price)
    except InvalidOperation:
        raise ValueError(f"bad price {price!r} for {sku}") from None
    item = Item(sku=sku, name=name, price=amount, tags=tuple(t for t in tags.split(";") if t))
    return StockLevel(item=item, back_room=to_pieces(int(quantity), unit))
