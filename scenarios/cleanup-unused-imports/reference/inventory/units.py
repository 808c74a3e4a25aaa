"""Conversion of pack sizes to single pieces; plug-ins register extra units at import time."""

from __future__ import annotations

_UNITS: dict[str, int] = {"piece": 1}


def register(name: str, pieces: int) -> None:
    """Make `name` a unit worth `pieces` single pieces."""
    if pieces <= 0:
        raise ValueError(f"a unit holds at least one piece, not {pieces}")
    _UNITS[name] = pieces


def to_pieces(quantity: int, unit: str) -> int:
    """`quantity` packs of `unit` in single pieces."""
    try:
        return quantity * _UNITS[unit]
    except KeyError:
        raise ValueError(f"unknown unit {unit!r}; known: {', '.join(sorted(_UNITS))}") from None


register("box", 12)
