"""Hidden tests: copied into the workspace only after the agent has finished."""

from alerts.dispatch import Route, build_handlers, dispatch, escalation_chain


def test_each_route_delivers_to_its_own_channel() -> None:
    sent: list[tuple[str, str]] = []
    routes = [Route("#ops", 2), Route("#all"), Route("#oncall", 4, prefix="!! ")]
    handlers = build_handlers(routes, lambda channel, text: sent.append((channel, text)))
    assert dispatch(handlers, "error", "db down") == 2
    assert dispatch(handlers, "critical", "site down") == 3
    assert sent == [
        ("#ops", "[ERROR] db down"),
        ("#all", "[ERROR] db down"),
        ("#ops", "[CRITICAL] site down"),
        ("#all", "[CRITICAL] site down"),
        ("#oncall", "!! [CRITICAL] site down"),
    ]


def test_escalation_pages_each_channel() -> None:
    sent: list[tuple[str, str]] = []
    for page in escalation_chain(["#first", "#second"], lambda channel, text: sent.append((channel, text))):
        page("x")
    assert [channel for channel, _ in sent] == ["#first", "#second"]
