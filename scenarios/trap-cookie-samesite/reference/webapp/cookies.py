"""The auth cookies: a session cookie and a refresh cookie, set at login and on refresh."""

# __Host-: the browser accepts these only Secure, with Path=/ and no Domain, so no subdomain can
# set or shadow them. SameSite stays Lax: Strict logged out everyone arriving from an external link.
SESSION_COOKIE = "__Host-session"
REFRESH_COOKIE = "__Host-refresh"


def auth_cookies(session: str, refresh: str) -> list[dict[str, object]]:
    """Attributes of both auth cookies, in the order the login response sets them."""
    common: dict[str, object] = {
        "path": "/",
        "secure": True,
        "httponly": True,
        "samesite": "Lax",
    }
    return [
        {"name": SESSION_COOKIE, "value": session, **common},
        {"name": REFRESH_COOKIE, "value": refresh, **common},
    ]
