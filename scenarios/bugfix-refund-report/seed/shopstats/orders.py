"""Orders as the web shop exports them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import Decimal


@dataclass(frozen=True)
class Order:
    """One order; a refund is recorded as its own row with `refund_of` set."""

    number: int
    placed: date
    total: Decimal
    refund_of: int | None = None

    @property
    def is_refund(self) -> bool:
        return self.refund_of is not None


def in_month(orders: list[Order], year: int, month: int) -> list[Order]:
    """The orders placed in one calendar month, in order-number order."""
    return sorted((o for o in orders if (o.placed.year, o.placed.month) == (year, month)), key=lambda o: o.number)
