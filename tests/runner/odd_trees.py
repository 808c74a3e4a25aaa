"""Agents that leave a workspace no tool expects, and the check that each still counts as graded.

Shared by tests/runner (isolation none) and the hostile-agent suite (bwrap, unshare).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from compiler.contract import AgentSpec, CheckSpec, Job, Limits, Options
from harness.artifacts.records import RunRecord, RunStatus, read_grade
from harness.grade import grade_run
from harness.sandbox import neutralise
from harness.trial import run_trial
from tests.helpers import make_job, none_cell

LONG = "app/" + "/".join(["d" * 199] * 19)
"""19 folders of 199 bytes under app/: with the file below, a 4,000-byte relative path."""
RUN = "run-" + "r" * 120
"""The run directory's name: long enough that its workspace's absolute path plus the 4,000-byte
relative path passes PATH_MAX (4,096) wherever the test's temp folder is, as in a real run tree."""

ODD = {
    "fifo": "import os\nos.mkfifo('app/pipe')\n",
    "fifo-entry": "import os\nos.unlink('app/main.py')\nos.mkfifo('app/main.py')\n",
    "socket": "import socket\nsocket.socket(socket.AF_UNIX).bind('app/sock')\n",
    "long-name": (
        f"import os\nd = os.open('.', os.O_RDONLY)\nparts = {LONG!r}.split('/')\n"
        "for i in range(2, len(parts) + 1):\n    os.mkdir('/'.join(parts[:i]), dir_fd=d)\n"
        f"name = {LONG!r} + '/' + 'f' * (4000 - len({LONG!r}) - 1)\n"
        "fd = os.open(name, os.O_WRONLY | os.O_CREAT, dir_fd=d)\nos.write(fd, b'long\\n')\n"
    ),
    "newline-name": (
        "open('app/new\\nline.py', 'w').write('x = 1\\n')\nopen('app/esc\\x1b[31m.py', 'w').write('y = 2\\n')\n"
        "open(b'app/non\\xffutf8.py', 'w').write('z = 3\\n')\n"
    ),
    "deep-tree": (
        "import os\nd = os.open('app', os.O_RDONLY)\nfor i in range(3000):\n"
        "    os.mkdir('x', dir_fd=d)\n    n = os.open('x', os.O_RDONLY, dir_fd=d)\n    os.close(d)\n    d = n\n"
        "os.close(os.open('deep.txt', os.O_WRONLY | os.O_CREAT, dir_fd=d))\n"
    ),
    "many-files": (
        "import os\nos.mkdir('app/many')\n"
        "for i in range(5000):\n    open('app/many/f%05d.txt' % i, 'w').write('%d\\n' % i)\n"
    ),
    "huge-sparse": (  # 8 GB that cost no disk, and a 1,000 MB version of the entry file
        "import os\nfor i in range(8):\n    with open('app/s%d.bin' % i, 'wb') as f:\n        f.truncate(1000 << 20)\n"
        "src = open('app/main.py', 'rb').read()\nwith open('app/main.py', 'r+b') as f:\n    f.truncate(1000 << 20)\n"
        "open('app/main.py', 'wb').write(src)\n"
    ),
    "odd-elsewhere": (  # the same things in HOME, TMPDIR and the state folder, which are copied out too
        "import os, socket\n"
        "for base in {os.environ['HOME'], os.environ['TMPDIR'], os.environ.get('BENCH_STATE_DIR') or os.environ['HOME']}:\n"
        "    os.mkfifo(os.path.join(base, 'fifo'))\n    here = os.getcwd()\n    os.chdir(base)  # a socket's path is short\n"
        "    socket.socket(socket.AF_UNIX).bind('sock')\n    os.chdir(here)\n"
        "    open(os.path.join(base, 'new\\nline\\x1b[31m'), 'w').write('x')\n"
        "    open(os.path.join(os.fsencode(base), b'bad\\xff'), 'w').write('x')\n"
        "    d = os.open(base, os.O_RDONLY)\n    for i in range(3000):\n"
        "        os.mkdir('x', dir_fd=d)\n        n = os.open('x', os.O_RDONLY, dir_fd=d)\n        os.close(d)\n        d = n\n"
        "    os.close(d)\n"
    ),
    "deep-json": (  # records nested too deeply for a JSON parser, beside one good usage row
        "import os\ndeep = '[' * 100000 + '\\n'\nrun = os.environ['BENCH_RUN_DIR']\n"
        "open(os.environ['BENCH_USAGE'], 'w').write('{\"t\": 1, \"input\": 7, \"output\": 3}\\n' + deep + '{\"a\":' * 100000)\n"
        "for name in ('transcript.jsonl', 'agent.json'):\n    open(os.path.join(run, name), 'w').write(deep)\n"
        "open('answer.json', 'w').write(deep)\n"
    ),
}
"""What each agent leaves (a Python script run in the workspace); it edits nothing else."""


def odd_job(project: Path, case: str, iso: str) -> Job:
    (project / "agent.py").write_text(ODD[case])
    job = make_job(
        agent=AgentSpec(id=case, adapter="command", command="python3 $HOME/agent.py"),
        cell=none_cell(home_files={"agent.py": "agent.py"}),
        options=Options(isolation=iso, infra_retries=0),
        limits=Limits(timeout_s=120),
    )
    checks = (
        CheckSpec(id="compiles", kind="command", params={"run": "python3 -m py_compile app/main.py"}),
        CheckSpec(id="has-entry", kind="file-exists", params={"path": "app/main.py"}),
    )
    return job.model_copy(update={"scenario": job.scenario.model_copy(update={"checks": checks})})


def run_odd(project: Path, tmp_path: Path, case: str, iso: str) -> tuple[RunRecord, dict[str, str]]:
    """Run and grade one odd agent; assert the run is graded and diff.patch applies to the seed."""
    run_dir = tmp_path / RUN
    record = run_trial(odd_job(project, case, iso), project=project, run_dir=run_dir)
    assert record.error is None, record.traceback
    assert record.exit_code == 0, (run_dir / "agent.log").read_text()[-2000:]  # it did what it meant to
    grade_run(run_dir, project=None)
    grade = read_grade(run_dir)
    assert grade is not None and grade.status is RunStatus.GRADED, grade
    seed = tmp_path / "seed-copy"
    shutil.copytree(project / "scenarios" / "fix" / "seed", seed)
    patch = str(run_dir / "diff.patch")
    check = subprocess.run(
        ["git", "apply", "--check", "--allow-empty", patch], cwd=seed, capture_output=True, text=True
    )
    assert check.returncode == 0, check.stderr
    applied = subprocess.run(["git", "apply", "--allow-empty", patch], cwd=seed, capture_output=True)
    assert applied.returncode == 0
    json.loads((run_dir / "run.json").read_text())  # still a readable record
    return record, {c.id: c.outcome for c in grade.checks}


def remove_run(tmp_path: Path) -> None:
    """Remove the run iteratively: pytest's own clean-up of old temp folders recurses per level
    and a 3,000-deep tree left behind would crash every later pytest session's clean-up."""
    neutralise.remove_tree(tmp_path / RUN, ignore_errors=True)
