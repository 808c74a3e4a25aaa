"""Run one adapter trial in a private network namespace and record every off-box attempt.

Meant to run as `unshare --net --mount python tests/adapters/netcheck.py SPEC.json`: brings up
loopback, points /etc/resolv.conf at a DNS sinkhole on 127.0.0.1:53 that answers every name
with 127.0.0.1 and logs it, listens on 127.0.0.1:80/443 and logs connections (with the first
bytes: Host header or TLS SNI), starts the scripted model server, runs the adapter, and writes
`{"returncode", "dns", "connections", "records"}` to SPEC["out"].
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from harness.modelserver import Script, ScriptedModelServer  # noqa: E402
from tests.adapters.helpers import run_adapter  # noqa: E402


def _qname(packet: bytes) -> tuple[str, int]:
    """The queried name and the offset just past the question."""
    labels, i = [], 12
    while i < len(packet) and packet[i]:
        n = packet[i]
        labels.append(packet[i + 1 : i + 1 + n].decode("ascii", "replace"))
        i += 1 + n
    return ".".join(labels), i + 5


def dns_sinkhole(log: list[str]) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 53))
    while True:
        packet, peer = sock.recvfrom(4096)
        name, end = _qname(packet)
        qtype = int.from_bytes(packet[end - 4 : end - 2], "big")
        log.append(name)
        header = packet[:2] + b"\x81\x80" + packet[4:6] + (b"\x00\x01" if qtype == 1 else b"\x00\x00")
        answer = b"\xc0\x0c\x00\x01\x00\x01\x00\x00\x00\x3c\x00\x04\x7f\x00\x00\x01" if qtype == 1 else b""
        sock.sendto(header + b"\x00\x00\x00\x00" + packet[12:end] + answer, peer)


def listener(port: int, log: list[str]) -> None:
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", port))
    server.listen(16)
    while True:
        conn, _ = server.accept()
        conn.settimeout(1)
        try:
            first = conn.recv(2048)
        except OSError:
            first = b""
        text = first.decode("latin-1")
        host = next(
            (line.split(":", 1)[1].strip() for line in text.splitlines() if line.lower().startswith("host:")),
            "",
        )
        names = re.findall(r"[a-z0-9-]+(?:\.[a-z0-9-]+)+", text) if port == 443 else []
        sni = names[-1] if names else ""
        log.append(f"{port} {host or sni}")
        conn.close()


def main(spec_path: str) -> int:
    spec: dict[str, Any] = json.loads(Path(spec_path).read_text())
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    resolv = Path(tempfile.mkdtemp()) / "resolv.conf"
    resolv.write_text("nameserver 127.0.0.1\n")
    subprocess.run(["mount", "--bind", str(resolv), "/etc/resolv.conf"], check=True)
    dns: list[str] = []
    connections: list[str] = []
    threading.Thread(target=dns_sinkhole, args=(dns,), daemon=True).start()
    for port in (80, 443):
        threading.Thread(target=listener, args=(port, connections), daemon=True).start()
    if spec.get("probe"):  # positive control: a lookup and a connection the recorders must see
        with socket.create_connection((spec["probe"], 443), timeout=5):
            pass
    with ScriptedModelServer(Script.model_validate(spec["script"])) as server:
        trial = run_adapter(
            spec["adapter"],
            workspace=Path(spec["workspace"]),
            run_dir=Path(spec["run_dir"]),
            prompt=spec["prompt"],
            args={"base_url": server.url, **spec.get("args", {})},
        )
        records = [r.model_dump() for r in server.records()]
    if spec.get("linger"):  # background traffic (telemetry flushes) may come after the answer
        threading.Event().wait(float(spec["linger"]))
    Path(spec["out"]).write_text(
        json.dumps(
            {
                "returncode": trial.returncode,
                "stderr": trial.stderr,
                "dns": dns,
                "connections": connections,
                "records": records,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
