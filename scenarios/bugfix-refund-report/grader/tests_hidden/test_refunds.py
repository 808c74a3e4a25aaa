"""Hidden tests: copied into the workspace only after the agent has finished."""

from datetime import date
from decimal import Decimal

from shopstats.orders import Order
from shopstats.report import monthly_report

MARCH = [
    Order(10, date(2026, 3, 2), Decimal("40.00")),
    Order(11, date(2026, 3, 2), Decimal("15.00")),
    Order(12, date(2026, 3, 5), Decimal("8.00")),
    Order(13, date(2026, 3, 6), Decimal("15.00"), refund_of=11),
    Order(14, date(2026, 3, 20), Decimal("2.50"), refund_of=7),
]


def test_refunds_are_subtracted_and_counted() -> None:
    report = monthly_report(MARCH, 2026, 3)
    assert report["revenue"] == Decimal("45.50")
    assert report["orders"] == 3
    assert report["refunds"] == 2
    assert report["best_day"] == 2


def test_a_month_of_refunds_only() -> None:
    report = monthly_report([Order(20, date(2026, 4, 1), Decimal("9.99"), refund_of=3)], 2026, 4)
    assert report == {"month": "2026-04", "revenue": Decimal("-9.99"), "orders": 0, "refunds": 1, "best_day": None}
