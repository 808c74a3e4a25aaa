from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from compiler.contract import ISOLATIONS, iter_jobs, load_job, load_manifest, parse_job_id
from compiler.errors import SpecErrors
from compiler.pipeline import build, compile_project
from tests.helpers import assay


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_compile_emits_manifest_and_jobs(valid_project: Path, tmp_path: Path) -> None:
    result = compile_project(valid_project, generated=tmp_path / "gen")
    assert not result.up_to_date
    assert result.jobs == 18
    manifest = load_manifest(tmp_path / "gen")
    assert manifest.default_matrix == "default"
    assert manifest.factor_order == ("tool", "knowledge", "network")
    assert [s.name for s in manifest.sessions] == [
        "bench-none-none-off",
        "bench-bin-none-off",
        "bench-bin-skill-none-off",
    ]
    jobs = list(iter_jobs(tmp_path / "gen"))
    assert len(jobs) == 18 == len({j.id for j in jobs})
    assert len(list(iter_jobs(tmp_path / "gen", matrix="default"))) == 16
    smoke = [j.id for j in iter_jobs(tmp_path / "gen", matrix="smoke")]
    assert smoke == [
        "smoke/none/none/off/scripted-good/sum-answer/t01",
        "smoke/bin/none/off/scripted-good/sum-answer/t01",
    ]
    assert manifest.matrices["smoke"].seed == 7 and not manifest.matrices["smoke"].default
    for job in jobs:
        assert load_job(tmp_path / "gen", job.id) == job
        assert parse_job_id(job.id).scenario == job.scenario.id
    only = list(iter_jobs(tmp_path / "gen", agents=["scripted-weak"], trials=1))
    assert [j.id for j in only] == [
        "default/none/none/off/scripted-weak/fix-unused-import/t01",
        "default/none/none/off/scripted-weak/sum-answer/t01",
    ]


def test_resolved_fields(valid_project: Path, tmp_path: Path) -> None:
    compile_project(valid_project, generated=tmp_path)
    job = load_job(tmp_path, "default/bin+skill/none/off/scripted-good/fix-unused-import/t02")
    assert job.cell.provisions.path == ("specs/tools/bin",)
    assert job.cell.provisions.skill_dir == "specs/guides/ruff"
    assert job.limits.timeout_s == 300
    assert job.options.env_pass == ("LANG",)
    lint = job.scenario.checks[1]
    assert (lint.kind, lint.source_kind, lint.authority) == ("command", "lint", "ruff")
    assert lint.params["run"] == "ruff check --select F401 --output-format json ."
    assert lint.params["result"] == {"count": {"json_path": "$", "max": 0}}
    assert job.scenario.checks[0].params == {"run": "python -m py_compile app/main.py", "exit": 0}
    answer = load_job(tmp_path, "default/none/none/off/scripted-good/sum-answer/t01").scenario
    assert answer.split == "train" and answer.reference_note == "computed by hand"
    with pytest.raises(KeyError):
        load_job(tmp_path, "default/bin/none/off/scripted-weak/sum-answer/t01")  # excluded
    with pytest.raises(KeyError):
        load_job(tmp_path, "default/none/none/off/scripted-good/sum-answer/t03")


def test_compile_twice_is_byte_identical(valid_project: Path, tmp_path: Path) -> None:
    compile_project(valid_project, generated=tmp_path / "a")
    compile_project(valid_project, generated=tmp_path / "b")
    first = _tree(tmp_path / "a")
    assert first == _tree(tmp_path / "b")
    again = compile_project(valid_project, generated=tmp_path / "a")
    assert again.up_to_date
    forced = compile_project(valid_project, generated=tmp_path / "a", force=True)
    assert forced.written == 0 and _tree(tmp_path / "a") == first


def test_changed_spec_changes_hash_not_id(valid_project: Path, tmp_path: Path) -> None:
    proj = tmp_path / "p"
    shutil.copytree(valid_project, proj)
    compile_project(proj)
    jid = "default/none/none/off/scripted-good/fix-unused-import/t01"
    before = load_job(proj / "generated", jid).hash
    prompt = proj / "scenarios/fix-unused-import/prompt.md"
    prompt.write_text(prompt.read_text() + "Keep it short.\n")
    assert not compile_project(proj).up_to_date
    after = load_job(proj / "generated", jid)
    assert after.hash != before and after.scenario.prompt.endswith("Keep it short.\n")
    other = "default/none/none/off/scripted-good/sum-answer/t01"
    assert load_job(proj / "generated", other).id == other


