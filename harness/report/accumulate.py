"""Streaming accumulators: constant memory per cell, whatever the number of runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from compiler.contract import BUDGETS
from harness.report.collect import RunFacts
from harness.report.stats import Moments, wilson
from harness.report.summary import Cost, Counts, Group, MetricStat, Rate

GroupBy = Literal["cell", "condition", "split", "family", "agent"]


def rate(k: int, n: int) -> Rate:
    """A Rate model with its Wilson interval."""
    low, high = wilson(k, n)
    return Rate(k=k, n=n, low=low, high=high)


def metric_stat(m: Moments) -> MetricStat:
    return MetricStat(n=m.n, mean=m.mean, stddev=m.stddev, min=m.low, max=m.high)


@dataclass(slots=True)
class GroupAcc:
    """Counts, rates, cost and metric moments of one group of runs."""

    runs: int = 0
    graded: int = 0
    failed_to_run: int = 0
    ungradeable: int = 0
    invalid: int = 0
    ungraded: int = 0
    budget_stops: int = 0
    passed: int = 0
    usable: int = 0
    unpriced: int = 0
    """Graded runs with usage but no cost (a model the price table lacks)."""
    tokens: Moments = field(default_factory=Moments)
    cost: Moments = field(default_factory=Moments)
    pass_moments: Moments = field(default_factory=Moments)
    metrics: dict[str, Moments] = field(default_factory=dict)

    def add(self, run: RunFacts) -> None:
        self.runs += 1
        self.budget_stops += any(limit in BUDGETS for limit in run.limits_hit)
        status = run.status
        if status != "graded":
            if status == "failed_to_run":
                self.failed_to_run += 1
            elif status == "ungradeable":
                self.ungradeable += 1
            elif status == "invalid":
                self.invalid += 1
            else:
                self.ungraded += 1
            return
        self.graded += 1
        self.passed += run.passed
        self.usable += run.usable
        self.pass_moments.add(1.0 if run.passed else 0.0)
        for name, value in run.metrics.items():
            acc = self.metrics.get(name)
            if acc is None:
                acc = self.metrics[name] = Moments()
            acc.add(value)
        tokens, cost = run.metrics.get("tokens"), run.metrics.get("cost_usd")
        if tokens is not None:
            self.tokens.add(tokens)
        if cost is not None:
            self.cost.add(cost)
        self.unpriced += run.unpriced is not None

    def merge(self, other: GroupAcc) -> None:
        """Pool another group's runs into this one (pooled rows are unions of cells)."""
        for name in (
            "runs",
            "graded",
            "failed_to_run",
            "ungradeable",
            "invalid",
            "ungraded",
            "budget_stops",
            "passed",
            "usable",
            "unpriced",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.tokens.merge(other.tokens)
        self.pass_moments.merge(other.pass_moments)
        self.cost.merge(other.cost)
        for name, m in other.metrics.items():
            mine = self.metrics.get(name)
            if mine is None:
                mine = self.metrics[name] = Moments()
            mine.merge(m)

    def counts(self) -> Counts:
        return Counts(
            runs=self.runs,
            graded=self.graded,
            failed_to_run=self.failed_to_run,
            ungradeable=self.ungradeable,
            invalid=self.invalid,
            ungraded=self.ungraded,
            budget_stops=self.budget_stops,
        )

    def cost_model(self) -> Cost:
        """Tokens and USD per run and per usable result. No USD when a run with usage went unpriced:
        a mean over the priced runs alone is one an agent could steer by naming an unpriced model."""
        peak = self.metrics.get("peak_context")
        priced = self.cost.n > 0 and not self.unpriced
        return Cost(
            tokens_per_run=self.tokens.mean if self.tokens.n else None,
            tokens_per_usable=self.tokens.total / self.usable if self.tokens.n and self.usable else None,
            cost_per_run=self.cost.mean if priced else None,
            cost_per_usable=self.cost.total / self.usable if priced and self.usable else None,
            unpriced_runs=self.unpriced,
            peak_context=metric_stat(peak) if peak is not None and peak.n else None,
        )

    def group(
        self, *, by: GroupBy, key: str, version: str | None, agent: str, condition: str, control: bool
    ) -> Group:
        return Group(
            by=by,
            key=key,
            version=version,
            agent=agent,
            condition=condition,
            control=control,
            counts=self.counts(),
            passed=rate(self.passed, self.graded),
            usable=rate(self.usable, self.graded),
            cost=self.cost_model(),
            metrics={name: metric_stat(m) for name, m in sorted(self.metrics.items()) if m.n},
            trial_variance=self.pass_moments.stddev**2 if by == "cell" and self.pass_moments.n > 1 else None,
        )
