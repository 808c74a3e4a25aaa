"""`python -m harness.modelserver --script S.yaml --port 0 --log L.jsonl [--url-file F]`.

Prints the base URL on stdout (and writes it to `--url-file`), then serves until interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
from pathlib import Path
from types import FrameType

from harness.modelserver import ScriptedModelServer, load_script


def main(argv: list[str] | None = None) -> int:
    """Run the server in the foreground."""
    parser = argparse.ArgumentParser(prog="python -m harness.modelserver", description=__doc__)
    parser.add_argument("--script", type=Path, required=True, help="YAML script")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--log", type=Path, help="append one JSON line per request here")
    parser.add_argument("--url-file", type=Path, help="write the base URL to this file")
    parser.add_argument("--log-bodies", action="store_true", help="log each request body too")
    args = parser.parse_args(argv)
    try:
        script = load_script(args.script)
    except (OSError, ValueError) as exc:
        print(f"error: {args.script}: {exc}", file=sys.stderr)
        return 2
    server = ScriptedModelServer(
        script, host=args.host, port=args.port, log_path=args.log, log_bodies=args.log_bodies
    )

    def stop(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    if args.url_file:
        tmp = args.url_file.with_name(args.url_file.name + ".tmp")
        tmp.write_text(server.url + "\n", encoding="utf-8")
        tmp.replace(args.url_file)
    print(server.url, flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
