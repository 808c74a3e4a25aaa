"""Reading Terminal-Bench and Harbor tasks (no sandbox): what maps to what, what is refused and why."""

from __future__ import annotations

import shutil
from pathlib import Path

from compiler.render import render
from harness.importers import dockerfile, harbor, terminal_bench
from harness.importers.scripts import read_solution, read_tests
from harness.importers.shellsteps import split_commands
from harness.importers.task import requirements, script_packages
from harness.importers.write import escape_template, scenario_doc

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "import"
TB = FIXTURES / "terminal-bench"


def test_dockerfile_maps_to_seed_mounts_env_and_packages() -> None:
    build = dockerfile.read((TB / "csv-summary" / "Dockerfile").read_text())
    assert (build.python, build.workdir, build.refusals) == ("3.11", "/app", [])
    assert [(c.sources, c.dest) for c in build.copies] == [(("data",), "/data"), (("app/",), "/app/")]
    assert build.env == {"GREETING": "hello", "PYTHONPATH": "/app:"}
    assert build.dirs == ["/app/out"] and build.modes == {"/app/summarize.py": 0o755}
    assert build.packages.apt == []  # tmux and asciinema are Terminal-Bench's own tools
    assert any("asciinema" in n for n in build.notes)


def test_dockerfile_refusals_name_the_step() -> None:
    cases = {
        "FROM registry.invalid/acme/custom:1\nWORKDIR /app\n": "a custom base image (registry.invalid/acme/custom:1): nothing here provides it",
        "FROM python:3.12\nWORKDIR /app\nRUN curl -o d.csv https://x.invalid/d.csv && python gen.py\n": "RUN step downloads (curl -o d.csv https://x.invalid/d.csv): it needs the network",
        "FROM python:3.12 AS b\nFROM python:3.12\nWORKDIR /app\n": "a multi-stage build (second FROM python:3.12)",
        "FROM python:3.12\nWORKDIR /app\nCOPY --from=b /x /y\n": "COPY --from another build stage or image (--from=b /x /y)",
        "FROM python:3.12\n": "no WORKDIR: the task's working directory is unknown",
        "FROM python:3.12\nWORKDIR /app\nRUN pip install torch --index-url https://x.invalid/whl\n": "RUN step the importer cannot reproduce: pip install torch --index-url https://x.invalid/whl",
    }
    for text, reason in cases.items():
        assert dockerfile.read(text).refusals[:1] == [reason], text
    ok = dockerfile.read(
        "FROM registry.invalid/laude-institute/t-bench/python-3-13:20250620\n"
        "RUN set -eux; export DEBIAN_FRONTEND=noninteractive; apt-get update && \\\n"
        "    apt-get install -y --no-install-recommends jq=1.6 && rm -rf /var/lib/apt/lists/*\n"
        "RUN pip install --no-cache-dir numpy==2.1.2 scipy\n"
    )
    assert (ok.python, ok.workdir, ok.refusals) == ("3.13", "/app", [])
    assert (ok.packages.apt, ok.packages.pip) == (["jq"], ["numpy==2.1.2", "scipy"])
    mirrored = dockerfile.read("FROM registry.invalid:5000/library/python:3.12\nWORKDIR /app\n")
    assert (mirrored.python, mirrored.refusals) == ("3.12", [])  # a known image from any registry


def test_run_steps_that_make_files_are_build_steps() -> None:
    """A RUN that does more than install or shape the tree runs at import, as written; its
    `mkdir`s still make the mounts, its `rm` runs for real."""
    build = dockerfile.read((TB / "generates-data" / "Dockerfile").read_text())
    assert build.refusals == []
    assert [(s.workdir, s.script.split(" && ")[:2]) for s in build.steps] == [
        ("/app", ["mkdir -p /data", "python gen.py > /data/numbers.csv"])
    ]
    assert (build.dirs, build.removed, build.packages.apt) == (["/data"], [], ["coreutils"])
    early = dockerfile.read("FROM python:3.12\nRUN echo x > /data/x.csv\nWORKDIR /app\n")
    assert [(s.workdir, s.script) for s in early.steps] == [("/", "echo x > /data/x.csv")]
    # An `rm` after a build step runs after it (it removes the generator the step ran), in order.
    later = dockerfile.read(
        "FROM python:3.12\nWORKDIR /app\nCOPY gen.py ./\nRUN python3 gen.py\nRUN rm -f gen.py\n"
    )
    assert ([s.script for s in later.steps], later.removed) == (["python3 gen.py", "rm -f gen.py"], [])


