"""The records the back office keeps."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from decimal import Decimal
from typing import List, Optional


@dataclass(frozen=True)
class Item:
    """A product the shop sells."""

    sku: str
    name: str
    price: Decimal
    tags: tuple[str, ...] = field(default=())


@dataclass
class StockLevel:
    """How many pieces of an item are on the shelf and in the back room."""

    item: Item
    shelf: int = 0
    back_room: int = 0

    @property
    def total(self) -> int:
        return self.shelf + self.back_room

    def needs_restock(self, threshold: int = 5) -> bool:
        return self.shelf < threshold and self.back_room > 0
