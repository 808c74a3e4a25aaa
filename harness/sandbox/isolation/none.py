"""No isolation: the command runs as the harness does. Explicit opt-in, loudly recorded."""

from __future__ import annotations

from harness.sandbox.isolation.base import SandboxSpec


class NoIsolation:
    """Runs the command unconfined; network: off cannot be enforced."""

    name = "none"

    def probe(self) -> str | None:
        return None

    def wrap(self, spec: SandboxSpec) -> list[str]:
        return list(spec.argv)

    @property
    def enforces_network_off(self) -> bool:
        return False