def test_test_scripts_become_a_pytest_run() -> None:
    tb = read_tests((TB / "csv-summary" / "run-tests.sh").read_text())
    assert (tb.tests, tb.args, tb.cwd, tb.packages.pip, tb.packages.apt, tb.refusals) == (
        ["/tests/test_outputs.py"],
        [],
        None,
        ["pytest"],
        [],
        [],
    )
    hb = read_tests((FIXTURES / "harbor" / "word-count" / "tests" / "test.sh").read_text())
    assert (hb.tests, hb.packages.pip, hb.refusals) == (["/tests/test_wc.py"], ["pytest"], [])
    moved = read_tests("cd $TEST_DIR\nuv run pytest test_outputs.py -x --timeout 30\n")
    assert (moved.cwd, moved.tests, moved.args) == (
        "/tests",
        ["/tests/test_outputs.py"],
        ["-x", "--timeout", "30"],
    )


def test_steps_before_pytest_become_the_checks_setup() -> None:
    """Data generation before pytest runs first in the check (uv run: the environment's python);
    a step under a condition, after pytest, or one that downloads stays a refusal."""
    regen = read_tests((TB / "regenerates-data" / "run-tests.sh").read_text())
    assert (regen.setup, regen.tests, regen.refusals) == (
        ["python3 /tests/generate_data.py"],
        ["/tests/test_outputs.py"],
        [],
    )
    mixed = read_tests("cp -r $TEST_DIR/data/* .\nsqlite3 db.sqlite < $TEST_DIR/schema.sql\npytest t.py\n")
    assert (mixed.setup, mixed.refusals) == (
        ["cp -r /tests/data/* .", "sqlite3 db.sqlite < /tests/schema.sql"],
        [],
    )
    refused = {
        "if [ -f /app/x.sql ]; then\n  sqlite3 db < /app/x.sql\nfi\npytest t.py\n": "sqlite3 db '<' /app/x.sql",
        "pytest t.py\npython3 after.py\n": "python3 after.py",
        "curl -o d.csv https://x.invalid/d.csv\npytest t.py\n": "curl -o d.csv https://x.invalid/d.csv",
        "python3 gen.py | tee log\npytest t.py\n": "python3 gen.py '|' tee log",
    }
    for text, step in refused.items():
        plan = read_tests(text)
        assert (plan.setup, plan.refusals) == (
            [],
            [f"a test-script step the checks cannot reproduce: {step}"],
        )


def test_solutions_that_need_the_network_are_named() -> None:
    assert (
        read_solution("#!/bin/bash\ncat > /app/x.py << 'EOF'\ncurl is only text here\nEOF\n").refusals == []
    )
    needs = read_solution("pip install pandas==2.2.3\ngit clone https://x.invalid/r.git\nuv sync\n")
    assert needs.pip == ["pandas==2.2.3"]
    assert [r.split(" (")[0] for r in needs.refusals] == [
        "the solution uses git",
        "the solution resolves packages with uv",
    ]


def test_solution_installs_become_the_environment() -> None:
    """uv's installer, `uv init` / `uv add` and apt installs of packages this machine has are
    provided up front; a Debian package it lacks is a refusal."""
    needs = read_solution(
        "curl -LsSf https://x.invalid/uv/0.7.13/install.sh | sh\nuv init\nuv add pandas pyarrow\n"
        "apt-get update && apt-get install -y coreutils\nuv run convert.py\n"
    )
    assert (needs.pip, needs.apt, needs.refusals) == (["pandas", "pyarrow"], ["coreutils"], [])
    assert read_solution("apt-get install -y assay-no-such-package\n").refusals == [
        "the solution installs Debian packages this machine does not have (assay-no-such-package):"
        " it needs root and the network"
    ]


