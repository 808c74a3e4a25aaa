"""The noop agent: reads the prompt and changes nothing (the negative control, harness overhead).

The runner starts the same behaviour as `dd of=/dev/null status=none` (`harness.trial.agent.NOOP`):
no interpreter for an agent that does nothing. This module is the adapter contract's reference."""

from __future__ import annotations

import sys


def main() -> int:
    """Consume the prompt and exit 0."""
    sys.stdin.read()
    return 0


if __name__ == "__main__":
    sys.exit(main())
