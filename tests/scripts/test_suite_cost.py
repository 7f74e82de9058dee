"""tools/suite_cost.py: each process reports its compile time, and the table adds them up."""

import ast
import os
import subprocess
import sys

import suite_cost


def test_a_process_reports_its_compiling_at_exit(tmp_path):
    (tmp_path / "sitecustomize.py").write_text(suite_cost.SITECUSTOMIZE)
    log = tmp_path / "processes.log"
    env = os.environ | {"PYTHONPATH": str(tmp_path), suite_cost.LOG_VAR: str(log)}
    code = "import jax; jax.jit(lambda x: x * 2 + 1)(1.0)"
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    (line,) = log.read_text().splitlines()
    row = ast.literal_eval(line)
    assert row["xla"] > 0 and row["trace"] > 0 and row["lower"] > 0
    assert row["cpu"] >= row["xla"] * 0.5 and row["argv"] == "-c"


def test_the_table_adds_the_processes_up_heaviest_first():
    rows = [
        {"xla": 3.0, "trace": 1.0, "lower": 1.0, "cache_hits": 2, "cache_misses": 5,
         "cpu": 8.0, "argv": "jaxzero train"},
        {"xla": 1.0, "trace": 0.5, "lower": 0.5, "cache_hits": 0, "cache_misses": 1,
         "cpu": 12.0, "argv": ""},
    ]  # fmt: skip
    table = suite_cost.summarise([repr(row) for row in rows]).splitlines()
    assert table[0] == (
        "2 processes, 20 CPU s; compiling 7 s (35%): XLA 4 s, tracing 2 s, lowering 2 s"
    )
    assert table[1] == "programs compiled 6, read from the compilation cache 2"
    assert table[4].split() == ["12.0", "2.0", "(python", "-c)"]
    assert table[5].split() == ["8.0", "5.0", "jaxzero", "train"]
