from webapp.cookies import SESSION_COOKIE
from webapp.login import login_response, session_of


def test_login_sets_both_auth_cookies():
    cookies = login_response("s1", "r1")["set_cookies"]
    assert [c["value"] for c in cookies] == ["s1", "r1"]
    assert all(c["httponly"] and c["secure"] for c in cookies)


def test_session_is_read_back():
    assert session_of({SESSION_COOKIE: "s1"}) == "s1"
