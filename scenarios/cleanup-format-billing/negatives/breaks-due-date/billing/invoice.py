"""Invoice lines, taxes and totals."""

from __future__ import annotations
from dataclasses import dataclass, field
from decimal import Decimal, ROUND_HALF_UP
from datetime import date, timedelta

CENT = Decimal("0.01")
VAT_RATES = {"standard": Decimal("0.19"), "reduced": Decimal("0.07"), "none": Decimal("0")}


@dataclass(frozen=True)
class Line:
    """One billed item."""

    description: str
    hours: Decimal
    rate: Decimal
    vat: str = "standard"

    @property
    def net(self) -> Decimal:
        return (self.hours * self.rate).quantize(CENT, rounding=ROUND_HALF_UP)

    @property
    def tax(self) -> Decimal:
        return (self.net * VAT_RATES[self.vat]).quantize(CENT, rounding=ROUND_HALF_UP)


@dataclass
class Invoice:
    """An invoice to one client."""

    number: str
    client: str
    issued: date
    lines: list[Line] = field(default_factory=list)
    payment_days: int = 30

    def add(
        self,
        description: str,
        hours: str | int | Decimal,
        rate: str | int | Decimal,
        vat: str = "standard",
    ) -> Line:
        if vat not in VAT_RATES:
            raise ValueError(f"unknown VAT rate {vat!r}; known: {', '.join(sorted(VAT_RATES))}")
        line = Line(description, Decimal(hours), Decimal(rate), vat)
        self.lines.append(line)
        return line

    @property
    def due(self) -> date:
        return self.issued + timedelta(days=self.payment_days - 1)

    def totals(self) -> dict[str, Decimal]:
        net = sum((l.net for l in self.lines), Decimal("0"))
        tax = sum((l.tax for l in self.lines), Decimal("0"))
        return {"net": net, "tax": tax, "gross": net + tax}

    def tax_breakdown(self) -> dict[str, Decimal]:
        """Tax per VAT rate, for the rates that occur."""
        out: dict[str, Decimal] = {}
        for l in self.lines:
            out[l.vat] = out.get(l.vat, Decimal("0")) + l.tax
        return dict(sorted(out.items()))
