"""The run-directory format: what a trial leaves on disk and how it is read back.

The run-time mirror of `compiler.contract`: `names` (every file name of a run directory),
`records` (run.json and grade.json, with `grade_sections`), `store` (atomic writes,
schema-checked reads), `readers` (tolerant readers of what the agent's side wrote),
`run_view` (one run read for grading), `run_tree` (where a run lives under a runs root,
whether it is finished, `find_runs`) and `sandbox_sections` (run.json's account of the sandbox:
protections that held, what the walks over agent-written trees found). It imports nothing else
of the harness.
"""
