from datetime import date

import pytest

from scheduler.jobs import Job, split_hours
from scheduler.plan import plan_week, total_hours

MONDAY = date(2026, 3, 2)


def test_jobs_go_on_the_earliest_allowed_day() -> None:
    jobs = [Job("boiler", 3), Job("roof", 5, not_on=frozenset({0, 1})), Job("gutter", 1, after="roof")]
    plan = plan_week(jobs, start=MONDAY)
    assert {d.isoformat(): [j.name for j in js] for d, js in plan.items()} == {
        "2026-03-02": ["boiler"],
        "2026-03-04": ["roof"],
        "2026-03-05": ["gutter"],
    }
    assert total_hours(plan, "2026-03-04") == 5
    assert total_hours(plan, date(2026, 3, 3)) == 0


def test_dependencies_must_come_first() -> None:
    with pytest.raises(ValueError, match="not planned before it"):
        plan_week([Job("gutter", 1, after="roof"), Job("roof", 5)], start=MONDAY)


def test_split_hours() -> None:
    assert split_hours(16, 8)[0] == 2
