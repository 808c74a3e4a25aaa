"""The snapshot watcher on real files: settled versions only, dated by when they were written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.artifacts.names import SNAPSHOT_INDEX
from harness.artifacts.readers import SNAPSHOT_MAX
from harness.trial.inotify import Inotify
from harness.trial.snapshots import Watcher

needs_inotify = pytest.mark.skipif(Inotify.open() is None, reason="no inotify on this machine")


def _rows(out: Path) -> list[dict[str, object]]:
    index = out / SNAPSHOT_INDEX
    return [json.loads(line) for line in index.read_text().splitlines()] if index.is_file() else []


def _texts(out: Path) -> list[str | None]:
    return [None if r.get("deleted") else (out / str(r["snapshot"])).read_text() for r in _rows(out)]


@needs_inotify
def test_a_file_being_written_is_never_taken(tmp_path: Path) -> None:
    """open(..., "w") empties the file before the new text lands: no look in between may take it."""
    ws, out = tmp_path / "ws", tmp_path / "snaps"
    ws.mkdir()
    (ws / "app.py").write_text("a = 1\n")
    with Watcher(ws, ["app.py"], out) as watcher:
        with (ws / "app.py").open("w") as fh:
            watcher.poll()  # emptied, still open for writing
            fh.write("a = ")
            fh.flush()
            watcher.poll()  # half written
            fh.write("2\n")
        watcher.poll()
        assert watcher.count == 1  # taken when the write ended, before the agent is over
    assert _texts(out) == ["a = 2\n"]


@needs_inotify
def test_a_file_found_busy_after_its_write_ended_is_looked_at_again(tmp_path: Path) -> None:
    """The kernel reports a write's end (close) a moment before it drops the writer's count: a look
    woken by the report can find the file still open for writing, and no later event comes."""
    ws, out = tmp_path / "ws", tmp_path / "snaps"
    ws.mkdir()
    (ws / "app.py").write_text("a = 1\n")
    with Watcher(ws, ["app.py"], out) as watcher:
        with watcher._lock:  # the watcher thread waits while the scene is set
            (ws / "app.py").write_text("a = 2\n")  # a write ended: reported
            writer = os.open(ws / "app.py", os.O_WRONLY)  # but the file is still open for writing
        watcher.poll()
        assert watcher.count == 0  # busy: nothing read
        with watcher._lock:
            os.close(writer)  # the writer goes, and its report is lost, as in the kernel's window
            assert watcher._notify is not None
            list(watcher._notify.read())
        deadline = time.monotonic() + 30
        while watcher.count == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert watcher.count == 1  # taken while the agent runs, not only by the last look
    assert _texts(out) == ["a = 2\n"]


@needs_inotify
def test_a_write_that_begins_during_a_look_is_not_taken_half_done(tmp_path: Path) -> None:
    ws, out = tmp_path / "ws", tmp_path / "snaps"
    ws.mkdir()
    (ws / "app.py").write_text("a = 1\n")
    with Watcher(ws, ["app.py"], out) as watcher:
        (ws / "app.py").write_text("a = 2\n")
        fh = (ws / "app.py").open("w")  # the next write starts before the watcher looks
        watcher.poll()
        fh.write("a = 3\n")
        fh.close()
    # A watcher thread under load may take the settled "a = 2" before the next write opens the file;
    # what must never be taken is the half-done one (empty, truncated): every copy is a whole write.
    texts = _texts(out)
    assert texts[-1] == "a = 3\n" and set(texts) <= {"a = 2\n", "a = 3\n"}, texts


@needs_inotify
def test_a_file_in_a_folder_made_later_and_its_removal_are_seen(tmp_path: Path) -> None:
    ws, out = tmp_path / "ws", tmp_path / "snaps"
    ws.mkdir()
    with Watcher(ws, ["pkg/sub/mod.py"], out) as watcher:
        (ws / "pkg" / "sub").mkdir(parents=True)
        (ws / "pkg" / "sub" / "mod.py").write_text("x = 1\n")
        watcher.poll()
        assert watcher.count == 1
        os.rename(ws / "pkg", ws / "old")
        watcher.poll()
        assert watcher.count == 2
        (ws / "pkg" / "sub").mkdir(parents=True)
        tmp = ws / "pkg" / "sub" / ".mod.py.tmp"
        tmp.write_text("x = 2\n")
        os.replace(tmp, ws / "pkg" / "sub" / "mod.py")  # renamed into place: settled at once
        watcher.poll()
        assert watcher.count == 3
    assert _texts(out) == ["x = 1\n", None, "x = 2\n"]


@needs_inotify
def test_a_write_through_a_hard_link_elsewhere_is_seen(tmp_path: Path) -> None:
    ws, out = tmp_path / "ws", tmp_path / "snaps"
    (ws / "app").mkdir(parents=True)
    (ws / "app" / "main.py").write_text("v = 1\n")
    os.link(ws / "app" / "main.py", ws / "alias.py")
    with Watcher(ws, ["app/main.py"], out) as watcher:
        (ws / "alias.py").write_text("v = 2\n")
        watcher.poll()
        assert watcher.count == 1


@pytest.mark.parametrize("events", [True, False])
def test_a_file_open_for_writing_is_never_taken(tmp_path: Path, events: bool) -> None:
    """The read lease: whatever wakes the watcher, a file someone holds open for writing waits."""
    ws, out = tmp_path / "ws", tmp_path / "snaps"
    ws.mkdir()
    (ws / "app.py").write_text("a = 1\n")
    with Watcher(ws, ["app.py"], out, interval_s=3600, events=events) as watcher:
        with (ws / "app.py").open("w") as fh:
            fh.write("a = ")
            fh.flush()
            watcher.poll()
            watcher.poll()
            fh.write("2\n")
        watcher.poll()
        assert watcher.count == 1
    assert _texts(out) == ["a = 2\n"]


def test_without_leases_or_inotify_two_looks_must_agree(tmp_path: Path) -> None:
    ws, out = tmp_path / "ws", tmp_path / "snaps"
    ws.mkdir()
    (ws / "app.py").write_text("a = 1\n")
    with Watcher(ws, ["app.py"], out, interval_s=3600, events=False, leases=False) as watcher:
        (ws / "app.py").write_text("")
        watcher.poll()  # seen once: it may be a write under way
        (ws / "app.py").write_text("a = 2\n")
        watcher.poll()
        watcher.poll()
        assert watcher.count == 1
        (ws / "app.py").write_text("a = 3\n")
    assert _texts(out) == ["a = 2\n", "a = 3\n"]  # the last version is taken when the agent is over


@pytest.mark.parametrize("events", [True, False])
def test_snapshot_time_is_when_the_write_happened_not_when_it_was_seen(tmp_path: Path, events: bool) -> None:
    ws, out = tmp_path / "ws", tmp_path / "snaps"
    ws.mkdir()
    (ws / "app.py").write_text("a = 1\n")
    with Watcher(ws, ["app.py"], out, interval_s=3600, events=events) as watcher:
        (ws / "app.py").write_text("a = 2\n")
        written = (ws / "app.py").stat().st_ctime
        time.sleep(0.3)
        watcher.poll()  # seen 0.3 s late (the poller: seen once)
        watcher.poll()
        time.sleep(0.3)  # nothing happens for a while: the window since the file was quiet is stale
        (ws / "app.py").write_text("a = 3\n")
        os.utime(ws / "app.py", (written, written))  # dated back to the first write, before the pause
        forged = (ws / "app.py").stat()
        watcher.poll()
    rows = _rows(out)
    assert rows[0]["t"] == written
    # The forged mtime counts for nothing: the ctime, which nobody can set back, dates the write
    # (that of the write, or of the utime when the look came after it).
    assert forged.st_mtime == written and written + 0.5 < float(str(rows[1]["t"])) <= forged.st_ctime


WRITER = """
import json, sys, time
path, returned = sys.argv[1], []
for i in range(300):
    with open(path, "w") as fh:
        fh.write(f"v = {i}\\n")
    returned.append(time.time())
    for _ in range(i % 7 * 3000):  # the watcher's looks land at every point of the next write
        pass
