"""Deployment settings (the platform sets them from the environment)."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Settings:
    token_file: str = "var/refresh-tokens.json"
    """Where durable auth state may live on the instance's attached volume."""
    refresh_every_s: int = 600
    """The browser's background refresh timer (see static/app.js)."""
