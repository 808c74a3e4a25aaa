"""The auth cookies: a session cookie and a refresh cookie, set at login and on refresh."""

SESSION_COOKIE = "__Host-session"
REFRESH_COOKIE = "__Host-refresh"
COOKIE_DOMAIN = ".shop.example"


def auth_cookies(session: str, refresh: str) -> list[dict[str, object]]:
    """Attributes of both auth cookies, in the order the login response sets them."""
    common: dict[str, object] = {
        "domain": COOKIE_DOMAIN,
        "path": "/",
        "secure": True,
        "httponly": True,
        "samesite": "Lax",
    }
    return [
        {"name": SESSION_COOKIE, "value": session, **common},
        {"name": REFRESH_COOKIE, "value": refresh, **common},
    ]
