"""The monthly report: revenue, order count, refunds, best day."""

from __future__ import annotations

import csv
import io
from collections import Counter
from decimal import Decimal

from shopstats.orders import Order, in_month


def monthly_report(orders: list[Order], year: int, month: int) -> dict[str, object]:
    """Figures for one month.

    `revenue` is the sum of the month's sales minus the month's refunds; `orders` counts
    sales only; `refunds` counts refund rows; `best_day` is the day of the month with the
    most sales (the earliest on a tie), or None in a month without sales.
    """
    rows = in_month(orders, year, month)
    sales = [o for o in rows if not o.is_refund]
    revenue = sum((o.total for o in sales), Decimal("0"))
    refunds = [o for o in rows if o.is_refund]
    if refunds:
        refunded = sum((o.total for o in refunds), Decimal("0"))
        revenue += refunded
    per_day = Counter(o.placed.day for o in sales)
    best_day = min(per_day, key=lambda d: (-per_day[d], d)) if per_day else None
    return {
        "month": f"{year:04d}-{month:02d}",
        "revenue": revenue,
        "orders": len(sales),
        "refunds": len(refunds),
        "best_day": best_day,
    }


def to_csv(report: dict[str, object]) -> str:
    """The report as a two-line CSV for the accountant's spreadsheet."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(list(report))
    writer.writerow([report[k] for k in report])
    return out.getvalue()
