"""How any untrusted command runs: `proc` (the one subprocess wrapper), `launch` (a command
the way the agent runs, in its isolation), `pathsafe` (nothing the agent wrote can make the
harness read or write outside a root) and `isolation/` (the sandbox plug-ins and limits)."""
