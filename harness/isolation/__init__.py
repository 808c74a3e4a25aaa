"""Isolation plug-ins: bwrap (default where it works), unshare (fallback), none (opt-in)."""
