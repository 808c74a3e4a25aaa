"""`judge`: an LLM rubric over the transcript, off by default.

Parameters: `rubric` (text), `model` (the judge's name when the grader was given several;
default `default`). Without a judge, without a transcript, or when the judge fails, the
check is `unavailable` — never a pass — and the rest of the grade stands. The verdict's
reason is recorded verbatim in the message, with the model that gave it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from compiler.contract import CheckSpec
from harness.checks._run import run_view
from harness.checks.base import CheckContext, CheckError, CheckUnavailable, Verdict


class JudgeCheck:
    """A rubric the judge applies to the run's transcript."""

    name = "judge"

    def run(self, spec: CheckSpec, workspace: Path, ctx: CheckContext) -> Verdict:
        rubric = spec.params.get("rubric")
        if not rubric:
            raise CheckError(f"check {spec.id!r} (judge) needs a rubric")
        judge = ctx.extra.get("judge")
        if isinstance(judge, Mapping):
            judge = judge.get(str(spec.params.get("model", "default")))
        if judge is None:
            raise CheckUnavailable("no judge: the LLM judge layer is off by default")
        view = run_view(ctx, self.name)
        if not view.transcript.present:
            raise CheckUnavailable("the adapter gave no transcript to judge")
        text = "Task given to the agent:\n" + view.job.scenario.prompt + "\n\nAgent transcript (JSONL):\n"
        text += "\n".join(json.dumps(r, sort_keys=True) for r in view.transcript.rows)
        try:
            verdict = judge.judge(str(rubric), text)
        except Exception as exc:  # any provider failure degrades this check only, by design
            raise CheckUnavailable(f"judge failed: {type(exc).__name__}: {exc}") from None
        model = getattr(verdict, "model", "") or "judge"
        return Verdict(bool(verdict.passed), f"{model}: {verdict.reason}")
