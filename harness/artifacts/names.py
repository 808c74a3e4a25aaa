"""Every name inside a run directory, written once: the layout of `runs/…/trial-NN/`.

docs/run-directory.md is the prose of this module. Writers (runner, shim, gateway) and
readers (grader, report, executors) take names from here, so a layout change is one edit
and a name that only the harness writes can be refused when the agent's side offers it.
"""

from __future__ import annotations

# Records, written by the harness.
RUN_FILE = "run.json"
"""The runner's manifest, written last and atomically: its presence means the trial is over."""
GRADE_FILE = "grade.json"
"""The grader's verdict, rewritten by a regrade."""
JOB_FILE = "job.json"
"""The job the run was started from, written first (what a regrade elsewhere needs)."""
VERSIONS_FILE = "versions.json"
"""At a runs root of a version comparison: which label is which build."""
INDEX_FILE = ".assay-index.sqlite"
"""At a tree's root: the results index, one row per run (`harness.artifacts.index`)."""
VIEW_FILE = "view.html"
"""The run's own page (prompt, transcript, trace, snapshots, diff, checks), written after grading."""
ROUNDS_FILE = "rounds.json"
"""At a matrix's runs root, when it ran in rounds (`--until decided`, a budget): verdicts, stops, spend."""

# At a runs root, written by the runner that holds the tree.
LOCK_FILE = ".assay.lock"
"""One writer per run tree: the holder's pid, host and start time (an flock on it is the lock)."""
SCRATCH_DIR = ".scratch"
"""The holder's scratch space (grading copies, check folders); emptied when a runner takes the tree."""

# Artifacts of the run.
DIFF_FILE = "diff.patch"
AGENT_LOG = "agent.log"
AGENT_INFO = "agent.json"
"""Written by a real-agent adapter: which agent, version and model ran."""
SETUP_LOG = "setup.log"
GATEWAY_LOG = "gateway.jsonl"

TRACE_FILE = "trace.jsonl"
"""Tool use, written by the harness from the collector's rows (harness.trial.tracing), never by the agent."""

# Written by the agent's side (adapter): untrusted input.
USAGE_FILE = "usage.jsonl"
TRANSCRIPT_FILE = "transcript.jsonl"
CONTEXT_FILE = "context.json"
EVENTS_FILE = "events.jsonl"
"""A treatment's event log, inside the state folder."""
ANSWER_FILE = "answer.json"
"""The agent's answer, inside the workspace."""

# Folders of a run directory.
WORKSPACE_DIR = "workspace"
SNAPSHOTS_DIR = "snapshots"
SNAPSHOT_INDEX = "index.jsonl"
"""Inside snapshots/: one row per stored copy."""
STATE_DIR = "state"
STEPS_DIR = "steps"
STEP_PREFIX = "step-"
"""Inside steps/: `step-NN`, one folder per earlier session."""
RETRIES_DIR = "retries"
HOME_DIR = "home"
TMP_DIR = "tmp"
SKILL_DIR = "skill"
META_DIR = ".assay"
"""The harness's own scratch inside a run directory (shim bin, workspace baseline, step start)."""
GATEWAY_DIR = ".gateway"
OUTBOX_DIR = ".sandbox-out"
"""Where a sandboxed process writes what later moves into the run directory."""
DISK_DIR = ".disk"
"""During a trial: the size-limited filesystem holding the agent's own folders (harness.sandbox.disk)."""

RUN_DIR_FOLDERS = frozenset({WORKSPACE_DIR, SNAPSHOTS_DIR, STATE_DIR, STEPS_DIR})
"""A run's own artifact folders: never searched for other runs (a workspace may hold anything)."""

RESERVED = frozenset(
    {
        RUN_FILE,
        GRADE_FILE,
        JOB_FILE,
        VERSIONS_FILE,
        VIEW_FILE,
        ROUNDS_FILE,
        DIFF_FILE,
        AGENT_LOG,
        SETUP_LOG,
        GATEWAY_LOG,
        TRACE_FILE,
        STEPS_DIR,
        RETRIES_DIR,
        SNAPSHOTS_DIR,
        WORKSPACE_DIR,
        STATE_DIR,
        HOME_DIR,
        TMP_DIR,
        SKILL_DIR,
        META_DIR,
        GATEWAY_DIR,
        OUTBOX_DIR,
        DISK_DIR,
    }
)
"""Run-directory names only the harness writes; an outbox entry of that name is refused."""


def step_dir_name(index: int) -> str:
    """`steps/step-NN` (1-based): an earlier session of a multi-step run, relative to the run directory."""
    return f"{STEPS_DIR}/{STEP_PREFIX}{index:02d}"
