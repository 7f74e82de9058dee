"""The Python driver around the compiled iteration: run directory, logs, checkpoints.

The driver never touches the hot path: it calls ``trainer.iteration`` (one jitted
function), pulls the returned metrics to the host every ``log_every`` iterations, and
saves the whole TrainState every ``checkpoint_every`` iterations and when it stops
(time or iteration budget reached, or Ctrl-C).

A run directory holds ``config.json``, ``metrics.jsonl``, TensorBoard event files under
``tb/`` and orbax checkpoints under ``checkpoints/``. A directory that already holds a
run is never overwritten: resume it, or start over explicitly with ``force``.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import numpy as np

from jaxzero.checkpoint import Checkpointer, CheckpointError
from jaxzero.config import Config, config_from_dict, config_to_dict
from jaxzero.loop import Trainer, make_trainer

CONFIG_FILE = "config.json"
METRICS_FILE = "metrics.jsonl"


@functools.lru_cache(maxsize=8)
def cached_trainer(config: Config) -> Trainer:
    """One Trainer (and so one compiled iteration) per config within a process."""
    return make_trainer(config)


class RunDirError(RuntimeError):
    """The run directory cannot be used as asked; the message says how to fix it."""


@dataclasses.dataclass(frozen=True)
class TrainResult:
    run_dir: Path
    iterations: int  # the run's total iteration count when the driver stopped
    seconds: float  # wall time of this invocation
    interrupted: bool
    last_metrics: dict[str, float]


def holds_run(run_dir: Path) -> bool:
    return (run_dir / CONFIG_FILE).exists() or (run_dir / "checkpoints").exists()


def load_run_config(run_dir: str | Path) -> Config:
    path = Path(run_dir) / CONFIG_FILE
    if not path.exists():
        raise RunDirError(f"{run_dir} holds no run ({CONFIG_FILE} missing)")
    return config_from_dict(json.loads(path.read_text()))


def prepare_run_dir(run_dir: Path, config: Config | None, *, resume: bool, force: bool) -> Config:
    """Check what ``run_dir`` holds against the request and return the config to train."""
    if resume and force:
        raise RunDirError("--resume and --force contradict each other: pick one")
    if resume:
        if not holds_run(run_dir):
            raise RunDirError(f"nothing to resume in {run_dir}: start a new run without --resume")
        return load_run_config(run_dir)
    assert config is not None
    if holds_run(run_dir):
        if not force:
            raise RunDirError(
                f"{run_dir} already holds a run: add --resume to continue it, --force to "
                f"start over (deletes it), or --out DIR for a new one"
            )
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / CONFIG_FILE).write_text(json.dumps(config_to_dict(config), indent=2) + "\n")
    return config


def _to_host(metrics: dict[str, Any]) -> dict[str, float]:
    return {name: float(np.asarray(value)) for name, value in jax.device_get(metrics).items()}


def train(
    run_dir: str | Path,
    config: Config | None = None,
    *,
    seconds: float | None = None,
    iterations: int | None = None,
    resume: bool = False,
    force: bool = False,
    on_log: Callable[[dict[str, float]], None] | None = None,
) -> TrainResult:
    """Train until ``seconds`` pass or the run reaches ``iterations`` in total.

    With neither, ``config.train.iterations`` is the budget. Ctrl-C stops after the
    current iteration and saves a checkpoint.
    """
    run_dir = Path(run_dir)
    config = prepare_run_dir(run_dir, config, resume=resume, force=force)
    trainer = cached_trainer(config)
    if iterations is None and seconds is None:
        iterations = config.train.iterations

    from tensorboardX import SummaryWriter  # heavy import, kept off `import jaxzero`

    checkpointer = Checkpointer(run_dir)
    key = jax.random.key(config.seed)
    if resume:
        abstract = jax.eval_shape(trainer.init, key)
        try:
            state, _ = checkpointer.restore(abstract)
        except CheckpointError:
            if checkpointer.latest_step() is not None:
                raise
            state = trainer.init(key)  # the run was stopped before its first checkpoint
    else:
        state = trainer.init(key)

    iteration = int(state.iteration)
    start = time.monotonic()
    interrupted = False
    last: dict[str, float] = {}
    config_json = config_to_dict(config)
    writer = SummaryWriter(str(run_dir / "tb"))
    positions_per_iteration = config.selfplay.batch_size * config.selfplay.moves_per_iteration
    since_log, log_clock = 0, time.monotonic()
    try:
        with open(run_dir / METRICS_FILE, "a") as log:
            while True:
                elapsed = time.monotonic() - start
                if iterations is not None and iteration >= iterations:
                    break
                if seconds is not None and elapsed >= seconds:
                    break
                try:
                    state, metrics = trainer.iteration(state)
                    iteration += 1
                    since_log += 1
                except KeyboardInterrupt:
                    interrupted = True
                    break
                if iteration % config.train.log_every == 0:
                    last = {"iteration": iteration, "elapsed": time.monotonic() - start}
                    last |= _to_host(metrics)  # waits for the device: time after it
                    now = time.monotonic()
                    last["positions_per_second"] = (
                        since_log * positions_per_iteration / max(now - log_clock, 1e-9)
                    )
                    since_log, log_clock = 0, now
                    log.write(json.dumps(last) + "\n")
                    log.flush()
                    for name, value in last.items():
                        if name != "iteration":
                            writer.add_scalar(name, value, iteration)
                    if on_log is not None:
                        on_log(last)
                if iteration % config.train.checkpoint_every == 0:
                    checkpointer.save(iteration, state, config_json)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        if checkpointer.latest_step() != iteration:
            checkpointer.save(iteration, state, config_json)
        checkpointer.close()
        writer.close()
    return TrainResult(run_dir, iteration, time.monotonic() - start, interrupted, last)
