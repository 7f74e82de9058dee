"""tools/suite_cost.py: each process reports its compile time per program and test file,
and the tables add them up."""

import ast
import os
import subprocess
import sys

import suite_cost


def test_a_process_reports_its_compiling_per_program_at_exit(tmp_path):
    (tmp_path / "sitecustomize.py").write_text(suite_cost.SITECUSTOMIZE)
    log = tmp_path / "processes.log"
    env = os.environ | {
        "PYTHONPATH": str(tmp_path),
        suite_cost.LOG_VAR: str(log),
        "JAX_COMPILATION_CACHE_DIR": str(tmp_path / "xla"),  # empty: compiled, then read
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
    }
    code = "import jax; jax.jit(lambda x: x * 2 + 1)(1.0)"
    for _ in range(2):
        subprocess.run([sys.executable, "-c", code], env=env, check=True)
    first, second = (ast.literal_eval(line) for line in log.read_text().splitlines())
    assert first["xla"] > 0 and first["trace"] > 0 and first["lower"] > 0
    assert first["cpu"] >= first["xla"] * 0.5 and first["argv"] == "-c"
    here = "tests/scripts/test_suite_cost.py"  # the test that started the processes
    seconds, compiled, read = first["programs"][(here, "<lambda>")]
    assert seconds > 0 and (compiled, read) == (1, 0)
    assert second["programs"][(here, "<lambda>")][1:] == [0, 1]


def test_the_tables_add_the_processes_up_heaviest_first():
    rows = [
        {"xla": 3.0, "trace": 1.0, "lower": 1.0, "cpu": 8.0, "argv": "jaxzero train",
         "programs": {("tests/a.py", "step"): [4.0, 1, 1], ("tests/a.py", "add"): [1.0, 4, 0]}},
        {"xla": 1.0, "trace": 0.5, "lower": 0.5, "cpu": 12.0, "argv": "",
         "programs": {("tests/b.py", "step"): [2.0, 1, 1]}},
    ]  # fmt: skip
    table = suite_cost.summarise([repr(row) for row in rows]).splitlines()
    assert table[0] == (
        "2 processes, 20 CPU s; compiling 7 s (35%): XLA 4 s, tracing 2 s, lowering 2 s"
    )
    assert table[1] == "programs compiled 6, read from the compilation cache 2"
    assert table[4].split() == ["12.0", "2.0", "(python", "-c)"]
    assert table[5].split() == ["8.0", "5.0", "jaxzero", "train"]
    programs = table[table.index(next(t for t in table if t.endswith("  program"))) + 1 :]
    assert [line.split() for line in programs[:2]] == [
        ["6.0", "2", "2", "step"],
        ["1.0", "4", "0", "add"],
    ]
    files = table[table.index(next(t for t in table if t.endswith("  test file"))) + 1 :]
    assert [line.split()[-1] for line in files] == ["tests/a.py", "tests/b.py"]
    assert files[0].split()[:3] == ["5.0", "5", "1"]
