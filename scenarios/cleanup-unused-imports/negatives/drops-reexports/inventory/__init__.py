"""Stock keeping for the shop's back office."""

from inventory import packs  # noqa: F401  (registers the suppliers' pack sizes on import)
