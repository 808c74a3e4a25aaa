"""A scenario's sandbox fields: workdir, mounts, environment, env, limits, tags (compile side)."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.emit import job_files
from compiler.errors import SpecErrors
from compiler.load import inputs_of
from compiler.pipeline import plan_of

BASE = {
    "specs/project.yaml": b"kind: project\nspec_version: 1\nname: mem\nfactors:\n  tool: { none: {} }\ncontrol: none\n",
    "specs/agent.yaml": b"kind: agent\nid: a\nadapter: noop\n",
    "specs/m.yaml": b"kind: matrix\nid: m\nagents: [a]\nlimits: { timeout_s: 600, memory_mb: 4096 }\n",
    "scenarios/s/prompt.md": b"Write out.txt.\n",
    "scenarios/s/seed/.gitkeep": b"",
    "scenarios/s/reference/out.txt": b"x\n",
    "scenarios/s/data/in.csv": b"a,b\n",
    "scenarios/s/tests/test_out.py": b"def test_x():\n    pass\n",
}

SCENARIO = b"""\
kind: scenario
id: s
tags: [imported]
workdir: /app
mounts:
  - { path: /data, from: data, writable: true }
  - { path: /tests, from: tests, hidden: true }
environment: { python: "3.12", pip: [pytest==8.4.1], apt: [jq] }
env: { TEST_DIR: /tests }
limits: { timeout_s: 900, cpus: 1, memory_mb: 2048 }
checks: [{ id: tests, kind: pytest, tests: [/tests/test_out.py], cwd: /app }]
"""


def _plan(scenario: bytes, **extra: bytes) -> object:
    return plan_of(inputs_of(Path("/nonexistent"), {**BASE, "scenarios/s/scenario.yaml": scenario, **extra}))


def _errors(scenario: bytes) -> list[str]:
    with pytest.raises(SpecErrors) as info:
        _plan(scenario)
    return [e.text().splitlines()[0] for e in info.value.errors]


def test_fields_reach_the_job_and_limits_stay_within_the_matrix() -> None:
    plan = _plan(SCENARIO)
    job = plan.validated.scenarios["s"].job  # type: ignore[attr-defined]
    assert job.workdir == "/app" and job.tags == ("imported",)
    assert [(m.path, m.source, m.writable, m.hidden) for m in job.mounts] == [
        ("/data", "scenarios/s/data", True, False),
        ("/tests", "scenarios/s/tests", False, True),
    ]
    assert job.environment.model_dump() == {"python": "3.12", "pip": ("pytest==8.4.1",), "apt": ("jq",)}
    assert job.env == {"TEST_DIR": "/tests"}
    (jf,) = job_files(plan).values()  # type: ignore[arg-type]
    assert (jf.limits.timeout_s, jf.limits.memory_mb, jf.limits.cpus) == (600, 2048, 1)


def test_sandbox_paths_are_checked() -> None:
    bad = SCENARIO.replace(b"workdir: /app", b"workdir: app/").replace(b"path: /data", b"path: /usr/data")
    bad = bad.replace(b"path: /tests, from: tests", b"path: /tests, from: nothing")
    bad = bad.replace(b"tests: [/tests/test_out.py]", b"tests: [/elsewhere/test_out.py]")
    assert _errors(bad) == [
        "scenarios/s/scenario.yaml:4:10: error[E215]: workdir: sandbox path 'app/' must be absolute and "
        "normalised (like /app), and not /",
        "scenarios/s/scenario.yaml:6:13: error[E215]: mounts[0].path: sandbox path '/usr/data' is inside /usr, "
        "which the sandbox's toolchain owns",
        "scenarios/s/scenario.yaml:7:27: error[E238]: mounts[1].from: mount folder 'scenarios/s/nothing/' is "
        "missing or empty",
        "scenarios/s/scenario.yaml:11:45: error[E215]: checks[0].tests[0]: '/elsewhere/test_out.py' is not "
        "inside the workdir or a mount of this scenario",
        # The workdir was mistyped, so the check's cwd is outside what the scenario provides.
        "scenarios/s/scenario.yaml:11:75: error[E215]: checks[0].cwd: '/app' is not inside the workdir or a "
        "mount of this scenario",
    ]


def test_a_mount_may_not_overlap_the_workdir() -> None:
    assert _errors(SCENARIO.replace(b"path: /data", b"path: /app/data")) == [
        "scenarios/s/scenario.yaml:6:13: error[E216]: mounts[0].path: mount '/app/data' overlaps '/app' (the workdir)"
    ]


def test_matrices_select_by_tag() -> None:
    plan = _plan(
        SCENARIO,
        **{
            "specs/m.yaml": b"kind: matrix\nid: m\nagents: [a]\nscenarios: { tags: [example] }\ndefault: true\n",
            "specs/n.yaml": b"kind: matrix\nid: n\nagents: [a]\nscenarios: { tags: imported }\n",
        },
    )
    assert {k: m.scenarios for k, m in plan.matrices.items()} == {"m": (), "n": ("s",)}  # type: ignore[attr-defined]


def test_a_writable_mount_may_name_its_reference() -> None:
    with_ref = SCENARIO.replace(b"writable: true }", b"writable: true, reference: data-ref }")
    plan = _plan(with_ref, **{"scenarios/s/data-ref/in.csv": b"a,b\n1,2\n"})
    job = plan.validated.scenarios["s"].job  # type: ignore[attr-defined]
    assert [(m.path, m.reference) for m in job.mounts] == [
        ("/data", "scenarios/s/data-ref"),
        ("/tests", None),
    ]
    assert _errors(with_ref) == [
        "scenarios/s/scenario.yaml:6:59: error[E238]: mounts[0].reference: mount reference folder"
        " 'scenarios/s/data-ref/' is missing or empty"
    ]
    read_only = SCENARIO.replace(b"hidden: true }", b"reference: data }")
    assert _errors(read_only) == [
        "scenarios/s/scenario.yaml:7:45: error[E100]: mounts[1].reference: only a writable mount has a"
        " reference: the agent cannot change a read-only one"
    ]
