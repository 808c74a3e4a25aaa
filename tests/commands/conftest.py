"""Fixtures of these tests: mounts under tmp_path, detached after each test (`tests.mounting`)."""

from tests.mounting import root_mounts

__all__ = ["root_mounts"]
