"""The built-in adapters: each `adapters.<name>` is run by the runner as `python -m` under the
adapter contract (docs/agents.md). `__all__` lists them by short name; the compiler reads it
(without importing) to refuse an unknown `adapter:`, the runner and `adapters.install` to find them.
The other modules are the package's library: `install`, `schema` and the private `_*`.
"""

__all__ = [
    "aider",
    "claude_code",
    "codex",
    "gemini_cli",
    "mini_swe_agent",
    "noop",
    "opencode",
    "oracle",
    "scripted",
]
