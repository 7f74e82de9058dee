"""``jaxzero train --grid`` of a setting that fixes a shape or the code: a study, each arm a
population trained in ``DIR/arms/NAME`` (:mod:`jaxzero.run.study`), one after another or
``--jobs J`` at once."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import typer

from jaxzero.cli.app import console, fail
from jaxzero.run.study import Study


def train_study(
    run_dir: Path,
    study: Study | None,
    budget: dict[str, Any],
    force: bool,
    members_at_once: int | None,
    trust: bool | list[str],
    jobs: int = 1,
    only: str | None = None,
) -> None:
    """Train a new ``study`` in ``run_dir``, or (None) go on with the one there
    (:func:`jaxzero.run.study.train_study`), ``jobs`` arms at a time, each with its
    share of ``--seconds`` and all of ``--iterations``; ``only`` one arm."""
    from jaxzero.cli.train import _progress_line
    from jaxzero.run.checkpoint import CheckpointError
    from jaxzero.run.driver import RunDirError
    from jaxzero.run.files import FileProblem
    from jaxzero.run.study import open_study
    from jaxzero.run.study import train_study as train_arms
    from jaxzero.run.ways import use_host_cores

    use_host_cores()  # a CPU's cores as devices: each arm's members split over them
    try:
        if jobs > 1 and only is None:
            study = open_study(run_dir, study, force=force, trust_code=trust)
            console.print(f"study of {len(study.arms)} arms in {run_dir}: {', '.join(study.arms)}")
            rounds = -(-len(study.arms) // jobs)  # the arms' turns on the cores
            seconds = budget["seconds"] and budget["seconds"] / rounds
            _arms_at_once(run_dir, list(study.arms), seconds, budget["iterations"], force,
                          members_at_once, trust, jobs)  # fmt: skip
        else:
            results = train_arms(
                run_dir, study, seconds=budget["seconds"], iterations=budget["iterations"],
                force=force, members_at_once=members_at_once, trust_code=trust,
                on_log=lambda metrics: console.print(_progress_line(metrics), highlight=False),
                log=console.print, only=only,
            )  # fmt: skip
            stopped = [r for r in results.values() if r.interrupted]
            if stopped:
                console.print(f"resume:  jaxzero train --resume --out {run_dir}")
                raise typer.Exit(128 + (stopped[0].signal or 2))
    except (RunDirError, CheckpointError, FileProblem, ValueError, OSError) as error:
        fail(str(error))
    if only is None:
        console.print(f"report:  jaxzero report {run_dir}   (the arms compared)")
        console.print(f"resume:  jaxzero train --resume --out {run_dir}")


def _arms_at_once(
    run_dir: Path,
    names: list[str],
    seconds: float | None,
    iterations: int | None,
    force: bool,
    members_at_once: int | None,
    trust: bool | list[str],
    jobs: int,
) -> None:
    """The arms, ``jobs`` at a time, each a ``jaxzero train --arm NAME`` process on its own
    share of the CPUs (its members split over them), its lines prefixed by its name."""
    cpus = sorted(os.sched_getaffinity(0))
    share = max(1, len(cpus) // jobs)
    groups = [cpus[i * share : (i + 1) * share] or cpus for i in range(jobs)]
    waiting, failed = list(names), []
    running: dict[subprocess.Popen, tuple[int, str]] = {}  # process: (its CPU group, arm)
    while waiting or running:
        while waiting and len(running) < jobs:
            free = next(i for i in range(jobs) if i not in [g for g, _ in running.values()])
            name = waiting.pop(0)
            command = [
                sys.executable,
                "-m",
                "jaxzero",
                "train",
                "--out",
                str(run_dir),
                "--arm",
                name,
                *_passed(seconds, iterations, force, members_at_once, trust),
            ]
            running[_start(command, name, groups[free])] = (free, name)  # fmt: skip
        done = next((p for p in running if p.poll() is not None), None)
        if done is None:
            threading.Event().wait(0.2)
            continue
        _, name = running.pop(done)
        if done.returncode:
            failed.append(f"{name} (exit {done.returncode})")
    if failed:
        fail(f"arms that did not finish: {', '.join(failed)}; see their lines above")


def _passed(
    seconds: float | None,
    iterations: int | None,
    force: bool,
    members_at_once: int | None,
    trust: bool | list[str],
) -> list[str]:
    """The options an arm's process is given."""
    options = [] if seconds is None else ["--seconds", repr(seconds)]
    options += [] if iterations is None else ["--iterations", str(iterations)]
    options += ["--force"] if force else []
    options += [] if members_at_once is None else ["--members-at-once", str(members_at_once)]
    return options + (["--trust-code"] if trust is True else [])


def _start(command: list[str], name: str, cpus: list[int]) -> subprocess.Popen:
    """``command`` pinned to ``cpus``, each core a device, its output echoed as
    ``[NAME] line``."""
    env = os.environ | {"JAXZERO_HOST_DEVICES": str(len(cpus))}
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        preexec_fn=lambda: os.sched_setaffinity(0, cpus),
    )  # fmt: skip

    def echo() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            print(f"[{name}] {line}", end="", flush=True)

    threading.Thread(target=echo, daemon=True).start()
    return process