def test_sanity_reaches_the_job_but_not_its_hash(valid_project: Path, tmp_path: Path) -> None:
    # `sanity` says how the report reads an agent's runs, not what runs: marking an agent later
    # must not make its finished runs look stale.
    proj = tmp_path / "p"
    shutil.copytree(valid_project, proj)
    compile_project(proj)
    jid = "default/none/none/off/scripted-weak/fix-unused-import/t01"
    before = load_job(proj / "generated", jid)
    assert before.agent.sanity is None
    spec = proj / "specs/agents/scripted-weak.yaml"
    spec.write_text(spec.read_text() + "sanity: fail\n")
    compile_project(proj)
    after = load_job(proj / "generated", jid)
    assert after.agent.sanity == "fail" and after.hash == before.hash
    assert load_manifest(proj / "generated").agents["scripted-weak"].sanity == "fail"


def test_provided_files_are_inputs(valid_project: Path, tmp_path: Path) -> None:
    proj = tmp_path / "p"
    shutil.copytree(valid_project, proj)
    compile_project(proj)
    assert "specs/tools/bin/ruff" in load_manifest(proj / "generated").inputs
    bin_id = "default/bin/none/off/scripted-good/fix-unused-import/t01"
    none_id = "default/none/none/off/scripted-good/fix-unused-import/t01"
    before = {j: load_job(proj / "generated", j).hash for j in (bin_id, none_id)}
    (proj / "specs/tools/bin/ruff").write_text("#!/bin/sh\nexec true\n")
    assert not compile_project(proj).up_to_date
    after = {j: load_job(proj / "generated", j).hash for j in (bin_id, none_id)}
    assert after[bin_id] != before[bin_id] and after[none_id] == before[none_id]


def test_agent_argument_files_are_inputs(valid_project: Path, tmp_path: Path) -> None:
    proj = tmp_path / "p"
    shutil.copytree(valid_project, proj)
    compile_project(proj)
    good = "default/none/none/off/scripted-good/sum-answer/t01"
    weak = "default/none/none/off/scripted-weak/sum-answer/t01"
    before = {j: load_job(proj / "generated", j).hash for j in (good, weak)}
    (proj / "agents/weak.yaml").write_text("steps: [{run: 'true'}]\n")
    compile_project(proj)
    after = {j: load_job(proj / "generated", j).hash for j in (good, weak)}
    assert after[weak] != before[weak] and after[good] == before[good]


def test_version_comparison_jobs(valid_project: Path, tmp_path: Path) -> None:
    proj = tmp_path / "p"
    shutil.copytree(valid_project, proj)
    (proj / "specs/matrices/compare.yaml").write_text(
        "kind: matrix\nid: compare\nagents: [scripted-good]\nfactors: { tool: [none, bin], knowledge: [none], network: [off] }\n"
        "scenarios: [sum-answer]\nversions:\n  baseline: { label: v1, path: ../../builds/v1/bin }\n  candidate: { label: v2 }\n"
    )
    compile_project(proj)
    gen = proj / "generated"
    manifest = load_manifest(gen)
    assert sorted(k for k in manifest.matrices if k.startswith("compare")) == ["compare@v1", "compare@v2"]
    assert (
        manifest.matrices["compare@v1"].matrix == "compare"
        and manifest.matrices["compare@v1"].version == "v1"
    )
    ids = [j.id for j in iter_jobs(gen, matrix="compare")]
    assert ids == [
        "compare@v1/none/none/off/scripted-good/sum-answer/t01",
        "compare@v1/bin/none/off/scripted-good/sum-answer/t01",
        "compare@v2/none/none/off/scripted-good/sum-answer/t01",
        "compare@v2/bin/none/off/scripted-good/sum-answer/t01",
    ]
    v1 = load_job(gen, "compare@v1/bin/none/off/scripted-good/sum-answer/t01")
    v2 = load_job(gen, "compare@v2/bin/none/off/scripted-good/sum-answer/t01")
    assert (v1.matrix, v1.version, v2.version) == ("compare", "v1", "v2")
    assert v1.cell.provisions.path == ("builds/v1/bin", "specs/tools/bin") and v2.cell.provisions.path == (
        "specs/tools/bin",
    )
    assert v1.hash != v2.hash
    assert [j.id for j in iter_jobs(gen, matrix="compare@v2", cells=["none/none/off"])] == [
        "compare@v2/none/none/off/scripted-good/sum-answer/t01"
    ]