def test_uv_is_stood_in_for_in_the_image() -> None:
    """uv copied from its image, fetched by its installer, run by its path: the environment is uv;
    `uv init` makes nothing, `uv add` installs, `uv run` is a build step. Its script's inline
    dependencies (PEP 723) join the environment."""
    build = dockerfile.read(
        "FROM python:3.12\nCOPY --from=registry.invalid/astral-sh/uv:0.8 /uv /uvx /bin/\nWORKDIR /app\n"
        "RUN curl -LsSf https://x.invalid/uv/install.sh | sh\nRUN /root/.local/bin/uv init\n"
        "RUN /root/.local/bin/uv add pandas==2.1.4\nRUN uv run gen.py\n"
    )
    assert (build.refusals, build.packages.pip, [s.script for s in build.steps]) == (
        [],
        ["pandas==2.1.4"],
        ["uv run gen.py"],
    )
    assert build.notes == ["COPY of uv from its image left out: the environment stands in for uv"]
    assert dockerfile.read("FROM python:3.12\nWORKDIR /app\nRUN uv tool install ruff\n").refusals == [
        "RUN step the importer cannot reproduce: uv tool install ruff"
    ]
    assert script_packages(
        '# /// script\n# dependencies = [\n#   "datasets==3.6.0",\n# ]\n# ///\nimport x\n'
    ) == ["datasets==3.6.0"]
    assert script_packages("import x\n") == []


def test_tests_that_talk_to_a_server_the_solution_leaves_running_are_refused(tmp_path: Path) -> None:
    assert terminal_bench.read(TB / "leaves-server", task_id="s").refusals == [
        "the tests talk to a server the solution leaves running (cd /app/site && nohup python3 -m"
        " http.server 8765 > /dev/null 2>&1 &): a check sees the files the agent left, not the processes"
        " it started"
    ]
    quiet = tmp_path / "quiet"
    shutil.copytree(TB / "leaves-server", quiet)
    (quiet / "tests" / "test_outputs.py").write_text(
        "def test_page():\n    assert open('/app/site/index.html')\n"
    )
    assert terminal_bench.read(quiet, task_id="q").refusals == []  # a background job the tests ignore
    assert read_solution("a && b &\nc 2>&1\nd &&\n e\n").background == ["a && b &"]


def test_split_commands_keeps_quotes_across_lines() -> None:
    assert split_commands("a && b 'x\ny' ; c | d\n# note\ne") == [
        ["a"],
        ["b", "x\ny"],
        ["c", "|", "d"],
        ["e"],
    ]


def test_terminal_bench_task_reads_and_refusals() -> None:
    task = terminal_bench.read(TB / "csv-summary", task_id="t-csv-summary")
    assert task.refusals == []
    assert (task.workdir, task.timeout_s, task.check_timeout_s) == ("/app", 120.0, 60.0)
    assert task.env == {"GREETING": "hello", "PYTHONPATH": "/app:", "TEST_DIR": "/tests"}
    assert task.meta["difficulty"] == "easy" and "instruction" not in task.meta
    assert requirements(task) == ["pytest"]
    reasons = {
        name: terminal_bench.read(TB / name, task_id=name).refusals[0]
        for name in ("needs-server", "no-solution")
    }
    assert reasons == {
        "needs-server": "extra compose services (client, server): the task needs more than one container",
        "no-solution": "no solution.sh: the reference cannot be made",
    }
    generated = terminal_bench.read(TB / "generates-data", task_id="generates-data")
    assert generated.refusals == []
    assert requirements(generated) == ["pytest"] and generated.solution_needs.apt == ["coreutils"]
    assert terminal_bench.dataset_tasks(TB) == [
        TB / n
        for n in (
            "csv-summary",
            "fills-gaps",
            "generates-data",
            "leaves-server",
            "needs-server",
            "no-solution",
            "regenerates-data",
        )
    ]


