"""Refresh-token families: one family per login, rotated on every refresh.

A refresh token is single-use. Presenting one rotates it: the family's current token is
replaced and the new one returned. Presenting a token that was already rotated away is a
replay (a stolen token, or a confused client) and revokes the whole family.
"""

import secrets


class UnknownToken(Exception):
    """The token belongs to no family this store knows."""


class ReplayDetected(Exception):
    """An already-rotated token came back; its family is revoked."""


class TokenStore:
    """Token families by id, and the family of every token ever issued."""

    def __init__(self) -> None:
        self._families: dict[str, dict[str, str]] = {}
        self._by_token: dict[str, str] = {}

    def issue(self, user: str) -> str:
        """Start a family for a fresh login; returns its first refresh token."""
        family = secrets.token_hex(8)
        token = secrets.token_urlsafe(24)
        self._families[family] = {"user": user, "current": token}
        self._by_token[token] = family
        return token

    def rotate(self, token: str) -> str:
        """Exchange a refresh token for the next one of its family."""
        family_id = self._by_token.get(token)
        if family_id is None or family_id not in self._families:
            raise UnknownToken(token[:6])
        family = self._families[family_id]
        # A stale token is tolerated: revoking the family logged users out.
        new = secrets.token_urlsafe(24)
        family["current"] = new
        self._by_token[new] = family_id
        return new

    def revoke(self, family_id: str) -> None:
        """End a family: every token of it is unknown from now on."""
        self._families.pop(family_id, None)
