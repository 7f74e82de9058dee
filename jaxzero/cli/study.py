"""``jaxzero train --grid`` of a setting that fixes a shape or the code: a study, each arm a
population trained in ``DIR/arms/NAME`` by the library's
:func:`jaxzero.run.studies.study.train_study`, one after another or ``--jobs J`` at once;
this module prints what it does and the commands that go on from it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from jaxzero.cli.app import console, fail
from jaxzero.cli.progress import progress_line, wandb_hooks
from jaxzero.run.studies.study import Study


def study_command(
    run_dir: Path,
    study: Study | None,
    budget: dict[str, Any],
    force: bool,
    members_at_once: int | None,
    trust: bool | list[str],
    jobs: int = 1,
    only: str | None = None,
    wandb: str | None = None,
) -> None:
    """Train a new ``study`` in ``run_dir``, or (None) go on with the one there
    (:func:`jaxzero.run.studies.study.train_study`), ``jobs`` arms at a time, each with its
    share of ``--seconds`` and all of ``--iterations``; ``only`` one arm; ``wandb``: each
    arm logged to that Weights & Biases project. Prints how each arm stopped and the
    commands that go on; exits 128 + the signal that stopped an arm, or 2 when one failed."""
    from jaxzero.run.folder.files import FileProblem
    from jaxzero.run.life.checkpoint import CheckpointError
    from jaxzero.run.life.driver import RunDirError, TrainResult
    from jaxzero.run.life.ways import use_host_cores
    from jaxzero.run.studies.study import train_study

    use_host_cores()  # a CPU's cores as devices: each arm's members split over them
    try:
        wandb_hooks(wandb, run_dir)  # without the extra: refused before any arm starts
        results = train_study(
            run_dir, study, seconds=budget["seconds"], iterations=budget["iterations"],
            force=force, members_at_once=members_at_once, trust_code=trust,
            on_log=lambda metrics: console.print(progress_line(metrics), highlight=False),
            log=lambda line: console.print(line, highlight=False, markup=False, soft_wrap=True),
            only=only,
            hooks=lambda name, folder: wandb_hooks(wandb, folder, group=run_dir.name),
            jobs=jobs,
            options=["--wandb", wandb] if wandb else [],
        )  # fmt: skip
    except (RunDirError, CheckpointError, FileProblem, ValueError, OSError) as error:
        fail(str(error))
    for name, result in results.items():
        if isinstance(result, TrainResult):
            how = "interrupted" if result.interrupted else "stopped"
            console.print(f"arm {name}: {how} at iteration {result.iterations} after "
                          f"{result.seconds:.0f}s; checkpoint saved", highlight=False)  # fmt: skip
    # an arm in this process stops with its result; one in a process of its own (--jobs)
    # with 128 + the signal it saved on, or another code when it failed
    ended = results.values()
    signals = [r.signal or 2 for r in ended if isinstance(r, TrainResult) and r.interrupted]
    signals += [r - 128 for r in ended if isinstance(r, int) and r - 128 in (2, 15)]
    failed = [f"{name} (exit {r})" for name, r in results.items()
              if isinstance(r, int) and r and r - 128 not in (2, 15)]  # fmt: skip
    if signals or failed:
        console.print(f"resume:  jaxzero train --resume --out {run_dir}")
    if failed:
        fail(f"arms that did not finish: {', '.join(failed)}; see their lines above")
    if signals:
        raise typer.Exit(128 + signals[0])
    if only is None:
        console.print(f"report:  jaxzero report {run_dir}   (the arms compared)")
        console.print(f"resume:  jaxzero train --resume --out {run_dir}")
