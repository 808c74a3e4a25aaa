"""Spec models, one module per kind; `KINDS` maps each `kind:` value to its model."""

from __future__ import annotations

from compiler.specs.agent import AgentDoc
from compiler.specs.base import SpecModel
from compiler.specs.checks import CheckKindDoc
from compiler.specs.grading import ExpectationDoc, PricesDoc
from compiler.specs.matrix import MatrixDoc
from compiler.specs.project import ProjectDoc
from compiler.specs.scenario import ScenarioDoc

KINDS: dict[str, type[SpecModel]] = {
    "project": ProjectDoc,
    "agent": AgentDoc,
    "check-kind": CheckKindDoc,
    "matrix": MatrixDoc,
    "scenario": ScenarioDoc,
    "expectation": ExpectationDoc,
    "prices": PricesDoc,
}
"""Every spec kind by its `kind:` value."""

__all__ = [
    "KINDS",
    "AgentDoc",
    "CheckKindDoc",
    "ExpectationDoc",
    "MatrixDoc",
    "PricesDoc",
    "ProjectDoc",
    "ScenarioDoc",
    "SpecModel",
]