print(json.dumps(returned))
"""


@needs_inotify
def test_no_version_is_dated_after_its_write_returned(tmp_path: Path) -> None:
    """A version is dated by the ctime of the version read (its own descriptor, not the path, which
    may hold a later write by then), in a window that starts before the watcher read its events
    (not after: a write in between would be dated after itself, and after the agent's next turn)."""
    ws, out = tmp_path / "ws", tmp_path / "snaps"
    ws.mkdir()
    (ws / "app.py").write_text("v = -1\n")
    with Watcher(ws, ["app.py"], out):
        done = subprocess.run(
            [sys.executable, "-c", WRITER, str(ws / "app.py")], capture_output=True, text=True, check=True
        )
    returned = json.loads(done.stdout)
    rows = [r for r in _rows(out) if "snapshot" in r]
    assert rows, "the writes were seen"
    late = []
    for row in rows:
        version = int((out / str(row["snapshot"])).read_text().split("= ")[1])
        if float(str(row["t"])) > returned[version]:
            late.append((row["t"], returned[version]))
    assert not late, f"{len(late)} of {len(rows)} versions dated after their write returned: {late[:3]}"


@pytest.mark.parametrize("events", [True, False])
def test_a_version_too_large_to_keep_is_recorded_never_read(tmp_path: Path, events: bool) -> None:
    """The agent chooses its files' sizes: a sparse 1,000 MB entry file costs it no disk, and a
    copy per version had cost the run directory's disk 1 GB each. Such a version is a row (time,
    size, why) with no copy; the next small one is kept again."""
    ws, out = tmp_path / "ws", tmp_path / "snaps"
    ws.mkdir()
    (ws / "app.py").write_text("a = 1\n")
    with Watcher(ws, ["app.py"], out, interval_s=3600, events=events), (ws / "app.py").open("r+b") as fh:
        fh.truncate(1000 << 20)  # a hole: nothing written
    with Watcher(ws, ["app.py"], out, interval_s=3600, events=events):
        (ws / "app.py").write_text("a = 2\n")
    rows = _rows(out)
    assert [(r.get("bytes"), r.get("omitted"), r.get("snapshot")) for r in rows] == [
        (1000 << 20, f"larger than {SNAPSHOT_MAX:,} bytes", None),
        (6, None, "002-app.py"),
    ]
    assert sum(f.stat().st_blocks for f in out.iterdir()) * 512 < 64 * 1024


def test_the_snapshots_of_a_run_keep_at_most_their_budget(tmp_path: Path) -> None:
    """Versions under the size limit still add up: past what a run keeps (earlier sessions'
    snapshots counted), versions are recorded with their digest and no copy."""
    ws, out = tmp_path / "ws", tmp_path / "snaps"
    ws.mkdir()
    (ws / "app.py").write_text("seed\n")
    with Watcher(ws, ["app.py"], out, interval_s=3600, events=False, keep=2500) as watcher:
        for i in range(3):
            (ws / "app.py").write_bytes(bytes([65 + i]) * 1000)
            watcher.poll()
            watcher.poll()  # the poller keeps a version seen twice
    with Watcher(ws, ["app.py"], out, interval_s=3600, events=False, keep=2500):
        (ws / "app.py").write_bytes(b"D" * 400)  # fits what is left, had the folder been empty
    rows = _rows(out)
    assert [r.get("snapshot") is not None for r in rows] == [True, True, False, False]
    assert [r["bytes"] for r in rows] == [1000, 1000, 1000, 400]
    assert rows[3]["omitted"] == "past the 2,500 bytes of snapshots a run keeps" and "sha256" in rows[3]
    assert sum(f.stat().st_size for f in out.iterdir() if f.name != SNAPSHOT_INDEX) == 2000
