"""Run commands as parallel processes, each pinned to CPUs of its own.

    groups = cpu_groups(2)                                   # ValueError for a bad count
    run_pinned([[sys.executable, "-m", "experiments.x", "--arm", "a"], ...],
               logs=[Path("a/log.txt"), ...], jobs=2)

The commands run ``jobs`` at a time; each gets one of :func:`cpu_groups`' disjoint CPU
groups, so concurrent runs never share cores and equal wall time means equal compute. A
process on a single CPU also gets single-threaded XLA (``XLA_FLAGS``). The pinning is
done by a trampoline (``python -m experiments.runner CPUS COMMAND...``, which sets its
affinity and execs the command, affinity inherited) so that the command needs no flag of
its own and the parent, maybe multithreaded by JAX already, runs no Python between fork
and exec. The first failure kills the others and raises, naming its log.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SINGLE_THREAD_XLA = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"


def cpu_groups(jobs: int) -> list[list[int]]:
    """This process's CPUs dealt into ``jobs`` disjoint groups, one per concurrent process."""
    cpus = sorted(os.sched_getaffinity(0))
    if not 1 <= jobs <= len(cpus):
        raise ValueError(
            f"--jobs {jobs}: this process may use {len(cpus)} CPUs; give 1..{len(cpus)} "
            "(each concurrent run gets CPUs of its own)"
        )
    return [cpus[i::jobs] for i in range(jobs)]


def launch(command: Sequence[str], cpus: list[int], log: Path, cwd: Path = ROOT):
    """Start ``command`` on ``cpus`` only, its stdout and stderr into ``log``."""
    env = dict(os.environ)
    if len(cpus) == 1:
        env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} {SINGLE_THREAD_XLA}".strip()
    pinned = [sys.executable, "-m", "experiments.runner", ",".join(map(str, cpus)), *command]
    with open(log, "w") as f:
        return subprocess.Popen(pinned, stdout=f, stderr=subprocess.STDOUT, env=env, cwd=cwd)


def run_pinned(
    commands: Sequence[Sequence[str]],
    logs: Sequence[Path],
    jobs: int,
    *,
    names: Sequence[str] | None = None,
    log: Callable[[str], None] = print,
    cwd: Path = ROOT,
) -> None:
    """Run every command (an argument list), ``jobs`` at a time, each pinned to its own CPU
    group and writing into its log; RuntimeError on the first that fails (the others are
    killed). ``names`` (default: the command's index) are what ``log`` reports."""
    free = cpu_groups(jobs)
    names = [str(i) for i in range(len(commands))] if names is None else names
    waiting, running = list(range(len(commands))), {}
    try:
        while waiting or running:
            while waiting and free:
                i, cpus = waiting.pop(0), free.pop(0)
                running[launch(commands[i], cpus, logs[i], cwd)] = (i, cpus)
                log(f"  started {names[i]} on CPUs {cpus}")
            process = _wait_any(running)
            i, cpus = running.pop(process)
            free.append(cpus)
            if process.returncode != 0:
                raise RuntimeError(f"{names[i]} failed (exit {process.returncode}); see {logs[i]}")
            log(f"  finished {names[i]}")
    finally:
        for process in running:
            process.kill()


def _wait_any(running: dict[subprocess.Popen, object]) -> subprocess.Popen:
    while True:
        for process in running:
            if process.poll() is not None:
                return process
        time.sleep(0.5)


def pin_and_exec(argv: Sequence[str]) -> None:
    """The trampoline: ``argv`` is ``CPUS COMMAND...``; pin to CPUS, become COMMAND."""
    cpus, *command = argv
    os.sched_setaffinity(0, [int(cpu) for cpu in cpus.split(",")])
    os.execvp(command[0], command)


if __name__ == "__main__":
    pin_and_exec(sys.argv[1:])