def test_heavy_packages_are_refused_never_installed(tmp_path: Path) -> None:
    """A task that installs or imports a machine-learning framework is refused with what names it."""
    named = tmp_path / "named"
    shutil.copytree(TB / "csv-summary", named)
    docker = named / "Dockerfile"
    docker.write_text(docker.read_text() + "RUN pip install numpy torch==2.7.1\n")
    imported = tmp_path / "imported"
    shutil.copytree(TB / "csv-summary", imported)
    (imported / "tests" / "test_model.py").write_text("import os\nfrom transformers import AutoModel\n")
    assert terminal_bench.read(named, task_id="named").refusals == [
        "the image installs torch==2.7.1: heavy packages are never installed by an import"
    ]
    assert terminal_bench.read(imported, task_id="imported").refusals == [
        "tests/test_model.py imports transformers: heavy packages are never installed by an import"
    ]


def test_harbor_task_reads() -> None:
    task = harbor.read(FIXTURES / "harbor" / "word-count", task_id="word-count")
    assert task.refusals == []
    assert (task.name, task.workdir, task.timeout_s, task.check_timeout_s, task.cpus, task.memory_mb) == (
        "assay/word-count",
        "/app",
        120.0,
        60.0,
        1.0,
        2048,
    )
    assert task.solution_dir == FIXTURES / "harbor" / "word-count" / "solution"
    assert task.meta["metadata"] == {"difficulty": "easy", "category": "programming"}


def test_scenario_doc_and_escaped_prompt() -> None:
    task = terminal_bench.read(TB / "csv-summary", task_id="t-csv-summary")
    doc = scenario_doc(task, ["/data"], family="t", tags=["terminal-bench", "t"], source="s")
    assert doc["workdir"] == "/app"
    assert doc["mounts"] == [
        {"path": "/data", "from": "mounts/data", "writable": True},
        {"path": "/tests", "from": "tests", "hidden": True},
    ]
    assert doc["environment"] == {"python": "3.11", "pip": ["pytest"]}
    assert doc["checks"] == [
        {"id": "tests", "kind": "pytest", "tests": ["/tests/test_outputs.py"], "timeout_s": 60.0}
    ]
    assert doc["limits"] == {"timeout_s": 120.0}
    assert escape_template("a {{ b }} {% endraw %}") == (
        "{% raw %}a {{ b }} {% endraw %}{{ '{% endraw %}' }}{% raw %}{% endraw %}"
    )
    assert escape_template("plain") == "plain"


def test_escaped_prompts_render_to_themselves() -> None:
    """Whatever the instruction holds: Jinja of its own, raw blocks with whitespace control."""
    for text in (
        "Write `{{region}}: {{total}}` lines.\n",
        "Fix the template:\n{% raw %}{{ x }}{%- endraw %}\n{%endraw%} and {%+ endraw -%}\n",
        "{# a comment #} {% if x %}y{% endif %} {{ 'quoted' }} \\n\n",
        "no syntax at all, only { braces } and %\n",
    ):
        assert render(escape_template(text), {}) == text, text


def test_a_multi_step_harbor_task_is_listed_and_refused(tmp_path: Path) -> None:
    """Its instructions live under steps/: it is listed with its reason, never passed over."""
    task = tmp_path / "tasks" / "steps-task"
    shutil.copytree(FIXTURES / "harbor" / "word-count", task)
    (task / "instruction.md").unlink()
    (task / "steps" / "one").mkdir(parents=True)
    (task / "steps" / "one" / "instruction.md").write_text("Count.\n")
    assert harbor.dataset_tasks(tmp_path / "tasks") == [task]
    assert harbor.read(task, task_id="s").refusals[0] == (
        "a multi-step task (steps/): one instruction per scenario is imported"
    )


TB_SERVICE = """\
services:
  client:
    build: { dockerfile: Dockerfile }
    image: ${T_BENCH_TASK_DOCKER_CLIENT_IMAGE_NAME}
    environment:
      - TEST_DIR=${T_BENCH_TEST_DIR}
      - MODE=strict
      - LOGS=${T_BENCH_CONTAINER_LOGS_PATH}
"""


def _tb_task(tmp_path: Path, compose: str) -> terminal_bench.Task:
    task = tmp_path / "task"
    shutil.copytree(TB / "csv-summary", task)
    (task / "docker-compose.yaml").write_text(compose)
    return terminal_bench.read(task, task_id="t")


