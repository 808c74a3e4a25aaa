"""The seccomp filter that refuses user namespaces under a root harness: its program, and its effect."""

from __future__ import annotations

import os
import struct

import pytest

from harness.sandbox.isolation import select
from harness.sandbox.isolation.seccomp import TABLES, program
from harness.sandbox.protections import measure
from tests.isolation.conftest import require


@pytest.mark.parametrize("machine", sorted(TABLES))
def test_the_program_checks_each_abi_and_refuses_an_unknown_one(machine: str) -> None:
    code = program(machine)
    assert code is not None and len(code) % 8 == 0 and len(code) // 8 < 4096
    ops = [struct.unpack("=HBBI", code[i : i + 8]) for i in range(0, len(code), 8)]
    arch_checks = [k for op, _, _, k in ops if op == 0x15 and k in {a.audit for a in TABLES[machine]}]
    assert arch_checks == [a.audit for a in TABLES[machine]]
    assert ops[-1] == (0x06, 0, 0, 0x00050000 | 38)  # ENOSYS for an ABI without a table


def test_an_architecture_without_a_table_has_no_filter() -> None:
    assert program("m68k") is None


@pytest.mark.isolation
def test_bwrap_under_a_root_harness_refuses_user_namespaces() -> None:
    require("bwrap")
    if os.geteuid() != 0:
        pytest.skip("the filter is for a root harness (otherwise bwrap's --disable-userns does it)")
    held = measure(select("bwrap"), neutralised=True)
    assert held.userns_blocked and held.capabilities_dropped and held.failed == ()
