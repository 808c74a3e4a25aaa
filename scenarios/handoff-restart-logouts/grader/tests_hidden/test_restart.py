"""Grader-only: token families outlive an instance recycle (a new store on the same settings)."""

import pytest

from authsvc.app import make_store, refresh
from authsvc.settings import Settings
from authsvc.store import ReplayDetected, UnknownToken


def test_a_recycled_instance_still_knows_the_family(tmp_path):
    settings = Settings(token_file=str(tmp_path / "var" / "refresh-tokens.json"))
    before = make_store(settings)
    token = before.rotate(before.issue("ana"))
    after = make_store(settings)  # the platform recycled the instance
    status, cookie = refresh(after, token)
    assert status == 200, "the refresh after a restart was refused: the user is logged out"
    assert refresh(make_store(settings), cookie["value"])[0] == 200


def test_replay_detection_survives_the_restart_too(tmp_path):
    settings = Settings(token_file=str(tmp_path / "tokens.json"))
    store = make_store(settings)
    first = store.issue("ana")
    second = store.rotate(first)
    again = make_store(settings)
    with pytest.raises(ReplayDetected):
        again.rotate(first)
    with pytest.raises(UnknownToken):
        make_store(settings).rotate(second)
