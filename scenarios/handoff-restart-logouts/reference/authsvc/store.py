"""Refresh-token families: one family per login, rotated on every refresh.

A refresh token is single-use. Presenting one rotates it: the family's current token is
replaced and the new one returned. Presenting a token that was already rotated away is a
replay (a stolen token, or a confused client) and revokes the whole family.

With a `path`, the families are written through to that file and read back at start, so a
recycled instance still knows every family (a store in process memory boots empty, and every
open tab's next background refresh then fails as an unknown token).
"""

import json
import os
import secrets
from pathlib import Path


class UnknownToken(Exception):
    """The token belongs to no family this store knows."""


class ReplayDetected(Exception):
    """An already-rotated token came back; its family is revoked."""


class TokenStore:
    """Token families by id, and the family of every token ever issued."""

    def __init__(self, path: str | Path | None = None) -> None:
        self._path = Path(path) if path is not None else None
        self._families: dict[str, dict[str, str]] = {}
        self._by_token: dict[str, str] = {}
        if self._path is not None and self._path.is_file():
            data = json.loads(self._path.read_text(encoding="utf-8"))
            self._families = data["families"]
            self._by_token = data["by_token"]

    def _save(self) -> None:
        if self._path is None:
            return
        self._path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self._path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"families": self._families, "by_token": self._by_token}), encoding="utf-8")
        os.replace(tmp, self._path)

    def issue(self, user: str) -> str:
        """Start a family for a fresh login; returns its first refresh token."""
        family = secrets.token_hex(8)
        token = secrets.token_urlsafe(24)
        self._families[family] = {"user": user, "current": token}
        self._by_token[token] = family
        self._save()
        return token

    def rotate(self, token: str) -> str:
        """Exchange a refresh token for the next one of its family."""
        family_id = self._by_token.get(token)
        if family_id is None or family_id not in self._families:
            raise UnknownToken(token[:6])
        family = self._families[family_id]
        if family["current"] != token:
            self.revoke(family_id)
            raise ReplayDetected(family_id)
        new = secrets.token_urlsafe(24)
        family["current"] = new
        self._by_token[new] = family_id
        self._save()
        return new

    def revoke(self, family_id: str) -> None:
        """End a family: every token of it is unknown from now on."""
        self._families.pop(family_id, None)
        self._save()
