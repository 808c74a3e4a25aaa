"""Regenerate agents/scripted-{good,weak}.yaml from the example scenarios' references and negatives.

Run `python agents/make_scripts.py` after changing a scenario; the output is committed.
A good agent with the tool runs it and writes the reference; without it, it often makes the
scenario's SLIP (the mistake the tool would have caught); the weak agent often makes its BLUNDER.
"""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def tree(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): p.read_text()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def writes(files: dict[str, str]) -> list[dict]:
    return [{"write": {"path": k, "content": v}} for k, v in files.items()]


TOOL = {
    "cleanup-unused-imports": [
        "ruff check --select F401 --output-format concise .",
        "ruff check --select F401 --fix .",
    ],
    "cleanup-modern-typing": [
        "ruff check --target-version py311 --select UP --output-format concise .",
        "ruff check --target-version py311 --select UP006,UP007,UP035,UP045 --fix --unsafe-fixes .",
        "ruff check --select F401 --fix .",
    ],
    "bugfix-refund-report": ["ruff check --output-format concise shopstats"],
    "bugfix-alert-channels": ["ruff check --select B --output-format concise alerts"],
    "triage-name-error": ["ruff check --select F821 --output-format concise ."],
    "legacy-status-labels": ["ruff check --output-format concise orders"],
    "cleanup-format-billing": ["ruff format --check --diff billing", "ruff format billing"],
}
# The mistake an agent without the tool makes most often: a negative of the scenario.
SLIP = {
    "cleanup-unused-imports": "misses-one",
    "cleanup-modern-typing": "half-done",
    "bugfix-refund-report": "csv-still-broken",
    "bugfix-alert-channels": "escalation-still-late",
    "triage-name-error": "wrong-name",
    "legacy-status-labels": "leaves-one",
    "cleanup-format-billing": "half-formatted",
}
# The careless agent's favourite mistake.
BLUNDER = {
    "cleanup-unused-imports": "drops-reexports",
    "cleanup-modern-typing": "breaks-plan",
    "bugfix-refund-report": "adds-refunds",
    "bugfix-alert-channels": "ignores-prefix",
    "triage-name-error": "wrong-file",
    "legacy-status-labels": "debug-print",
    "cleanup-format-billing": "breaks-due-date",
}


def neg_dir(sdir: Path, name: str) -> Path:
    for base in ("negatives", "negative"):
        if (sdir / base / name).is_dir():
            return sdir / base / name
    raise SystemExit(f"no overlay for {sdir.name}/{name}")


def scenario_steps(sid: str, good: bool) -> list[dict]:
    sdir = ROOT / "scenarios" / sid
    ref = tree(sdir / "reference")
    slip = {**ref, **tree(neg_dir(sdir, SLIP[sid]))}
    blunder = {**ref, **tree(neg_dir(sdir, BLUNDER[sid]))}
    look = {"run": "ls -R . | head -50"}
    ref_w, slip_w, blunder_w = writes(ref), writes(slip), writes(blunder)
    tool_runs = [{"run": c} for c in TOOL[sid]]
    verify = {"run": TOOL[sid][0]}
    if good:
        return [
            look,
            {
                "when": {"on_path": "ruff"},
                "choose": [
                    {"weight": 0.9, "steps": [*tool_runs, *ref_w, verify]},
                    {"weight": 0.1, "steps": [*tool_runs, *slip_w]},
                ],
            },
            {
                "when": {"not_on_path": "ruff", "level": {"knowledge": "wiki"}},
                "choose": [
                    {"weight": 0.7, "steps": [{"run": "cat wiki/conventions.md"}, *ref_w]},
                    {"weight": 0.3, "steps": [{"run": "cat wiki/conventions.md"}, *slip_w]},
                ],
            },
            {
                "when": {"not_on_path": "ruff", "not": {"level": {"knowledge": "wiki"}}},
                "choose": [
                    {"weight": 0.5, "steps": ref_w},
                    {"weight": 0.5, "steps": slip_w},
                ],
            },
        ]
    return [
        {
            "when": {"on_path": "ruff"},
            "choose": [
                {"weight": 0.5, "steps": [tool_runs[0], *ref_w]},
                {"weight": 0.5, "steps": [tool_runs[0], *blunder_w]},
            ],
        },
        {
            "when": {"not_on_path": "ruff"},
            "choose": [
                {"weight": 0.2, "steps": ref_w},
                {"weight": 0.4, "steps": slip_w},
                {"weight": 0.4, "steps": blunder_w},
            ],
        },
    ]


# Scenarios of the memory treatment (`knowledge: memory`, tools/memory/memo): what decides them
# is what the project memory holds, not a tool's output, so their steps are written by hand.
DIAGNOSIS = (
    "Root cause of the logout bursts: the refresh-token store (authsvc/store.py TokenStore) lives in "
    "process memory, so every platform instance recycle boots it empty and each open tab's next "
    "background refresh fails as UnknownToken (401s within minutes of both recycles in the incident "
    "log). Not replay detection (one uncorrelated ReplayDetected line), not the session-lifetime "
    "cookie (browser restarts cause no 401 spike). Fix: persist the token families across restarts "
    "(settings.token_file), keep replay detection."
)


