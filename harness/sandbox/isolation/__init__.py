"""Isolation plug-ins: bwrap (default where it works), unshare (fallback), none (opt-in).

`select(name)` returns an instance by short name or dotted path `pkg.mod:Class`;
"auto" picks the first of `AUTO_ORDER` whose probe passes.
"""

from __future__ import annotations

import importlib

from harness.errors import UsageError
from harness.sandbox.isolation.base import Isolation, Mount, Overlay, SandboxLimits, SandboxSpec

REGISTRY: dict[str, str] = {
    "bwrap": "harness.sandbox.isolation.bwrap:BwrapIsolation",
    "none": "harness.sandbox.isolation.none:NoIsolation",
    "unshare": "harness.sandbox.isolation.unshare:UnshareIsolation",
}
AUTO_ORDER: tuple[str, ...] = ("bwrap", "unshare")

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


def _instantiate(target: str) -> Isolation:
    module_name, _, attr = target.partition(":")
    cls = getattr(importlib.import_module(module_name), attr)
    instance: Isolation = cls()
    return instance


def select(name: str) -> Isolation:
    """The isolation called `name` ("auto", a registered short name, or "pkg.mod:Class")."""
    if name == "auto":
        for candidate in AUTO_ORDER:
            if candidate in REGISTRY:
                iso = _instantiate(REGISTRY[candidate])
                if iso.probe() is None:
                    return iso
        return _instantiate(REGISTRY["none"])
    if name in REGISTRY:
        return _instantiate(REGISTRY[name])
    if ":" in name:
        return _instantiate(name)
    raise UsageError(
        f"unknown isolation {name!r}; valid: auto, {', '.join(sorted(REGISTRY))}, or pkg.mod:Class"
    )


def confines(isolation: Isolation) -> bool:
    """True when the isolation's sandbox is a pid namespace of its own (the whole tree ends with
    it), with its own network namespace and mounts, so the runner adds no namespaces around it.

    An isolation says so with `ends_tree = True` (bwrap, unshare); one that does not say is
    wrapped as before.
    """
    return bool(getattr(isolation, "ends_tree", False))
