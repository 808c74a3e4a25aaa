"""Importers: other harnesses' task formats read into assay scenarios (`assay import`).

`terminal_bench` and `harbor` read a task folder into a `task.Task` (what its Dockerfile,
test script and solution say, or why it cannot be reproduced here); `write` writes it as a
scenario folder; `reference` runs its solution in the sandbox to make the reference; `undo`
journals what an import writes in the project, to put it back when the import does not finish. The
orchestration — staging, compiling, validating, refusing — is `harness/commands/_importing.py`
(it needs the compiler, which only the commands may import). See docs/importing.md.
"""
