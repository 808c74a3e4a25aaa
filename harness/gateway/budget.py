"""A trial's budgets of model spend, kept by the gateway as requests pass.

The job's `limits` may cap input, output and total tokens, model requests and money (priced from
specs/prices.yaml, as the grader prices). The gateway counts every forwarded response's usage; once a
budget is spent, the agent's next model request gets the provider's own error for an account that
may not spend more (`refusal`), so the agent ends as it would in real use. An agent that asks again,
or is still running `GRACE_S` after the refusal, is ended by the harness (`Meter.stop`): the run
records the budget in `limits_hit`, and its workspace is graded as it was left.

Input tokens count uncached input, cache reads and cache writes alike (what the report counts);
output includes reasoning. A response can overshoot a budget: the check is made before each request,
and the overshoot is recorded.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, Literal, NamedTuple

from harness.artifacts.prices import PriceTable
from harness.gateway.usage import Usage

GRACE_S = 30.0
"""How long an agent may keep running after its budget refusal before the harness ends it."""
HOLD_S = 30.0
"""How long a request made after the stop waits for the gateway to close (the session to end) before
it is answered: an agent that keeps asking is not answered, and logged, again and again meanwhile."""

Protocol = Literal["anthropic", "chat", "responses", "gemini", "other"]


def protocol_of(method: str, path: str) -> Protocol:
    """The model API a request speaks, from its path; `other` for anything that is not a generation."""
    bare = path.split("?", 1)[0].rstrip("/")
    if method != "POST":
        return "other"
    if bare.endswith("/messages"):
        return "anthropic"
    if bare.endswith("/chat/completions"):
        return "chat"
    if bare.endswith("/responses"):
        return "responses"
    if bare.endswith((":generateContent", ":streamGenerateContent")):
        return "gemini"
    return "other"


def refusal(protocol: Protocol, message: str) -> tuple[int, dict[str, Any]]:
    """(status, body): each provider's own answer to an account that may not spend more.

    Anthropic: 400 invalid_request_error (its answer to a spent credit balance or a reached usage
    limit; a client does not retry a 400). OpenAI: 429 insufficient_quota (clients stop on that code
    rather than retrying). Gemini: 429 RESOURCE_EXHAUSTED.
    """
    if protocol == "anthropic":
        text = f"You have reached your specified API usage limits. {message}"
        return 400, {"type": "error", "error": {"type": "invalid_request_error", "message": text}}
    if protocol == "gemini":
        text = f"You exceeded your current quota. {message}"
        return 429, {"error": {"code": 429, "message": text, "status": "RESOURCE_EXHAUSTED"}}
    text = f"You exceeded your current quota, please check your plan and billing details. {message}"
    return 429, {
        "error": {"message": text, "type": "insufficient_quota", "param": None, "code": "insufficient_quota"}
    }


class Refusal(NamedTuple):
    """Why a model request is not forwarded."""

    limit: str | None
    """The budget that is spent; None when the budget could not be kept at all (`Meter.problem`)."""
    message: str


class Meter:
    """What the trial has spent, and whether the next model request may go (thread-safe)."""

    def __init__(
        self,
        budgets: Mapping[str, float],
        prices: PriceTable | None,
        *,
        grace_s: float = GRACE_S,
        hold_s: float = HOLD_S,
    ) -> None:
        self.budgets = dict(budgets)
        self.prices = prices
        self.grace_s = grace_s
        self.hold_s = hold_s
        self.spent: dict[str, float] = dict.fromkeys(self.budgets, 0)
        self.hit: list[str] = []
        """Budgets that refused a request, in the order they did."""
        self.refused = 0
        self.problem: str | None = None
        """Why the budget could not be kept (a model the price table does not price): a harness-side failure."""
        self.stop = threading.Event()
        """Set when the harness must end the agent's session."""
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None

    def _exhausted(self) -> str | None:
        return next((n for n, cap in self.budgets.items() if self.spent[n] >= cap), None)

    def admit(self) -> Refusal | None:
        """Count one model request; why it must not go, or None: forward it."""
        with self._lock:
            spent = self._exhausted()
            if spent is None and self.problem is None:
                if "model_requests" in self.spent:
                    self.spent["model_requests"] += 1
                return None
            self.refused += 1
            if spent is not None and spent not in self.hit:
                self.hit.append(spent)
            if self.problem is not None or self.refused > 1:
                self.stop.set()
            elif self._timer is None:
                self._timer = threading.Timer(self.grace_s, self.stop.set)
                self._timer.daemon = True
                self._timer.start()
            if spent is None:
                return Refusal(None, f"assay could not keep this trial's budget: {self.problem}")
            budget, used = _amount(self.budgets[spent]), _amount(self.spent[spent])
            return Refusal(spent, f"assay budget: this trial's {spent} budget ({budget}) is spent ({used}).")

    def record(self, usage: Usage | None, model: str | None) -> None:
        """Add one forwarded response's usage."""
        if usage is None:
            return
        inputs = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
        with self._lock:
            adds = {
                "input_tokens": inputs,
                "output_tokens": usage.output_tokens,
                "total_tokens": inputs + usage.output_tokens,
            }
            for name, amount in adds.items():
                if name in self.spent:
                    self.spent[name] += amount
            if "cost_usd" in self.spent:
                usd = self._usd(usage, model)
                if usd is None:
                    self.problem = self.problem or (
                        f"model {model or '(unnamed)'} is not priced in specs/prices.yaml"
                        if self.prices is not None
                        else "no price table (specs/prices.yaml) to count the cost_usd budget"
                    )
                else:
                    self.spent["cost_usd"] += usd

    def _usd(self, usage: Usage, model: str | None) -> float | None:
        if self.prices is None or not model:
            return None
        return self.prices.usd(
            model,
            {
                "input": usage.input_tokens,
                "output": usage.output_tokens,
                "cache_read": usage.cache_read_tokens,
                "cache_write": usage.cache_write_tokens,
            },
        )

    def close(self) -> None:
        """Cancel the grace timer (the trial is over)."""
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()

    def summary(self) -> dict[str, Any]:
        """For run.json: each budget, what was spent against it, and what refused."""
        with self._lock:
            return {
                "budgets": dict(self.budgets),
                "spent": {n: round(v, 6) for n, v in self.spent.items()},
                "hit": list(self.hit),
                "refused": self.refused,
                "problem": self.problem,
            }


def _amount(value: float) -> str:
    return f"{value:g}" if isinstance(value, int) or value.is_integer() else f"{value:.6f}".rstrip("0")
