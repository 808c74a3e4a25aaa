"""Isolation plug-ins: bwrap (default where it works), unshare (fallback), none (opt-in).

`select(name)` returns an instance by short name or dotted path `pkg.mod:Class`
(`harness.plugins`); "auto" picks the first of `AUTO_ORDER` whose probe passes.
"""

from __future__ import annotations

from harness.plugins import Plugins
from harness.sandbox.isolation.base import Isolation, Mount, Overlay, SandboxLimits, SandboxSpec

REGISTRY: dict[str, str] = {
    "bwrap": "harness.sandbox.isolation.bwrap:BwrapIsolation",
    "none": "harness.sandbox.isolation.none:NoIsolation",
    "unshare": "harness.sandbox.isolation.unshare:UnshareIsolation",
}
AUTO_ORDER: tuple[str, ...] = ("bwrap", "unshare")
ISOLATIONS = Plugins("isolation", REGISTRY, also=("auto",), dotted="pkg.mod:Class")

__all__ = [
    "AUTO_ORDER",
    "REGISTRY",
    "Isolation",
    "Mount",
    "Overlay",
    "SandboxLimits",
    "SandboxSpec",
    "select",
]


def select(name: str) -> Isolation:
    """The isolation called `name` ("auto", a registered short name, or "pkg.mod:Class")."""
    if name == "auto":
        for candidate in AUTO_ORDER:
            iso: Isolation = ISOLATIONS.load(candidate)()
            if iso.probe() is None:
                return iso
        name = "none"
    chosen: Isolation = ISOLATIONS.load(name)()
    return chosen
