from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from checks_util import write

from compiler.contract import CheckSpec
from harness.artifacts.records import CheckOutcome
from harness.checks import CheckContext, run_check


def check(kind: str, ws: Path, ctx: CheckContext | None = None, **params: Any) -> CheckOutcome:
    return run_check(CheckSpec(id="f", kind=kind, params=params), ws, ctx or CheckContext())


def test_file_exists(ws: Path) -> None:
    write(ws, {"app/main.py": "", "tests/test_a.py": ""})
    assert check("file-exists", ws, path="app/main.py").outcome == "pass"
    assert check("file-exists", ws, path=["app/main.py", "tests/test_*.py"]).outcome == "pass"
    out = check("file-exists", ws, path=["app/main.py", "app/new.py"])
    assert out.outcome == "fail" and "missing: app/new.py" in out.message
    assert check("file-exists", ws, path="app").outcome == "pass"
    assert check("file-exists", ws, path="app/old.py", exists=False).outcome == "pass"
    gone = check("file-exists", ws, path="**/test_*.py", exists=False)
    assert gone.outcome == "fail" and "should not exist" in gone.message
    assert check("file-exists", ws, path=[]).outcome == "error"


SEED = {"app/main.py": "x = 1\n", "tests/test_main.py": "def test(): pass\n", "README.md": "hi\n"}


def seeded(tmp_path: Path, ws: Path) -> CheckContext:
    seed = tmp_path / "seed"
    write(seed, SEED)
    shutil.copytree(seed, ws, dirs_exist_ok=True)
    return CheckContext(seed=seed)


def test_unchanged_pass_and_change(tmp_path: Path, ws: Path) -> None:
    ctx = seeded(tmp_path, ws)
    assert check("unchanged", ws, ctx, paths=["tests/**", "README.md"]).outcome == "pass"
    (ws / "app" / "main.py").write_text("x = 2\n")
    assert check("unchanged", ws, ctx, paths=["tests/**"]).outcome == "pass"
    (ws / "tests" / "test_main.py").write_text("def test(): assert True\n")
    out = check("unchanged", ws, ctx, paths=["tests/**"])
    assert out.outcome == "fail" and "changed tests/test_main.py" in out.message


def test_unchanged_added_and_deleted(tmp_path: Path, ws: Path) -> None:
    ctx = seeded(tmp_path, ws)
    (ws / "tests" / "test_extra.py").write_text("")
    (ws / "README.md").unlink()
    out = check("unchanged", ws, ctx, paths=["tests/**", "README.md"])
    assert out.outcome == "fail"
    assert "deleted README.md" in out.message and "added tests/test_extra.py" in out.message


def test_unchanged_needs_a_seed(tmp_path: Path, ws: Path) -> None:
    out = check("unchanged", ws, paths=["tests/**"])
    assert out.outcome == "error" and "needs the seed" in out.message
    ctx = seeded(tmp_path, ws)
    empty = check("unchanged", ws, ctx, paths=["docs/**"])
    assert empty.outcome == "error" and "match no file of the seed" in empty.message
