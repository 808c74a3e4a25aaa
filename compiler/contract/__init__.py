"""The public artifact contract between compile time and run time.

`harness` and `adapters` import from `compiler` only this module: the shapes of
`generated/manifest.json` and of the job files, and the helpers that find one
trial's job by id. Everything here is a frozen pydantic model that forbids unknown
keys, so a job file written by a newer compiler is refused rather than half-read.

A job is one fully resolved trial: everything the runner needs, nothing to look up
in `specs/`. Paths inside a job are relative to the project root (the folder that
holds `generated/`), slash-separated, and never absolute, so `generated/` can be
moved with its project and compiling twice gives byte-identical files.

The models live in submodules by what they describe (`base`, `parts`, `scenario`, `job`,
`manifest`); import them from here.
"""

from __future__ import annotations

from compiler.contract.base import (
    SCHEMA_VERSION,
    Frozen,
    OmitUnset,
)
from compiler.contract.job import (
    BUDGETS,
    ISOLATIONS,
    LIMITS_OFF,
    CorruptJob,
    Job,
    JobId,
    Limits,
    Options,
    job_digest,
    job_id,
    parse_job_id,
    read_job_file,
    with_digest,
)
from compiler.contract.manifest import (
    JOBS_DIR,
    MANIFEST_FILE,
    JobFile,
    Manifest,
    MatrixEntry,
    RoundsPlan,
    ScenarioEntry,
    Session,
    Variant,
    iter_jobs,
    load_job,
    load_job_file,
    load_manifest,
)
from compiler.contract.parts import (
    AgentSpec,
    Canaries,
    Cell,
    CheckSpec,
    McpServer,
    Negative,
    Provisions,
    Step,
)
from compiler.contract.scenario import (
    SANDBOX_RESERVED,
    Environment,
    ScenarioJob,
    ScenarioLimits,
    ScenarioMount,
    within,
)

__all__ = [
    "BUDGETS",
    "ISOLATIONS",
    "JOBS_DIR",
    "LIMITS_OFF",
    "MANIFEST_FILE",
    "SANDBOX_RESERVED",
    "SCHEMA_VERSION",
    "AgentSpec",
    "Canaries",
    "Cell",
    "CheckSpec",
    "CorruptJob",
    "Environment",
    "Frozen",
    "Job",
    "JobFile",
    "JobId",
    "Limits",
    "Manifest",
    "MatrixEntry",
    "McpServer",
    "Negative",
    "OmitUnset",
    "Options",
    "Provisions",
    "RoundsPlan",
    "ScenarioEntry",
    "ScenarioJob",
    "ScenarioLimits",
    "ScenarioMount",
    "Session",
    "Step",
    "Variant",
    "iter_jobs",
    "job_digest",
    "job_id",
    "load_job",
    "load_job_file",
    "load_manifest",
    "parse_job_id",
    "read_job_file",
    "with_digest",
    "within",
]
