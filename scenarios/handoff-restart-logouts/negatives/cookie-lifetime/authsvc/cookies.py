"""The auth cookies the login and refresh endpoints set."""

REFRESH_COOKIE = "refresh"
REFRESH_MAX_AGE: int | None = 30 * 24 * 3600
"""Thirty days: the cookie survives a browser restart."""


def refresh_cookie(token: str) -> dict[str, object]:
    """Attributes of the refresh cookie carrying `token`."""
    return {
        "name": REFRESH_COOKIE,
        "value": token,
        "max_age": REFRESH_MAX_AGE,
        "httponly": True,
        "secure": True,
        "samesite": "Lax",
        "path": "/auth",
    }
