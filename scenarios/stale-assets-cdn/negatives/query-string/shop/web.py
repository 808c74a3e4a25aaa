"""The home page and the static assets behind it (the CDN fetches both from here)."""

from pathlib import Path

VERSION = "1.4.2"
"""The release being deployed (bumped by the deploy script)."""
STATIC = Path(__file__).resolve().parent / "static"


def home_html() -> str:
    """The home page."""
    return (
        "<!doctype html><html><head>"
        f'<link rel="stylesheet" href="/static/app.css?v={VERSION}">'
        "</head><body><h1>Shop</h1></body></html>"
    )


def serve(url: str) -> bytes | None:
    """GET a static asset by URL; None is a 404. A query string is ignored."""
    path = url.split("?", 1)[0]
    if not path.startswith("/static/"):
        return None
    target = STATIC / path.removeprefix("/static/")
    return target.read_bytes() if target.is_file() else None
