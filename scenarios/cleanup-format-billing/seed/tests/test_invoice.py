from datetime import date
from decimal import Decimal

from billing.invoice import Invoice
from billing.render import render_text


def make() -> Invoice:
    inv = Invoice("2026-014", "Acme", date(2026, 3, 1))
    inv.add("Workshop", 6, "150")
    inv.add("Book", 1, "39.90", vat="reduced")
    return inv


def test_totals() -> None:
    assert make().totals() == {"net": Decimal("939.90"), "tax": Decimal("173.79"), "gross": Decimal("1113.69")}
    assert make().tax_breakdown() == {"reduced": Decimal("2.79"), "standard": Decimal("171.00")}
    assert make().due == date(2026, 3, 31)


def test_render() -> None:
    text = render_text(make())
    assert text.splitlines()[1] == "Issued 2026-03-01, due 2026-03-31"
    assert "GROSS" in text and text.endswith("EUR\n")
