"""The auth cookies the login and refresh endpoints set."""

REFRESH_COOKIE = "refresh"
REFRESH_MAX_AGE: int | None = None
"""None: a session cookie, gone when the browser closes (product decision, 2025-02)."""


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
