"""A small real project (specs + one scenario with hidden grader files), compiled with `assay compile`."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import BARE_ENV, assay

ROOT = Path(__file__).resolve().parents[2]

PROJECT = """\
kind: project
spec_version: 1
name: grade-demo
languages: [python]
authorities:
  python: { description: the interpreter's own compiler }
factors:
  tool:
    none: {}
  knowledge:
    none: {}
  network:
    off: { network: false }
control: none/none/off
"""
AGENT = """\
kind: agent
id: marker
adapter: command
command: "sh {agent}"
"""
# A real agent process run by the runner: it notes every start in a marker file outside the
# run tree, then writes a different answer per trial (right, right-after-the-change, broken).
AGENT_SCRIPT = """\
echo "started trial $BENCH_TRIAL" >> {marker}
case "$BENCH_TRIAL" in
  1) printf 'def handler(x):\\n    return x + 1\\n' > app/main.py ;;
  2) printf 'def handler(x):\\n    return x + 2\\n' > app/main.py ;;
  *) printf 'def handler(x):\\n    return x +\\n' > app/main.py ;;
esac
"""
MATRIX = """\
kind: matrix
id: default
default: true
agents: [marker]
trials: {trials}
options: {{ isolation: none, infra_retries: 0 }}
"""
SCENARIO = """\
kind: scenario
id: add-one
family: arith
language: python
split: test
entry: app/main.py
writable: ["app/**"]
prompt: prompt.md
checks:
  - {{ id: compiles, kind: command, authority: python, run: "python -m py_compile app/main.py" }}
  - {{ id: hidden-tests, kind: command, run: "python hidden_test.py {expected}" }}
  - {{ id: keeps-api, kind: contains, file: app/main.py, text: ["def handler("] }}
negatives:
  drops-handler: {{ fails: [keeps-api, hidden-tests] }}
"""
HIDDEN = """\
import sys
sys.path.insert(0, "app")
from main import handler
want = int(sys.argv[1])
got = handler(1)
assert got == want, f"handler(1) returned {got}, expected {want}"
"""


ADD_ONE_FILES = {
    "scenarios/add-one/scenario.yaml": SCENARIO.format(expected=2),
    "scenarios/add-one/prompt.md": "Make handler add one to its argument.\n",
    "scenarios/add-one/seed/app/main.py": "def handler(x):\n    return x\n",
    "scenarios/add-one/reference/app/main.py": "def handler(x):\n    return x + 1\n",
    "scenarios/add-one/negatives/drops-handler/app/main.py": "def other(x):\n    return x + 1\n",
    "scenarios/add-one/grader/hidden_test.py": HIDDEN,
}
"""The add-one scenario as a project's files (expected 2), for projects written file by file."""


def write_project(root: Path, *, marker: Path, expected: int = 2, trials: int = 3) -> Path:
    """Write the project files and compile them."""
    files = {
        "specs/project.yaml": PROJECT,
        "specs/agents/marker.yaml": AGENT.format(agent=root.resolve() / "agent.sh"),
        "agent.sh": AGENT_SCRIPT.format(marker=marker),
        "specs/matrices/default.yaml": MATRIX.format(trials=trials),
        "scenarios/add-one/scenario.yaml": SCENARIO.format(expected=expected),
        "scenarios/add-one/prompt.md": "Make handler add one to its argument.\n",
        "scenarios/add-one/seed/app/main.py": "def handler(x):\n    return x\n",
        "scenarios/add-one/reference/app/main.py": "def handler(x):\n    return x + 1\n",
        "scenarios/add-one/negatives/drops-handler/app/main.py": "def other(x):\n    return x + 1\n",
        "scenarios/add-one/grader/hidden_test.py": HIDDEN,
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    compile_project(root)
    return root


def compile_project(root: Path) -> None:
    done = assay("--project", root, "compile", "--force", cwd=root, env=BARE_ENV)
    assert done.returncode == 0, done.stderr + done.stdout
