"""A small real project whose scripted agent is hostile: it says, runs and writes HTML and script.

Run once per test module with the real runner and grader (`assay matrix`), so the run viewer and
the results index are tested on what a trial really leaves on disk.
"""

from __future__ import annotations

from pathlib import Path

from tests.grade.project import ADD_ONE_FILES, PROJECT, compile_project
from tests.helpers import BARE_ENV, assay

HOSTILE = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
FILES = {
    "specs/project.yaml": PROJECT.replace(
        "  tool:\n    none: {}\n",
        "  tool:\n    none: {}\n    bin: { path: [../tools/bin], trace: [greet] }\n",
    ),
    "tools/bin/greet": '#!/bin/sh\necho "hello $*"\n[ "$1" = "--fail" ] && { echo "greet: no such option" >&2; exit 2; }\nexit 0\n',
    "specs/agents/scripted.yaml": "kind: agent\nid: scripted\nadapter: scripted\nargs: { script: agents/s.yaml }\n",
    "agents/s.yaml": """\
seed: 1
steps:
  - say: 'HOSTILE'
  - when: { on_path: greet }
    run: greet --fail
  - when: { on_path: greet }
    run: greet '</pre><script>window.__pwned = 3</script>'
  - write: { path: app/main.py, content: "def handler(x):\\n    return x +\\n# </pre><script>window.__pwned = 4</script>\\n" }
  - sleep: 0.6
  - write: { path: app/main.py, content: "def handler(x):\\n    return x + 1\\n" }
  - sleep: 0.6
  - say: done
""".replace("HOSTILE", HOSTILE),
    "specs/matrices/default.yaml": (
        "kind: matrix\nid: default\ndefault: true\nagents: [scripted]\ntrials: 2\n"
        "options: { isolation: none, infra_retries: 0 }\n"
    ),
    "specs/prices.yaml": "kind: prices\nversion: t-1\nmodels:\n  scripted: { input: 1.0, output: 2.0 }\n",
    **ADD_ONE_FILES,
}
BIN_RUN = "runs/default/add-one/scripted/bin/none/off/trial-01"
CONTROL_RUN = "runs/default/add-one/scripted/none/none/off/trial-01"


def make(root: Path) -> Path:
    """Write, compile and run the project (4 trials); returns its root."""
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "tools/bin/greet").chmod(0o755)
    compile_project(root)
    ran = assay("--project", root, "matrix", "default", "--runs", "runs", cwd=root, env=BARE_ENV)
    assert ran.returncode == 0, ran.stderr
    return root
