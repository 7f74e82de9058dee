"""Where the test suite's CPU time goes: compiling (tracing, lowering, XLA) or the rest, in
the pytest workers and in every Python process the tests start.

    python tools/suite_cost.py                    # the whole suite, as `make test` runs it
    python tools/suite_cost.py tests/core -n 1    # pytest's own arguments

The suite compiles into an empty compilation cache, as on a clean clone (one of its own,
removed after; the checkout's ``.pytest_cache/xla`` is neither read nor changed).

Each process the suite starts reports at its exit (a ``sitecustomize`` on PYTHONPATH that
registers listeners for JAX's own compile events, ``jax.monitoring``): its CPU seconds, its
compile seconds and its compilation-cache hits and misses. A process that replaces
PYTHONPATH, or exits without running ``atexit`` (killed, ``os._exit``), is not counted;
its time still shows in the suite's CPU total that ``/usr/bin/time`` gives. The compile
durations are wall seconds within each process: with two busy cores they run a little
over the CPU they take.
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
EVENTS = {  # jax.monitoring's names -> ours
    "/jax/core/compile/backend_compile_duration": "xla",
    "/jax/core/compile/jaxpr_trace_duration": "trace",
    "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower",
    "/jax/compilation_cache/cache_hits": "cache_hits",
    "/jax/compilation_cache/cache_misses": "cache_misses",
}
# Imported first by every Python process that finds it on PYTHONPATH: JAX's events counted
# from the moment jax._src.monitoring loads, one line written at exit.
SITECUSTOMIZE = f'''
import atexit, os, sys, time
EVENTS = {EVENTS!r}
totals = dict.fromkeys(EVENTS.values(), 0.0)

def _count(event, *duration, **_):
    if event in EVENTS:
        totals[EVENTS[event]] += duration[0] if duration else 1

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
    line = dict(totals, cpu=times.user + times.system, argv=" ".join(sys.argv)[:160])
    with open(os.environ["{LOG_VAR}"], "a") as log:
        log.write(repr(line) + "\\n")

sys.meta_path.insert(0, _Listen())
atexit.register(_report)
'''


def summarise(lines: list[str]) -> str:
    """The processes' reports (one ``repr(dict)`` a line) as a table, heaviest first."""
    rows = [ast.literal_eval(line) for line in lines if line.strip()]
    total: Counter[str] = Counter()
    for row in rows:
        total.update({k: v for k, v in row.items() if k != "argv"})
    compile_s = total["xla"] + total["trace"] + total["lower"]
    out = [
        f"{len(rows)} processes, {total['cpu']:.0f} CPU s; compiling {compile_s:.0f} s "
        f"({compile_s / max(total['cpu'], 1e-9):.0%}): XLA {total['xla']:.0f} s, tracing "
        f"{total['trace']:.0f} s, lowering {total['lower']:.0f} s",
        f"programs compiled {total['cache_misses']:.0f}, read from the compilation cache "
        f"{total['cache_hits']:.0f}",
        "",
        f"{'CPU s':>7} {'compile s':>9}  process",
    ]
    rows.sort(key=lambda row: -row["cpu"])
    for row in rows[:15]:
        compiled = row["xla"] + row["trace"] + row["lower"]
        out.append(f"{row['cpu']:7.1f} {compiled:9.1f}  {row['argv'] or '(python -c)'}")
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
