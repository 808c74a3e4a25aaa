"""The fault suite reuses the runner tests' fixture project."""

from tests.runner.conftest import project

__all__ = ["project"]
