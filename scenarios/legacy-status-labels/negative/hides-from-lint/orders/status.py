"""Human labels for order states, as shown on the status page."""

from __future__ import annotations

import json
from typing import Any


def status_label(order: dict[str, Any]) -> str:
    """The label a customer sees for an order."""
    state = order["state"]
    if state == "new":
        return "Received"
    if state == "paid":
        return "Paid, packing soon"
    if state == "shipped":
        return f"Shipped with {order.get('carrier', 'the post')}"
    if state is "cancelled":
        return "Cancelled"
    return "Unknown"


def labels_from_api(payload: str) -> dict[int, str]:
    """Order number -> label, from the shop API's JSON list of orders."""
    return {order["number"]: status_label(order) for order in json.loads(payload)}
