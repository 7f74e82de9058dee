"""Where the test suite's CPU time goes: compiling (tracing, lowering, XLA) or the rest, in
the pytest workers and in every Python process the tests start; which programs cost the
compiling, and which test files.

    python tools/suite_cost.py                    # the whole suite, as `make test` runs it
    python tools/suite_cost.py tests/core -n 1    # pytest's own arguments

The suite compiles into an empty compilation cache, as on a clean clone (one of its own,
removed after; the checkout's ``.pytest_cache/xla`` is neither read nor changed). Every
process shares that cache, so a program is compiled once in the whole suite and read
from the cache after: "compiled" counts distinct programs, "read" the times one was
traced and lowered again in some process and found in the cache.

Each process the suite starts reports at its exit (a ``sitecustomize`` on PYTHONPATH that
registers listeners for JAX's own compile events, ``jax.monitoring``): its CPU seconds,
and per program (JAX's name for the jitted function: ``step``, ``_play``, a single op
such as ``broadcast_in_dim``) and test file (``PYTEST_CURRENT_TEST``, which the processes
a test starts inherit) its compile seconds, times compiled and times read. A process that
replaces PYTHONPATH, or exits without running ``atexit`` (killed, ``os._exit``), is not
counted; its time still shows in the suite's CPU total that ``/usr/bin/time`` gives. The
compile durations are wall seconds within each process: with two busy cores they run a
little over the CPU they take.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from jaxzero.run.life import compile_cache

ROOT = Path(__file__).resolve().parents[1]
LOG_VAR = "JAXZERO_SUITE_COST_LOG"
STAGES = ("xla", "trace", "lower")
# Imported first by every Python process that finds it on PYTHONPATH: JAX's events counted
# from the moment jax._src.monitoring loads, one line written at exit. Per compile, JAX
# reports tracing, then lowering, then (inside XLA's compile) a cache hit or miss, then
# XLA's duration: the hit or miss belongs to the XLA event that follows it.
SITECUSTOMIZE = f'''
import atexit, os, sys
STAGES = {{"/jax/core/compile/backend_compile_duration": "xla",
          "/jax/core/compile/jaxpr_trace_duration": "trace",
          "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower"}}
CACHE = {{"/jax/compilation_cache/cache_hits": "read",
         "/jax/compilation_cache/cache_misses": "compiled"}}
totals = dict.fromkeys(STAGES.values(), 0.0)
programs = {{}}  # (test file, program) -> [compile seconds, compiled, read]
found = [None]  # "read" or "compiled": the cache's answer for the compile under way

def _program(kwargs):
    name = str(kwargs.get("fun_name", "?"))
    name = name[4:-1] if name.startswith("jit(") and name.endswith(")") else name
    test = os.environ.get("PYTEST_CURRENT_TEST", "").split("::")[0] or "(outside a test)"
    return programs.setdefault((test, name), [0.0, 0, 0])

def _count(event, *duration, **kwargs):
    if event in CACHE:
        found[0] = CACHE[event]
    elif event in STAGES and duration:
        totals[STAGES[event]] += duration[0]
        program = _program(kwargs)
        program[0] += duration[0]
        if STAGES[event] == "xla":
            program[2 if found[0] == "read" else 1] += 1
            found[0] = None

class _Listen:
    def find_spec(self, name, path=None, target=None):
        if name != "jax._src.monitoring":
            return None
        sys.meta_path.remove(self)
        import importlib.util
        spec = importlib.util.find_spec(name)
        load = spec.loader.exec_module
        def exec_module(module):
            load(module)
            module.register_event_listener(_count)
            module.register_event_duration_secs_listener(_count)
        spec.loader.exec_module = exec_module
        return spec

def _report():
    times = os.times()
    line = dict(totals, cpu=times.user + times.system, argv=" ".join(sys.argv)[:160],
                programs=programs)
    with open(os.environ["{LOG_VAR}"], "a") as log:
        log.write(repr(line) + "\\n")

sys.meta_path.insert(0, _Listen())
atexit.register(_report)
'''


def summarise(lines: list[str], top: int = 15) -> str:
    """The processes' reports (one ``repr(dict)`` a line) as three tables, heaviest first:
    the processes, the programs, the test files."""
    rows = [ast.literal_eval(line) for line in lines if line.strip()]
    total: Counter[str] = Counter()
    by_program: dict[str, Counter[str]] = {}
    by_file: dict[str, Counter[str]] = {}
    for row in rows:
        total.update({stage: row[stage] for stage in (*STAGES, "cpu")})
        for (test, name), (seconds, compiled, read) in row["programs"].items():
            for key, table in ((name, by_program), (test, by_file)):
                table.setdefault(key, Counter()).update(
                    {"seconds": seconds, "compiled": compiled, "read": read}
                )
    compile_s = sum(total[stage] for stage in STAGES)
    compiled = sum(c["compiled"] for c in by_program.values())
    read = sum(c["read"] for c in by_program.values())
    out = [
        f"{len(rows)} processes, {total['cpu']:.0f} CPU s; compiling {compile_s:.0f} s "
        f"({compile_s / max(total['cpu'], 1e-9):.0%}): XLA {total['xla']:.0f} s, tracing "
        f"{total['trace']:.0f} s, lowering {total['lower']:.0f} s",
        f"programs compiled {compiled}, read from the compilation cache {read}",
        "",
        f"{'CPU s':>7} {'compile s':>9}  process",
    ]
    rows.sort(key=lambda row: -row["cpu"])
    for row in rows[:top]:
        seconds = sum(row[stage] for stage in STAGES)
        out.append(f"{row['cpu']:7.1f} {seconds:9.1f}  {row['argv'] or '(python -c)'}")
    for title, table in (("program", by_program), ("test file", by_file)):
        out += ["", f"{'compile s':>9} {'compiled':>8} {'read':>6}  {title}"]
        heaviest = sorted(table.items(), key=lambda item: -item[1]["seconds"])
        for key, c in heaviest[:top]:
            out.append(f"{c['seconds']:9.1f} {c['compiled']:8d} {c['read']:6d}  {key}")
    return "\n".join(out)


def main(pytest_args: list[str]) -> int:
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "sitecustomize.py").write_text(SITECUSTOMIZE)
        log = Path(folder, "processes.log")
        log.touch()
        paths = [folder, os.environ.get("PYTHONPATH", "")]
        cold = str(Path(folder, "xla"))  # tests/conftest.py's cache folder, empty
        env = os.environ | {
            LOG_VAR: str(log),
            "PYTHONPATH": os.pathsep.join(filter(None, paths)),
            compile_cache.ENV_VAR: cold,
            "JAX_COMPILATION_CACHE_DIR": cold,
        }
        args = pytest_args or ["-n", "2", "--dist", "loadfile"]
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", *args], cwd=ROOT, env=env)
        print(summarise(log.read_text().splitlines()))
    return done.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