def memory_steps(sid: str, good: bool) -> list[dict]:
    sdir = ROOT / "scenarios" / sid
    ref = tree(sdir / "reference")
    right = 0.9 if good else 0.6

    def neg(name: str) -> list[dict]:
        return writes({**ref, **tree(neg_dir(sdir, name))})

    if sid == "handoff-restart-logouts":
        session_a = {"file_exists": "incident.log"}
        return [
            {
                "when": session_a,
                "run": "grep -n -e recycled -e UnknownToken -e ReplayDetected -e restarts incident.log",
            },
            {"when": session_a, "run": "grep -rn 'TokenStore(' authsvc"},
            # The diagnosis goes to the project memory when there is one (the weak agent often
            # forgets to record it), else to a notes file that the fresh tree of session B wipes.
            {
                "when": {**session_a, "on_path": "memo", "chance": 1.0 if good else 0.6},
                "run": f'memo add --kind finding --key restart-logouts "{DIAGNOSIS}"',
            },
            {
                "when": {**session_a, "not_on_path": "memo"},
                "write": {"path": "NOTES.md", "content": DIAGNOSIS + "\n"},
            },
            {
                "when": {"not": session_a},
                "choose": [
                    {
                        "weight": 1,
                        "steps": [
                            {
                                "run": "memo search logout"
                            },  # 127 without the memory, 1 when nothing was recorded
                            {
                                "when": {"last_exit": 0},
                                "choose": [
                                    {"weight": right, "steps": writes(ref)},
                                    {"weight": 1 - right, "steps": neg("drops-replay-detection")},
                                ],
                            },
                            {
                                "when": {"not": {"last_exit": 0}},
                                "choose": [
                                    {"weight": 0.5, "steps": neg("cookie-lifetime")},
                                    {"weight": 0.5, "steps": neg("drops-replay-detection")},
                                ],
                            },
                        ],
                    }
                ],
            },
        ]
    if sid == "trap-cookie-samesite":
        return [
            {"run": "cat webapp/cookies.py"},
            {"run": "memo search samesite"},  # the treatment looks up what the project knows first
            {
                "when": {"last_exit": 0},
                "choose": [
                    {"weight": right, "steps": writes(ref)},
                    {"weight": 1 - right, "steps": neg("strict-and-prefix")},
                ],
            },
            {
                "when": {"not": {"last_exit": 0}},  # no memory: the ticket is followed to the letter
                "choose": [
                    {"weight": 0.8, "steps": neg("textbook-strict")},
                    {"weight": 0.2, "steps": neg("prefix-keeps-domain")},
                ],
            },
        ]
    if sid == "stale-assets-cdn":
        return [
            {"run": "grep -n href shop/web.py"},
            {"run": "memo search cdn"},
            {
                "when": {"last_exit": 0},
                "choose": [
                    {"weight": right, "steps": writes(ref)},
                    {"weight": 1 - right, "steps": neg("broken-link")},
                ],
            },
            {
                "when": {"not": {"last_exit": 0}},  # no memory: the textbook cache-buster
                "choose": [
                    {"weight": 0.8, "steps": neg("query-string")},
                    {"weight": 0.2, "steps": neg("broken-link")},
                ],
            },
        ]
    raise SystemExit(f"no memory script for {sid}")


MEMORY = ("handoff-restart-logouts", "trap-cookie-samesite", "stale-assets-cdn")


HEAD = {
    True: """# The script of the scripted-good agent (docs/scripted-agent.md; specs/agents/scripted-good.yaml).
# A deterministic stand-in for a capable agent: with the linter on PATH it runs it, applies its
# fixes, writes the rest of the solution and checks again (90% right); without it, it gets
# the task right half of the time (70% when the team wiki is linked and it reads the
# conventions) and otherwise makes the mistake the linter would have caught.
# Choices are seeded by the scenario and the trial, so every rerun gives the same pass rates.
# Written by agents/make_scripts.py from the scenarios' references and negatives (rerun it
# after changing a scenario); a file content written in several branches is a YAML anchor
# (&idNNN) with aliases (*idNNN).
""",
    False: """# The script of the scripted-weak agent (docs/scripted-agent.md; specs/agents/scripted-weak.yaml).
# A deterministic stand-in for a careless agent: it glances at the linter when it has one but
# often takes the quick, wrong fix anyway (a known negative of the scenario).
# Written by agents/make_scripts.py from the scenarios' references and negatives (rerun it
# after changing a scenario); a file content written in several branches is a YAML anchor
# (&idNNN) with aliases (*idNNN).
""",
}


class Dumper(yaml.SafeDumper):
    pass


def _str(d, s):
    return d.represent_scalar("tag:yaml.org,2002:str", s, style="|" if "\n" in s else None)


Dumper.add_representer(str, _str)
# repeated writes become YAML anchors (&idNNN) and aliases (*idNNN)

for good, name in ((True, "scripted-good"), (False, "scripted-weak")):
    doc = {
        "seed": 1 if good else 2,
        "scenarios": {sid: scenario_steps(sid, good) for sid in sorted(TOOL)},
    }
    doc["scenarios"].update({sid: memory_steps(sid, good) for sid in MEMORY})
    doc["scenarios"]["default"] = [{"say": "no script for this scenario: doing nothing"}]
    text = HEAD[good] + yaml.dump(doc, Dumper=Dumper, sort_keys=False, width=110, allow_unicode=True)
    (ROOT / "agents" / f"{name}.yaml").write_text(text)
    print(name, len(text.splitlines()))
