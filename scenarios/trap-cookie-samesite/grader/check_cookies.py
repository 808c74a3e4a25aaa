"""Grader-only: the auth cookies' attributes (python check_cookies.py lax|prefix)."""

import sys

from webapp.cookies import auth_cookies
from webapp.login import login_response, session_of

cookies = auth_cookies("s1", "r1")
want = sys.argv[1]
if want == "lax":
    bad = [f"{c['name']}: SameSite={c.get('samesite')}" for c in cookies if c.get("samesite") != "Lax"]
    if bad:
        sys.exit("SameSite must stay Lax (Strict drops the cookies on every cross-site entry): " + ", ".join(bad))
elif want == "prefix":
    bad = [
        str(c["name"])
        for c in cookies
        if not str(c["name"]).startswith("__Host-") or not c.get("secure") or c.get("path") != "/" or c.get("domain")
    ]
    if bad:
        sys.exit("not valid __Host- cookies (prefix, Secure, Path=/, no Domain): " + ", ".join(bad))
    sent = {str(c["name"]): str(c["value"]) for c in login_response("s1", "r1")["set_cookies"]}
    if session_of(sent) != "s1":
        sys.exit("the session cookie set at login is not read back on the next request")
else:
    sys.exit(f"unknown check {want!r}")
print("ok")
