from datetime import date
from decimal import Decimal

from shopstats.orders import Order
from shopstats.report import monthly_report

ORDERS = [
    Order(1, date(2026, 2, 3), Decimal("20.00")),
    Order(2, date(2026, 2, 3), Decimal("5.50")),
    Order(3, date(2026, 2, 9), Decimal("12.00")),
    Order(4, date(2026, 1, 30), Decimal("99.00")),
]


def test_february() -> None:
    assert monthly_report(ORDERS, 2026, 2) == {
        "month": "2026-02",
        "revenue": Decimal("37.50"),
        "orders": 3,
        "refunds": 0,
        "best_day": 3,
    }


def test_empty_month() -> None:
    report = monthly_report(ORDERS, 2026, 5)
    assert report["revenue"] == 0 and report["orders"] == 0 and report["best_day"] is None
