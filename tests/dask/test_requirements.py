"""agent.requires: parsed as documented, checked against this machine's real executables."""

from __future__ import annotations

import pytest

from harness.batch.executor.requirements import (
    Executable,
    RequirementError,
    missing,
    parse,
    parse_resources,
)


def test_entries_split_into_executables_and_resources() -> None:
    parsed = parse(["claude", "codex>=0.40.1", "resource:gpu", "resource:licence=2", "sh == 5"])
    assert parsed.executables == (
        Executable("claude"),
        Executable("codex", ">=", (0, 40, 1)),
        Executable("sh", "==", (5,)),
    )
    assert parsed.resources == (("gpu", 1.0), ("licence", 2.0))
    assert str(parsed.executables[1]) == "codex>=0.40.1"


@pytest.mark.parametrize("entry", ["", "claude >= x", "resource:", "a b", "python>=3.x"])
def test_malformed_entries_are_refused(entry: str) -> None:
    with pytest.raises(RequirementError, match="is not NAME"):
        parse([entry])


def test_missing_names_what_this_machine_lacks() -> None:
    assert missing(parse(["python3", "python3>=3", "python3<99"])) == []
    problems = missing(parse(["assay-no-such-cli", "python3>=99", "python3<3"]))
    assert problems[0] == "assay-no-such-cli: not found on PATH"
    assert "does not satisfy python3>=99" in problems[1]
    assert "does not satisfy python3<3" in problems[2]
    assert missing(parse(["sh"]), path="/nonexistent") == ["sh: not found on PATH"]


def test_cli_resources() -> None:
    assert parse_resources("GPU=1, mem=4e9 licence") == (("GPU", 1.0), ("licence", 1.0), ("mem", 4e9))
    assert parse_resources("") == ()
    for bad in ("GPU=0", "GPU=x", "=2"):
        with pytest.raises(RequirementError):
            parse_resources(bad)