def test_rounds_and_budgets_reach_the_manifest_and_jobs_and_leave_hashes_alone(
    valid_project: Path, tmp_path: Path
) -> None:
    proj = tmp_path / "p"
    shutil.copytree(valid_project, proj)
    compile_project(proj)
    jid = "smoke/none/none/off/scripted-good/sum-answer/t01"
    before = load_job(proj / "generated", jid)
    assert load_manifest(proj / "generated").matrices["smoke"].rounds is None
    assert "rounds" not in (proj / "generated/manifest.json").read_text()
    spec = proj / "specs/matrices/smoke.yaml"
    spec.write_text(
        spec.read_text()
        + "until: decided\nmin_uplift: 0.1\nbudget: { tokens: 50000 }\nlimits: { total_tokens: 9000, cost_usd: 0.5 }\n"
    )
    compile_project(proj)
    entry = load_manifest(proj / "generated").matrices["smoke"]
    assert entry.rounds is not None
    assert (entry.rounds.until, entry.rounds.min_uplift, entry.rounds.budget_tokens) == (
        "decided",
        0.1,
        50000,
    )
    after = load_job(proj / "generated", jid)
    assert after.limits.budgets() == {"total_tokens": 9000, "cost_usd": 0.5}
    assert after.hash != before.hash  # budgets change what runs; the rounds plan does not
    spec.write_text(spec.read_text().replace("limits: { total_tokens: 9000, cost_usd: 0.5 }\n", ""))
    compile_project(proj)
    assert load_job(proj / "generated", jid).hash == before.hash


def test_generated_in_the_way_is_a_spec_error_naming_it(valid_project: Path, tmp_path: Path) -> None:
    proj = tmp_path / "p"
    shutil.copytree(valid_project, proj)
    (proj / "generated").write_text("not a folder\n")
    with pytest.raises(SpecErrors) as info:
        compile_project(proj)
    [err] = info.value.errors
    assert (err.file, err.code) == ("generated", "E290")
    assert "a file stands where the compiler needs a folder" in err.message
    (proj / "generated").unlink()
    (proj / "generated" / "jobs").mkdir(parents=True)
    (proj / "generated" / "jobs" / "default").write_text("")
    with pytest.raises(SpecErrors) as info:
        compile_project(proj)
    assert [(e.file, e.code) for e in info.value.errors] == [("generated/jobs/default", "E290")]
    cli = assay("--project", proj, "compile")
    assert cli.returncode == 2 and "Traceback" not in cli.stderr
    assert cli.stderr.startswith("generated/jobs/default:1:1: error[E290]: (document): cannot write")


def test_an_output_deleted_or_edited_since_is_written_again(valid_project: Path, tmp_path: Path) -> None:
    gen = tmp_path / "gen"
    compile_project(valid_project, generated=gen)
    job = gen / "jobs" / "default" / "sum-answer.json"
    first = job.read_bytes()
    assert compile_project(valid_project, generated=gen).up_to_date
    job.unlink()
    again = compile_project(valid_project, generated=gen)
    assert not again.up_to_date and job.read_bytes() == first
    edited = first.replace(b'"trials":2', b'"trials":9')
    assert edited != first
    job.write_bytes(edited)
    assert not compile_project(valid_project, generated=gen).up_to_date and job.read_bytes() == first
    (gen / "manifest.json").write_text((gen / "manifest.json").read_text() + " ")
    assert not compile_project(valid_project, generated=gen).up_to_date
    assert compile_project(valid_project, generated=gen).up_to_date


def test_x_keys_of_an_exclude_entry_are_no_matrix_keys(valid_project: Path, tmp_path: Path) -> None:
    """An `x-*` key annotates an entry: an exclude entry with one still excludes what it names."""
    proj = tmp_path / "p"
    shutil.copytree(valid_project, proj)
    matrix = proj / "specs/matrices/default.yaml"
    before = build(proj).matrices["default"].jobs
    text = matrix.read_text()
    matrix.write_text(
        text.replace(
            "{ tool: bin, agent: scripted-weak }", "{ tool: bin, agent: scripted-weak, x-why: slow }"
        )
    )
    assert build(proj).matrices["default"].jobs == before
    matrix.write_text(text.replace("agent: scripted-good }", "agent: scripted-good, x-why: [a, note] }"))
    assert build(proj).matrices["default"].jobs == before


def test_the_isolation_names_are_the_harness_registrys() -> None:
    from harness.sandbox.isolation import ISOLATIONS as PLUGINS

    assert sorted(ISOLATIONS) == PLUGINS.names()


def test_a_matrix_no_scenario_matches_yet_compiles_and_says_so(valid_project: Path, tmp_path: Path) -> None:
    """A tag no scenario carries yet (a project being built) is no error; compile names the matrix
    that has nothing to run, and running it selects nothing (exit 3)."""
    proj = tmp_path / "p"
    shutil.copytree(valid_project, proj)
    (proj / "specs/matrices/later.yaml").write_text(
        "kind: matrix\nid: later\nagents: [scripted-good]\nscenarios: { tags: [not-yet] }\n"
    )
    cli = assay("--project", proj, "compile")
    assert cli.returncode == 0, cli.stderr
    assert "  later: 0 trials: no scenario matches its `scenarios:` (yet)" in cli.stdout.splitlines()
    ran = assay("--project", proj, "matrix", "later", "--runs", tmp_path / "runs")
    assert ran.returncode == 3, ran.stderr
