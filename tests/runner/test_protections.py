"""Sandbox protections: measured, recorded in run.json, and said on stderr when one does not hold."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from compiler.contract import Options
from harness.commands._batch import _warn_unprotected
from harness.sandbox.isolation import select
from harness.sandbox.isolation.toolchain import files_only
from harness.sandbox.protections import measure
from harness.trial import run_trial
from tests.helpers import make_job


def test_without_a_sandbox_every_protection_is_reported_as_missing() -> None:
    held = measure(select("none"), neutralised=True)
    assert held.setuid_stripped and not held.nosuid_nodev and not held.capabilities_dropped
    if os.geteuid() == 0:
        assert held.sandbox_uid == 0 and not held.uid_unprivileged
        assert any("host root" in why for why in held.failed)
    assert not measure(select("none")).setuid_stripped  # a caller that did not neutralise says so


def test_the_cli_says_each_missing_protection_on_stderr_before_any_trial(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _warn_unprotected([make_job(options=Options(isolation="none"))])
    err = capsys.readouterr().err
    assert (
        "assay: WARNING: isolation none: the sandbox's writable folders are not mounted nosuid,nodev" in err
    )


def test_run_json_records_the_protections_and_what_each_tree_held(project: Path, tmp_path: Path) -> None:
    record = run_trial(make_job(options=Options(isolation="none")), project=project, run_dir=tmp_path / "run")
    assert record.protections is not None and record.protections.isolation == "none"
    assert record.protections.failed and record.protections.setuid_stripped
    assert {"workspace", "home", "tmp", "state", "outbox"} <= set(record.sandbox_trees)
    assert record.limits_applied["pids"].startswith("1024 ")
    assert record.limits_applied["timeout"].endswith("(runner)")


def test_the_sandbox_etc_looks_users_and_groups_up_in_its_files_alone() -> None:
    host = "# comment\npasswd:         files systemd\ngroup: compat sss\n#shadow: files\nhosts: files dns\n"
    got = files_only(host).splitlines()
    assert got == ["# comment", "passwd: files", "group: files", "#shadow: files", "hosts: files dns"]
