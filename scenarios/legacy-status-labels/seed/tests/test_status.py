import json

from orders.status import labels_from_api, status_label


def test_labels() -> None:
    assert status_label({"state": "new"}) == "Received"
    assert status_label({"state": "shipped", "carrier": "DHL"}) == "Shipped with DHL"
    assert status_label({"state": "lost"}) == "Unknown"


def test_api_orders() -> None:
    payload = json.dumps([{"number": 7, "state": "paid"}, {"number": 8, "state": "shipped"}])
    assert labels_from_api(payload) == {7: "Paid, packing soon", 8: "Shipped with the post"}
