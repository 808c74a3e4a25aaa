"""What a stopped batch says it did (`harness.batch.ran`): the trials that ran to their end, never
the ones dropped or stopped (a full disk stops a matrix after a handful of its 80 trials)."""

from __future__ import annotations

from harness.batch import ran, summary
from harness.batch.executor import TrialOutcome


def _outcomes(*statuses: str) -> list[TrialOutcome]:
    return [TrialOutcome(f"m/c/a/s/t{i:02d}", f"/runs/{i}", s, 0.0) for i, s in enumerate(statuses, 1)]


def test_only_trials_that_ran_to_their_end_are_counted() -> None:
    outcomes = _outcomes(
        "passed", "failed", "failed", "error", "invalid", "io-error", "interrupted", *["skipped"] * 71
    )
    assert ran(outcomes) == 5
    assert sum(summary(outcomes).values()) == 78  # the summary line still counts every trial


def test_a_batch_stopped_before_any_trial_ran_says_none() -> None:
    assert ran(_outcomes("io-error", "skipped", "skipped")) == 0
