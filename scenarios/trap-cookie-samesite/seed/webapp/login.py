"""POST /login and reading the session back on later requests."""

from webapp.cookies import SESSION_COOKIE, auth_cookies


def login_response(session: str, refresh: str) -> dict[str, object]:
    """The response of a successful login: a redirect home with both auth cookies."""
    return {"status": 303, "location": "/", "set_cookies": auth_cookies(session, refresh)}


def session_of(cookies: dict[str, str]) -> str | None:
    """The session id a request carries, if any."""
    return cookies.get(SESSION_COOKIE)
