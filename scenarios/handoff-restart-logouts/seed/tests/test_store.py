import pytest

from authsvc.app import make_store, refresh
from authsvc.settings import Settings
from authsvc.store import ReplayDetected, TokenStore, UnknownToken


def test_rotation_hands_out_a_new_token():
    store = TokenStore()
    first = store.issue("ana")
    second = store.rotate(first)
    assert second != first
    assert store.rotate(second)


def test_a_replayed_token_revokes_the_family():
    store = TokenStore()
    first = store.issue("ana")
    second = store.rotate(first)
    with pytest.raises(ReplayDetected):
        store.rotate(first)
    with pytest.raises(UnknownToken):
        store.rotate(second)


def test_refresh_endpoint(tmp_path):
    store = make_store(Settings(token_file=str(tmp_path / "tokens.json")))
    status, cookie = refresh(store, store.issue("ana"))
    assert status == 200 and cookie["httponly"] and cookie["secure"]
    assert refresh(store, "nonsense")[0] == 401
