"""Build run directories by hand, laid out as docs/run-directory.md says (and the runner writes)."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from compiler.contract import AgentSpec, Cell, CheckSpec, Job, Limits, Options, Provisions, ScenarioJob
from harness.artifacts.records import RunRecord
from harness.artifacts.store import write_record
from tests.helpers import make_job

T0 = 1_700_000_000.0
VALID_PY = "def handler(x):\n    return x + 1\n"
BROKEN_PY = "def handler(x:\n    return x +\n"


def command(cid: str, run: str, **extra: Any) -> CheckSpec:
    """A command check."""
    params: dict[str, Any] = {"run": run}
    if "result" in extra:
        params["result"] = extra.pop("result")
    authority = extra.pop("authority", None)
    return CheckSpec(
        id=cid, kind="command", layer=extra.pop("layer", "agent"), authority=authority, params=params, **extra
    )


def check(cid: str, kind: str, **params: Any) -> CheckSpec:
    """A check of any kind."""
    return CheckSpec(id=cid, kind=kind, params=params)


def make_project(root: Path, *, seed: Mapping[str, str], grader: Mapping[str, str] | None = None) -> Path:
    """A project with one scenario folder `demo`: seed/ and optionally grader/."""
    scen = root / "scenarios" / "demo"
    for rel, text in seed.items():
        (scen / "seed" / rel).parent.mkdir(parents=True, exist_ok=True)
        (scen / "seed" / rel).write_text(text)
    for rel, text in (grader or {}).items():
        (scen / "grader" / rel).parent.mkdir(parents=True, exist_ok=True)
        (scen / "grader" / rel).write_text(text)
    (root / "specs").mkdir(parents=True, exist_ok=True)
    return root


COMPILES = command("compiles", "python -m py_compile app/main.py", authority="python")
"""The check most section tests grade by: app/main.py compiles (authority `python`)."""


def handler_project(tmp_path: Path, prices: str | None = None) -> Path:
    """A project whose seed app/main.py holds `handler`, with `prices` as specs/prices.yaml if given."""
    project = make_project(tmp_path / "proj", seed={"app/main.py": "def handler(x):\n    return x\n"})
    if prices:
        (project / "specs" / "prices.yaml").write_text(prices)
    return project


def scenario(checks: Sequence[CheckSpec], **fields: Any) -> ScenarioJob:
    """The demo scenario with the given checks."""
    base: dict[str, Any] = {
        "id": "demo",
        "root": "scenarios/demo",
        "family": "demo",
        "seed": "scenarios/demo/seed",
        "prompt": "Make handler return x + 1.",
        "entry": ("app/main.py",),
        "writable": ("app/**",),
        "checks": tuple(checks),
    }
    base.update(fields)
    return ScenarioJob(**base)


def demo_job(
    scen: ScenarioJob,
    *,
    trial: int = 1,
    tool: str = "bin",
    skill: str | None = None,
    model: str | None = None,
    path: tuple[str, ...] = (),
) -> Job:
    """A job of the demo scenario: the scripted agent in `<tool>/none/off` of matrix m."""
    return make_job(
        scen,
        matrix="m",
        trial=trial,
        cell=Cell(
            name=f"{tool}/none/off",
            levels={"tool": tool, "knowledge": "none", "network": "off"},
            provisions=Provisions(path=path, trace=("mytool",), skill_dir=skill),
        ),
        agent=AgentSpec(id="scripted", adapter="scripted", model=model),
        hash="h" * 16,
        limits=Limits(),
        options=Options(),
    )


def write_jsonl(path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def call(t: float, *argv: str, exit: int = 0, out: int = 40, err: int = 0) -> dict[str, Any]:
    """A trace row as the runner's shim writes it."""
    return {
        "t": T0 + t,
        "tool": argv[0],
        "argv": list(argv),
        "exit": exit,
        "duration_s": 0.01,
        "stdout_bytes": out - err,
        "stderr_bytes": err,
        "output_bytes": out,
        "cwd": "/ws",
    }


def make_run(
    run_dir: Path,
    job: Job,
    *,
    workspace: Mapping[str, str],
    trace: Sequence[Mapping[str, Any]] | None = None,
    snapshots: Sequence[tuple[float, str, str | None]] = (),
    usage: Sequence[Mapping[str, Any]] | None = None,
    transcript: Sequence[Mapping[str, Any]] | None = None,
    context: Sequence[str] | None = None,
    events: Sequence[Mapping[str, Any]] | None = None,
    **record: Any,
) -> Path:
    """A finished run directory: job.json, workspace/, artifacts, run.json last."""
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "job.json").write_text(job.model_dump_json(indent=2))
    for rel, text in workspace.items():
        (run_dir / "workspace" / rel).parent.mkdir(parents=True, exist_ok=True)
        (run_dir / "workspace" / rel).write_text(text)
    (run_dir / "workspace").mkdir(exist_ok=True)
    (run_dir / "state").mkdir(exist_ok=True)
    if trace is not None:
        write_jsonl(run_dir / "trace.jsonl", trace)
    if snapshots:
        rows = []
        for n, (t, rel, text) in enumerate(snapshots, 1):
            row: dict[str, Any] = {"t": T0 + t, "index": n, "file": rel}
            if text is None:
                row["deleted"] = True
            else:
                name = f"{n:03d}-{rel.replace('/', '__')}"
                (run_dir / "snapshots").mkdir(exist_ok=True)
                (run_dir / "snapshots" / name).write_text(text)
                row["snapshot"] = name
            rows.append(row)
        write_jsonl(run_dir / "snapshots" / "index.jsonl", rows)
    if usage is not None:
        write_jsonl(run_dir / "usage.jsonl", [{**u, "t": T0 + u["t"]} for u in usage])
    if transcript is not None:
        write_jsonl(run_dir / "transcript.jsonl", transcript)
    if context is not None:
        (run_dir / "context.json").write_text(json.dumps({"loaded": list(context)}))
    if events is not None:
        write_jsonl(run_dir / "state" / "events.jsonl", events)
    fields: dict[str, Any] = {
        "job_id": job.id,
        "job_hash": job.hash,
        "matrix": job.matrix,
        "scenario": job.scenario.id,
        "cell": job.cell.name,
        "levels": job.cell.levels,
        "agent": job.agent.id,
        "trial": job.trial,
        "started_at": T0,
        "ended_at": T0 + 60,
        "exit_code": 0,
        "model": job.agent.model,
    }
    fields.update(record)
    write_record(run_dir / "run.json", RunRecord(**fields))
    return run_dir


def strip_times(grade: Mapping[str, Any]) -> dict[str, Any]:
    """A grade.json without timings (graded_at, check durations)."""
    out = dict(grade)
    out.pop("graded_at", None)
    out["checks"] = [{k: v for k, v in c.items() if k != "duration_s"} for c in out.get("checks", [])]
    return out


def now() -> float:
    return time.time()
