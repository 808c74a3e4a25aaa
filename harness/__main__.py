"""`python -m harness` is the `assay` command."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def _unshadow() -> None:
    """Drop the working directory `python -m` put first on sys.path, unless it is assay's checkout.

    A user's bench folder often has its own `adapters/` (seed 000's layout): first on the path, it
    would shadow assay's `adapters` package as an empty namespace package.
    """
    if not sys.path or sys.path[0] not in ("", os.getcwd()):
        return
    checkout = Path(__file__).resolve().parent.parent
    if Path.cwd().resolve() != checkout:
        del sys.path[0]


_unshadow()

from harness.cli import main  # noqa: E402  (after the path is fixed)

sys.exit(main())
