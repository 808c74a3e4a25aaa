"""A greedy weekly plan: earliest allowed day with room, dependencies first."""

from collections import defaultdict
from datetime import date, timedelta

from scheduler.jobs import Job, allowed, by_name

Plan = dict[date, list[Job]]


def plan_week(jobs: list[Job], *, start: date, max_per_day: int | None = None) -> Plan:
    """Place every job on one of the seven days from `start`.

    Jobs are placed in the given order, each on the earliest day that allows it, is after
    the day of the job it depends on, and has fewer than `max_per_day` jobs.
    """
    index = by_name(jobs)
    placed: dict[str, date] = {}
    plan: defaultdict[date, list[Job]] = {}  # type: ignore[assignment]
    for job in jobs:
        earliest = start
        if job.after is not None:
            if job.after not in placed:
                raise ValueError(f"{job.name!r} depends on {job.after!r}, which is not planned before it")
            earliest = placed[job.after] + timedelta(days=1)
        day = _first_day(job, earliest, start, plan, max_per_day)
        if day is None:
            raise ValueError(f"no room for {job.name!r} this week")
        plan[day].append(job)
        placed[job.name] = day
    assert set(placed) == set(index)
    return dict(sorted(plan.items()))


def _first_day(
    job: Job, earliest: date, start: date, plan: defaultdict[date, list[Job]], limit: int | None
) -> date | None:
    day = earliest
    while day < start + timedelta(days=7):
        if allowed(job, day) and (limit is None or len(plan[day]) < limit):
            return day
        day += timedelta(days=1)
    return None


def total_hours(plan: Plan, day: date | str) -> float:
    """Hours planned on a day (a date or an ISO date string)."""
    when = date.fromisoformat(day) if isinstance(day, str) else day
    return sum(job.hours for job in plan.get(when, []))
