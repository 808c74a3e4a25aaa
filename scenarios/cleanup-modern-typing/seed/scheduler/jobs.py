"""Maintenance jobs and their constraints."""

from dataclasses import dataclass, field
from datetime import date
from typing import Dict, FrozenSet, List, Optional, Tuple


@dataclass(frozen=True)
class Job:
    """One piece of work for the maintenance crew."""

    name: str
    hours: float
    not_on: FrozenSet[int] = field(default_factory=frozenset)
    """Weekdays (0 = Monday) the job must not be scheduled on."""
    after: Optional[str] = None
    """Name of a job that must be done on an earlier day."""


def by_name(jobs: List[Job]) -> Dict[str, Job]:
    """Index jobs by name, refusing duplicates."""
    index: Dict[str, Job] = {}
    for job in jobs:
        if job.name in index:
            raise ValueError(f"duplicate job {job.name!r}")
        index[job.name] = job
    return index


def allowed(job: Job, day: date) -> bool:
    """Whether the job may happen on that day."""
    return day.weekday() not in job.not_on


def split_hours(hours: float, capacity: float) -> Tuple[int, float]:
    """Full days a job needs at a daily capacity, and the hours left over."""
    full = int(hours // capacity)
    return full, hours - full * capacity
