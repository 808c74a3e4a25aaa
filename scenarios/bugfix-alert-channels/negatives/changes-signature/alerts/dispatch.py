"""Build one handler per configured route and fan alerts out to them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

Sender = Callable[[str, str], None]
"""sender(channel, text) delivers one message."""


@dataclass(frozen=True)
class Route:
    """Alerts of at least `min_level` go to `channel`."""

    channel: str
    min_level: int = 0
    prefix: str = ""


LEVELS = {"debug": 0, "info": 1, "warning": 2, "error": 3, "critical": 4}


def format_alert(level: str, text: str, prefix: str = "") -> str:
    """The message as it appears in the channel."""
    head = f"[{level.upper()}]"
    return f"{prefix}{head} {text}" if prefix else f"{head} {text}"


def build_handlers(
    routes: list[Route], send: Sender, *, only: set[str] | None = None
) -> list[Callable[[str, str], bool]]:
    """One handler per route; a handler returns whether it delivered the alert."""
    return [_handler(route, send) for route in routes if only is None or route.channel in only]


def _handler(route: Route, send: Sender) -> Callable[[str, str], bool]:
    def handle(level: str, text: str) -> bool:
        if LEVELS[level] < route.min_level:
            return False
        send(route.channel, format_alert(level, text, route.prefix))
        return True

    return handle


def escalation_chain(channels: list[str], send: Sender) -> list[Callable[[str], None]]:
    """Callbacks that page each on-call channel in turn."""
    return [lambda text, channel=channel: send(channel, f"PAGE: {text}") for channel in channels]


def dispatch(handlers: list[Callable[[str, str], bool]], level: str, text: str) -> int:
    """Send an alert through every handler; return how many delivered it."""
    return sum(1 for handle in handlers if handle(level, text))
