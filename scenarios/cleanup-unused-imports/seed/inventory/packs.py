"""Pack sizes of our suppliers, registered when the package is imported."""

from __future__ import annotations

from inventory.units import register

register("crate", 144)
register("pallet", 40 * 144)
