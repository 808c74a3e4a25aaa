import re

from shop.web import home_html, serve


def test_the_stylesheet_link_is_served():
    href = re.search(r'href="([^"]+)"', home_html()).group(1)
    assert b".buy" in serve(href)


def test_unknown_assets_are_404():
    assert serve("/static/nope.css") is None
    assert serve("/etc/passwd") is None