def test_terminal_bench_compose_gives_env_and_limits(tmp_path: Path) -> None:
    task = _tb_task(tmp_path, TB_SERVICE + "    cpus: '1.5'\n    mem_limit: 1g\n")
    assert task.refusals == []
    assert (task.cpus, task.memory_mb) == (1.5, 1024)
    assert task.env["MODE"] == "strict" and task.env["TEST_DIR"] == "/tests"
    assert "LOGS" not in task.env  # Terminal-Bench's own plumbing, not the task's
    deployed = TB_SERVICE + "    deploy: { resources: { limits: { cpus: '2', memory: 536870912 } } }\n"
    assert (_tb_task(tmp_path / "b", deployed).memory_mb, _tb_task(tmp_path / "c", deployed).cpus) == (
        512,
        2.0,
    )


def test_terminal_bench_environments_not_reproduced_here_are_refused(tmp_path: Path) -> None:
    """A GPU, an image built elsewhere: refused with the reason, never imported broken."""
    gpu = TB_SERVICE + (
        "    deploy:\n      resources:\n        reservations:\n"
        "          devices: [{ driver: nvidia, count: 1, capabilities: [gpu] }]\n"
    )
    cases = {
        gpu: "the task asks for a GPU",
        TB_SERVICE + "    runtime: nvidia\n": "the task asks for a GPU",
        "services:\n  client:\n    image: acme/prebuilt:1\n": (
            "the task container is the image 'acme/prebuilt:1', built elsewhere"
        ),
    }
    for i, (compose, reason) in enumerate(cases.items()):
        assert _tb_task(tmp_path / str(i), compose).refusals == [reason], compose


def _harbor_task(tmp_path: Path, toml_extra: str = "", *, drop: tuple[str, ...] = ()) -> harbor.Task:
    task = tmp_path / "task"
    shutil.copytree(FIXTURES / "harbor" / "word-count", task)
    for rel in drop:
        (task / rel).unlink()
    toml = (task / "task.toml").read_text()
    (task / "task.toml").write_text(toml + toml_extra)
    return harbor.read(task, task_id="h")


def test_harbor_env_memory_spelling_and_workdir(tmp_path: Path) -> None:
    base = (FIXTURES / "harbor" / "word-count" / "task.toml").read_text()
    task = tmp_path / "task"
    shutil.copytree(FIXTURES / "harbor" / "word-count", task)
    (task / "task.toml").write_text(
        base.replace("memory_mb = 2048", 'memory = "4G"\nworkdir = "/srv/work"')
        + '\n[environment.env]\nLANG_MODE = "plain"\n\n[verifier.env]\nSTRICT = "1"\n'
    )
    read = harbor.read(task, task_id="h")
    assert read.refusals == []
    assert (read.memory_mb, read.workdir) == (4096, "/srv/work")
    assert read.env == {"LANG_MODE": "plain", "TEST_DIR": "/tests"} and read.check_env == {"STRICT": "1"}


def test_harbor_environments_not_reproduced_here_are_refused(tmp_path: Path) -> None:
    two = "services:\n  main: { build: . }\n  db: { image: postgres }\n"
    (tmp_path / "c").mkdir()
    compose = _harbor_task(tmp_path / "c")
    (compose.context / "docker-compose.yaml").write_text(two)
    cases = {
        "gpus": (_harbor_task(tmp_path / "g", "gpus = 1\n"), "the task asks for 1 GPU(s)"),
        "image": (
            _harbor_task(tmp_path / "i", 'docker_image = "acme/task:1"\n', drop=("environment/Dockerfile",)),
            "a custom base image (acme/task:1): nothing here provides it",
        ),
        "compose": (
            harbor.read(compose.root, task_id="h"),
            "extra compose services (db, main): the task needs more than one container",
        ),
        "host variable": (
            _harbor_task(tmp_path / "v", '\n[environment.env]\nKEY = "${API_KEY}"\n'),
            "environment variable KEY comes from the host (${API_KEY}); the sandbox never passes host"
            " variables in",
        ),
    }
    for name, (task, reason) in cases.items():
        assert task.refusals[:1] == [reason], name
