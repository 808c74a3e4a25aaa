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
    "confines",
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


def confines(isolation: Isolation) -> bool:
    """True when the isolation's sandbox is a pid namespace of its own (the whole tree ends with
    it), with its own network namespace and mounts, so the runner adds no namespaces around it.

    An isolation says so with `ends_tree = True` (bwrap, unshare); one that does not say is
    wrapped as before.
    """
    return bool(getattr(isolation, "ends_tree", False))
