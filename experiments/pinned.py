"""Run commands as parallel processes, each pinned to CPUs of its own.

    groups = cpu_groups(2)                                   # ValueError for a bad count
    run_pinned([["jaxzero", "train", "tic_tac_toe", "--out", "a"], ...],
               logs=[Path("a.txt"), ...], jobs=2)

The commands run ``jobs`` at a time; each gets one of :func:`cpu_groups`' disjoint CPU
groups, so concurrent runs never share cores and equal wall time means equal compute. A
process on a single CPU also gets single-threaded XLA (``XLA_FLAGS``). The pinning is
done by a trampoline (this file run as a script, ``python experiments/pinned.py CPUS
COMMAND...``, which sets its affinity and execs the command, affinity inherited; by path,
so it needs no package on the path) so that the command needs no flag of
its own and the parent, maybe multithreaded by JAX already, runs no Python between fork
and exec. The first failure kills the others and raises, naming its log.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import NoReturn

SINGLE_THREAD_XLA = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"


def cpu_groups(jobs: int) -> list[list[int]]:
    """This process's CPUs dealt into disjoint groups, one per concurrent process.

    Args:
        jobs: how many processes will run at once.

    Returns:
        ``jobs`` lists of CPU ids, together every CPU this process may use.

    Raises:
        ValueError: ``jobs`` is below 1 or above the number of CPUs.
    """
    cpus = sorted(os.sched_getaffinity(0))
    if not 1 <= jobs <= len(cpus):
        raise ValueError(
            f"--jobs {jobs}: this process may use {len(cpus)} CPUs; give 1..{len(cpus)} "
            "(each concurrent run gets CPUs of its own)"
        )
    return [cpus[i::jobs] for i in range(jobs)]


def launch(
    command: Sequence[str], cpus: Sequence[int], log: Path, cwd: Path | None = None
) -> subprocess.Popen:
    """Start ``command`` on ``cpus`` only, its stdout and stderr into ``log``.

    Args:
        command: the program and its arguments.
        cpus: the CPU ids it may run on; with one, XLA runs single-threaded too.
        log: the file that receives its output (replaced).
        cwd: its working directory (default: this process's).

    Returns:
        The started process (the trampoline, which becomes ``command``).
    """
    env = dict(os.environ)
    if len(cpus) == 1:
        env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} {SINGLE_THREAD_XLA}".strip()
    pinned = [sys.executable, str(Path(__file__).resolve()), ",".join(map(str, cpus)), *command]
    with open(log, "w") as f:
        return subprocess.Popen(pinned, stdout=f, stderr=subprocess.STDOUT, env=env, cwd=cwd)


def run_pinned(
    commands: Sequence[Sequence[str]],
    logs: Sequence[Path],
    jobs: int,
    *,
    names: Sequence[str] | None = None,
    log: Callable[[str], None] = print,
    cwd: Path | None = None,
) -> None:
    """Run every command, ``jobs`` at a time, each pinned to its own CPU group.

    Args:
        commands: argument lists, started in this order.
        logs: one output file per command.
        jobs: commands at a time (see :func:`cpu_groups`).
        names: what ``log`` reports for each command (default: its index).
        log: receives a line as each command starts and finishes.
        cwd: the commands' working directory (default: this process's).

    Raises:
        ValueError: a bad ``jobs``, before anything starts.
        RuntimeError: on the first command that fails, naming its log; the others are
            killed.
    """
    free = cpu_groups(jobs)
    names = [str(i) for i in range(len(commands))] if names is None else names
    waiting = list(range(len(commands)))
    running: dict[subprocess.Popen, tuple[int, list[int]]] = {}  # process -> (command, CPUs)
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


def _wait_any(running: Mapping[subprocess.Popen, object]) -> subprocess.Popen:
    while True:
        for process in running:
            if process.poll() is not None:
                return process
        time.sleep(0.5)


def pin_and_exec(argv: Sequence[str]) -> NoReturn:
    """The trampoline: pin this process to some CPUs, then become a command.

    Args:
        argv: ``CPUS COMMAND...``, CPUS a comma-separated list of CPU ids.

    Raises:
        SystemExit: ``argv`` names no command (a usage line).
    """
    if len(argv) < 2:
        raise SystemExit(f"expected CPU[,CPU...] COMMAND [ARG...], got {' '.join(argv)!r}")
    cpus, *command = argv
    os.sched_setaffinity(0, [int(cpu) for cpu in cpus.split(",")])
    os.execvp(command[0], command)


if __name__ == "__main__":
    pin_and_exec(sys.argv[1:])
