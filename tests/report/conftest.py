"""Fixtures of the report tests: one headless Chromium per module for the browser-marked tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from cdp import Browser, find_chromium


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    binary = find_chromium()
    if binary is None:
        pytest.skip("chromium is not installed (apt-get install chromium); the browser test did not run")
    b = Browser(binary, tmp_path_factory.mktemp("profile"))
    yield b
    b.stop()
