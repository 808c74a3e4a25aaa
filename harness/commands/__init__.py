"""Subcommands of the assay CLI, one module each (see harness.cli)."""
