"""Wiring: the store and the refresh endpoint, as the web framework calls them."""

from authsvc.cookies import refresh_cookie
from authsvc.settings import Settings
from authsvc.store import ReplayDetected, TokenStore, UnknownToken


def make_store(settings: Settings) -> TokenStore:
    """The token store of one app instance (called once at boot)."""
    return TokenStore()


def refresh(store: TokenStore, token: str) -> tuple[int, dict[str, object] | None]:
    """POST /auth/refresh: (status, the new refresh cookie or None)."""
    try:
        new = store.rotate(token)
    except (UnknownToken, ReplayDetected):
        return 401, None
    return 200, refresh_cookie(new)
