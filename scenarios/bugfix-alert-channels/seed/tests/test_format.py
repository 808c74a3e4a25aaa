from alerts.dispatch import dispatch, format_alert


def test_format_alert() -> None:
    assert format_alert("error", "disk full") == "[ERROR] disk full"
    assert format_alert("info", "deploy done", prefix="prod ") == "prod [INFO] deploy done"


def test_dispatch_counts_deliveries() -> None:
    assert dispatch([lambda level, text: True, lambda level, text: False], "info", "x") == 1
