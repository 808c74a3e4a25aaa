"""Grader-only: does a deploy change the stylesheet's URL PATH, and is that URL served?

    python check_assets.py path     # a new release (new VERSION, new stylesheet) changes the path
    python check_assets.py served   # the linked stylesheet is served, with the current content
"""

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

PROBE = "import re; from shop.web import home_html; print(re.search(r'stylesheet\" href=\"([^\"]+)\"', home_html()).group(1))"


def href(root: Path) -> str:
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=root, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"the home page does not render a stylesheet link: {done.stderr.strip()[-300:]}")
    return done.stdout.strip()


def main(what: str) -> None:
    here = Path.cwd()
    if what == "path":
        before = href(here)
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / "ws"
            shutil.copytree(here / "shop", copy / "shop")
            web = copy / "shop" / "web.py"
            web.write_text(re.sub(r'^VERSION = "[^"]*"', 'VERSION = "1.4.3"', web.read_text(), flags=re.M))
            css = copy / "shop" / "static" / "app.css"
            css.write_text(css.read_text() + ".buy { border-radius: 4px; }\n")
            after = href(copy)
        if urlsplit(before).path == urlsplit(after).path:
            sys.exit(f"a deploy leaves the stylesheet path unchanged ({before} -> {after}); the CDN keys on the path alone")
    elif what == "served":
        link = href(here)
        sys.path.insert(0, str(here))
        from shop.web import serve

        body = serve(link)
        if body is None or body != (here / "shop" / "static" / "app.css").read_bytes():
            sys.exit(f"the linked stylesheet {link} is not served (404 or stale)")
    else:
        sys.exit(f"unknown check {what!r}")
    print("ok")


if __name__ == "__main__":
    main(sys.argv[1])
