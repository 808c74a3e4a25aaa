"""The scripted agent: a deterministic agent that follows a YAML script (docs/scripted-agent.md).

The runner inlines the script into BENCH_AGENT_ARGS (`script_inline`), because the sandbox
cannot read the project. Choices are drawn from a random generator seeded by the script's
`seed`, the scenario and BENCH_TRIAL, so a script with `chance:` gives pass rates strictly
between 0 and 1 that are identical on every rerun. Conditions (`when:`) look at what the cell
provides — a command on PATH, a level, an environment variable, a file, the trace so far — so
one script behaves differently per cell, as a real agent would.

Every action writes a transcript event and a usage row (made-up but deterministic tokens, model
`scripted` unless the spec names one), so the report's token and cost columns are exercised without
a model.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ACTIONS = (
    "run",
    "write",
    "edit",
    "append",
    "delete",
    "answer",
    "read_trace",
    "sleep",
    "exit",
    "choose",
    "say",
    "ask",
    "repeat",
)
ASK_PATHS = {
    "anthropic": "/v1/messages",
    "chat": "/v1/chat/completions",
    "responses": "/v1/responses",
    "gemini": "/v1beta/models/{model}:generateContent",
}
"""Where `ask` sends a model request, by `args.protocol`, under `args.base_url`."""


class ScriptError(ValueError):
    """The script is malformed."""


class Agent:
    """Interprets one script in the current directory (the workspace)."""

    def __init__(self, script: dict[str, Any], args: dict[str, Any], env: dict[str, str]) -> None:
        self.args = args
        self.env = env
        self.scenario = env.get("BENCH_SCENARIO", "")
        trial = env.get("BENCH_TRIAL", "1")
        self.rng = random.Random(f"{script.get('seed', 0)}:{args.get('seed', 0)}:{self.scenario}:{trial}")
        self.script = script
        self.last_exit = 0
        self.exit_code = 0
        self.turn = 0
        self.context = 0

    # --- reporting -----------------------------------------------------------------------
    def _append(self, var: str, row: dict[str, Any]) -> None:
        path = self.env.get(var)
        if path:
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(row, sort_keys=True) + "\n")

    def event(self, kind: str, **data: Any) -> None:
        """One transcript event and one model turn of usage."""
        self.turn += 1
        size = len(json.dumps(data))
        self.context += 400 + size
        self._append("BENCH_TRANSCRIPT", {"turn": self.turn, "type": kind, **data})
        self._append(
            "BENCH_USAGE",
            {
                "t": time.time(),
                "input": 400 + size,
                "output": 60 + size // 4,
                "cache_read": self.context - 400 - size,
                "cache_write": 0,
                "reasoning": 0,
                "context": self.context,
                "context_limit": 200000,
                "model": self.args.get("model") or "scripted",
            },
        )

    # --- conditions ----------------------------------------------------------------------
    def _probability(self, value: Any) -> float:
        if isinstance(value, str) and value.startswith("$"):
            value = self.args.get(value[1:], 0.0)
        return float(value)

    def holds(self, cond: dict[str, Any] | None) -> bool:
        """Whether every clause of a `when:` holds (a missing `when` always holds)."""
        if not cond:
            return True
        for key, value in cond.items():
            if key == "on_path":
                ok = all(shutil.which(n, path=self.env.get("PATH", "")) for n in _names(value))
            elif key == "not_on_path":
                ok = not any(shutil.which(n, path=self.env.get("PATH", "")) for n in _names(value))
            elif key == "level":
                ok = all(
                    self.env.get("BENCH_" + f.upper().replace("-", "_")) == lv for f, lv in value.items()
                )
            elif key == "env":
                ok = all(self.env.get(k) == str(v) for k, v in value.items())
            elif key == "file_exists":
                ok = all(Path(n).exists() for n in _names(value))
            elif key == "trace_has":
                ok = all(any(r.get("tool") == n and "argv" in r for r in self.trace()) for n in _names(value))
            elif key == "last_exit":
                ok = self.last_exit == int(value)
            elif key == "scenario":
                ok = self.scenario in _names(value)
            elif key == "chance":
                ok = self.rng.random() < self._probability(value)
            elif key == "not":
                ok = not self.holds(value)
            else:
                raise ScriptError(f"unknown condition {key!r}")
            if not ok:
                return False
        return True

    def trace(self) -> list[dict[str, Any]]:
        """The trace so far (the tool invocations of this run)."""
        path = Path(self.env.get("BENCH_TRACE") or Path(self.env.get("BENCH_RUN_DIR", ".")) / "trace.jsonl")
        if not path.is_file():
            return []
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]

    # --- actions -------------------------------------------------------------------------
    def steps(self, steps: list[dict[str, Any]]) -> bool:
        """Run steps in order; False once an `exit` stopped the script."""
        for step in steps:
            if not isinstance(step, dict):
                raise ScriptError(f"a step must be a mapping, got {step!r}")
            if not self.holds(step.get("when")):
                continue
            if not self.act(step):
                return False
        return True

    def act(self, step: dict[str, Any]) -> bool:
        action = [k for k in step if k in ACTIONS]
        if len(action) != 1:
            raise ScriptError(f"a step needs exactly one action of {ACTIONS}: {step!r}")
        name = action[0]
        value = step[name]
        if name == "run":
            done = subprocess.run(value, shell=True, capture_output=True, env=self.env, check=False)
            self.last_exit = done.returncode
            sys.stdout.buffer.write(done.stdout + done.stderr)
            sys.stdout.flush()
            self.event(
                "tool_use",
                tool="shell",
                command=value,
                exit=done.returncode,
                output=(done.stdout + done.stderr).decode(errors="replace")[-2000:],
            )
        elif name == "write":
            path = Path(value["path"])
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(value.get("content", ""), encoding="utf-8")
            self.event("edit", tool="write", path=value["path"])
        elif name == "append":
            with Path(value["path"]).open("a", encoding="utf-8") as fh:
                fh.write(value.get("content", ""))
            self.event("edit", tool="append", path=value["path"])
        elif name == "edit":
            path = Path(value["path"])
            text = path.read_text(encoding="utf-8")
            if value["old"] not in text:
                self.last_exit = 1
                self.event("edit_failed", tool="edit", path=value["path"], reason="old text not found")
            else:
                path.write_text(
                    text.replace(value["old"], value.get("new", ""), int(value.get("count", 1))),
                    encoding="utf-8",
                )
                self.last_exit = 0
                self.event("edit", tool="edit", path=value["path"])
        elif name == "delete":
            Path(value).unlink(missing_ok=True)
            self.event("edit", tool="delete", path=value)
        elif name == "answer":
            path = Path(self.env.get("BENCH_ANSWER", "answer.json"))
            data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
            data.update(value)
            path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
            self.event("answer", keys=sorted(value))
        elif name == "read_trace":
            rows = [r for r in self.trace() if "argv" in r]
            self.event("read_trace", invocations=len(rows))
        elif name == "sleep":
            time.sleep(float(value))
        elif name == "say":
            print(value)
            self.event("message", text=value)
        elif name == "choose":
            options = value
            weights = [self._probability(o.get("weight", 1)) for o in options]
            picked = self.rng.choices(options, weights=weights)[0]
            return self.steps(picked.get("steps", []))
        elif name == "exit":
            self.exit_code = int(value)
            return False
        elif name == "ask":
            return self.ask(value if isinstance(value, dict) else {"text": str(value)})
        elif name == "repeat":
            times = value.get("times", "forever")
            count = 0
            while times == "forever" or count < int(times):
                count += 1
                if not self.steps(list(value.get("steps", []))):
                    return False
        return True

    def ask(self, spec: dict[str, Any]) -> bool:
        """One model request to `args.base_url`; a refusal ends the script (exit 1) as it ends a CLI,
        unless `on_error: continue` (an agent that ignores it)."""
        protocol = str(self.args.get("protocol", "anthropic"))
        model = str(self.args.get("model") or "scripted")
        base = str(self.args.get("base_url") or "").rstrip("/")
        if protocol not in ASK_PATHS or not base:
            raise ScriptError(f"ask needs args.base_url and args.protocol in {sorted(ASK_PATHS)}")
        text = str(spec.get("text", ""))
        message = [{"role": "user", "content": text}]
        bodies: dict[str, dict[str, Any]] = {
            "anthropic": {"model": model, "max_tokens": 256, "messages": message},
            "chat": {"model": model, "messages": message},
            "responses": {"model": model, "input": text},
            "gemini": {"contents": [{"role": "user", "parts": [{"text": text}]}]},
        }
        body = bodies[protocol]
        key = str(self.args.get("api_key") or "scripted")
        import urllib.error  # only a step that asks a model needs them (a tenth of the adapter's start)
        import urllib.request

        request = urllib.request.Request(
            base + ASK_PATHS[protocol].format(model=model),
            data=json.dumps(body).encode(),
            method="POST",
            headers={"Content-Type": "application/json", "x-api-key": key, "Authorization": f"Bearer {key}"},
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                answer = json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace")[:2000]
            print(f"scripted: model error {exc.code}: {detail}")
            self.last_exit = 1
            self._append(
                "BENCH_TRANSCRIPT",
                {"turn": self.turn, "type": "model_error", "status": exc.code, "body": detail},
            )
            if spec.get("on_error", "stop") == "continue":
                return True
            self.exit_code = 1
            return False
        self.last_exit = 0
        self.turn += 1
        used = _usage(answer)
        self._append("BENCH_TRANSCRIPT", {"turn": self.turn, "type": "model", "protocol": protocol, **used})
        self._append(
            "BENCH_USAGE",
            {"t": time.time(), **used, "cache_read": 0, "cache_write": 0, "reasoning": 0, "model": model},
        )
        return True

    def main_steps(self) -> list[dict[str, Any]]:
        """The steps for this scenario: `scenarios.<id>`, else `scenarios.default`, else `steps`."""
        by_scenario = self.script.get("scenarios") or {}
        if self.scenario in by_scenario:
            return list(by_scenario[self.scenario])
        if "default" in by_scenario:
            return list(by_scenario["default"])
        return list(self.script.get("steps", []))


def _usage(answer: Any) -> dict[str, int]:
    """Input and output tokens of a model answer, whichever protocol it speaks."""
    usage = answer.get("usage") or {} if isinstance(answer, dict) else {}
    meta = answer.get("usageMetadata") or {} if isinstance(answer, dict) else {}
    return {
        "input": int(usage.get("input_tokens", usage.get("prompt_tokens", meta.get("promptTokenCount", 0)))),
        "output": int(
            usage.get("output_tokens", usage.get("completion_tokens", meta.get("candidatesTokenCount", 0)))
        ),
    }


def _names(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else [str(v) for v in value]


def main() -> int:
    """Read the prompt, run the script, exit with its exit code."""
    prompt = sys.stdin.read()
    args = json.loads(os.environ.get("BENCH_AGENT_ARGS", "{}"))
    script = args.get("script_inline")
    if not isinstance(script, dict):
        print(
            "scripted: BENCH_AGENT_ARGS has no script_inline (give the agent a `script:` argument)",
            file=sys.stderr,
        )
        return 2
    agent = Agent(script, args, dict(os.environ))
    agent.event("prompt", chars=len(prompt))
    try:
        agent.steps(agent.main_steps())
    except ScriptError as exc:
        print(f"scripted: {exc}", file=sys.stderr)
        return 2
    if "BENCH_CONTEXT" in os.environ:
        Path(os.environ["BENCH_CONTEXT"]).write_text(json.dumps({"loaded": []}) + "\n", encoding="utf-8")
    return agent.exit_code


if __name__ == "__main__":
    sys.exit(main())
