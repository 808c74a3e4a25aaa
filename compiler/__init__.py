"""The assay compiler: specs/ + scenarios/ -> generated/.

A named pipeline, each stage a function with typed input and output; only `load`
reads and only `emit` writes, so the core runs from files held in memory:

    load.scan(root) -> Inputs            read and hash every input (fast unchanged check)
    load.parse_sources(Inputs) -> Sources   YAML 1.2 with positions (yamlio), seed 000's JSON
    validate.validate(Sources) -> Validated  cerberus from the models (rawcheck), extends
                                         (merge), scenarios/checks, cross-file rules (rules)
    expand.expand(Validated) -> Plan     cells, GitHub Actions matrices (matrix), job cap
    emit.emit(Plan, generated/) -> int   manifest.json and job files, deterministic

`pipeline.compile_project` runs them; `explain` traces a job's fields to file:line.
`contract` is the public artifact contract, the only module run-time code imports.
"""
