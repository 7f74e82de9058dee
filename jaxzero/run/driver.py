"""The Python driver around the compiled iteration: run directory, logs, checkpoints.

The driver never touches the hot path: it calls ``trainer.iteration`` (one jitted
function), pulls the returned metrics to the host every ``log_every`` iterations, and
saves the whole TrainState every ``checkpoint_every`` iterations and when it stops
(time or iteration budget reached, or Ctrl-C).

With the arena gate on, every ``arena.every`` iterations the learner plays the best
(``jaxzero.measure.gate``) and the driver logs ``arena/score``, ``arena/games`` and
``arena/promoted`` (1 when the learner replaced the best); every ``arena.eval_every``
iterations it logs the playing network's score and win rate against random and one-ply
(``eval/vs_random``, ``eval/vs_random_wins``, ...). Both use keys derived from the seed and
the iteration, so a resumed run replays them exactly.

With ``sgf`` (``jaxzero train go_6x6 --sgf DIR``, Go only), every self-play game that
finishes is written to DIR as ``selfplay_NNNNNN.sgf`` (``jaxzero.go.records``); that
pulls each iteration's moves to the host, a small synchronisation per iteration.

A run directory holds ``config.json``, ``metrics.jsonl``, TensorBoard event files under
``tb/`` and orbax checkpoints under ``checkpoints/``. A directory that already holds a
run is never overwritten: resume it, or start over explicitly with ``force``.

Several hosts (``jaxzero.core.sharding``, docs/scaling.md): every process runs ``train`` on the
same run directory (shared storage); process 0 prepares it and alone writes the config,
metrics and TensorBoard files; all take part in each checkpoint save, which orbax writes
once; the stop decision (time budget) is process 0's, broadcast to the others.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import shutil
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jax
import numpy as np
from jax.experimental import multihost_utils

import envs
from jaxzero.core import sharding
from jaxzero.core.config import Config, config_from_dict, config_to_dict
from jaxzero.core.loop import Trainer, make_trainer
from jaxzero.measure import gate as arena_lib
from jaxzero.run.checkpoint import Checkpointer, CheckpointError

CONFIG_FILE = "config.json"
METRICS_FILE = "metrics.jsonl"


def check_train_config(config: Config) -> None:
    """ValueError, before anything is created, for settings the driver cannot honour."""
    keep, every = config.train.keep_every, config.train.checkpoint_every
    if keep and keep % every:
        raise ValueError(
            f"train.keep_every={keep} would keep only the checkpoints saved at multiples of "
            f"both it and train.checkpoint_every={every}; make it a multiple of {every}"
        )
    weight = config.selfplay.root_value_weight
    if not 0.0 <= weight <= 1.0:
        raise ValueError(f"selfplay.root_value_weight={weight} must be between 0 and 1")
    if config.selfplay.opening_plies < 0:
        raise ValueError(f"selfplay.opening_plies={config.selfplay.opening_plies} must be >= 0")


@functools.lru_cache(maxsize=8)
def cached_trainer(config: Config, record_games: bool = False) -> Trainer:
    """One Trainer (and so one compiled iteration) per config within a process."""
    return make_trainer(config, record_games=record_games)


@functools.lru_cache(maxsize=8)
def cached_arena(config: Config) -> arena_lib.Arena:
    """The compiled learner-vs-best match for ``config`` (one per process)."""
    trainer = cached_trainer(config)
    return arena_lib.make_arena(config, trainer.env, trainer.apply_fn)


@functools.lru_cache(maxsize=8)
def cached_evaluator(config: Config) -> arena_lib.Evaluator:
    """The compiled match against random and one-ply for ``config`` (one per process)."""
    trainer = cached_trainer(config)
    return arena_lib.make_evaluator(config, trainer.env, trainer.apply_fn)


ARENA_STREAM, EVAL_STREAM = 1, 2  # key streams, apart from the training key


def checks_due(config: Config, iteration: int) -> bool:
    """Whether an arena match or an evaluation is due after ``iteration``."""
    arena = config.arena
    return (arena.enabled and iteration % arena.every == 0) or (
        arena.eval_every > 0 and iteration % arena.eval_every == 0
    )


def periodic_checks(config: Config, state: Any, iteration: int) -> tuple[Any, dict[str, float]]:
    """The arena (gate on, every ``arena.every``) and the evaluation against fixed
    opponents (every ``arena.eval_every``) due at ``iteration``: (state, metrics)."""
    arena = config.arena
    metrics: dict[str, float] = {}
    base = jax.random.key(config.seed)
    if arena.enabled and iteration % arena.every == 0:
        key = jax.random.fold_in(jax.random.fold_in(base, ARENA_STREAM), iteration)
        score, wins, draws, losses = jax.device_get(
            cached_arena(config)(state.params, state.best_params, key)
        )
        games = int(wins + draws + losses)
        promoted = arena_lib.should_promote(float(score), games, arena)
        if promoted:
            state = state.replace(best_params=arena_lib.copy_variables(state.params))
        metrics |= {
            "arena/score": float(score),
            "arena/games": float(games),
            "arena/promoted": float(promoted),
        }
    if arena.eval_every > 0 and iteration % arena.eval_every == 0:
        key = jax.random.fold_in(jax.random.fold_in(base, EVAL_STREAM), iteration)
        results = cached_evaluator(config)(state.best_params, key)
        metrics |= arena_lib.Evaluator.metrics(results)
    return state, metrics


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


@contextlib.contextmanager
def _stop_on_sigterm() -> Iterator[None]:
    """Treat SIGTERM (``kill``, a scheduler's pre-emption) like Ctrl-C: stop after the
    current iteration and save a checkpoint. Only the main thread can take signals."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


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
    sgf: str | Path | None = None,
) -> TrainResult:
    """Train until ``seconds`` pass or the run reaches ``iterations`` in total.

    With neither, ``config.train.iterations`` is the budget. Ctrl-C stops after the
    current iteration and saves a checkpoint. ``sgf``: a directory for the self-play
    games as SGF (Go only).
    """
    run_dir = Path(run_dir)
    sharding.initialize()  # joins a multi-process job when JAXZERO_COORDINATOR etc. are set
    main = sharding.is_main_process()
    if config is not None:
        check_train_config(config)
    if sgf is not None and config is not None:  # refuse before creating the run directory
        from jaxzero.go.records import require_go

        require_go(envs.make(config.game), "self-play SGF records")
    if main:
        config = prepare_run_dir(run_dir, config, resume=resume, force=force)
    if jax.process_count() > 1:
        multihost_utils.sync_global_devices("jaxzero: run directory ready")
        if not main:
            config = load_run_config(run_dir)
    if sgf is not None and jax.process_count() > 1:
        raise ValueError("--sgf records self-play on a single host only; drop it or use one")
    trainer = cached_trainer(config, record_games=sgf is not None)
    if iterations is None and seconds is None:
        iterations = config.train.iterations

    from tensorboardX import SummaryWriter  # heavy import, kept off `import jaxzero`

    checkpointer = Checkpointer(run_dir, keep_every=config.train.keep_every)
    key = jax.random.key(config.seed)
    fresh = True  # the games in `state` start at their first move
    if resume:
        abstract = jax.eval_shape(trainer.init, key)
        try:
            state, _ = checkpointer.restore(abstract)
            fresh = False  # its games are under way: record from the next ones
        except CheckpointError:
            if checkpointer.latest_step() is not None:
                raise
            state = trainer.init(key)  # the run was stopped before its first checkpoint
    else:
        state = trainer.init(key)
    recorder = None
    if sgf is not None:  # refuses a non-Go game (a resumed run's game is known only now)
        from jaxzero.go.records import SelfPlayRecorder

        recorder = SelfPlayRecorder(trainer.env, sgf, fresh=fresh)

    iteration = int(state.iteration)
    start = time.monotonic()
    interrupted = False
    last: dict[str, float] = {}
    config_json = config_to_dict(config)
    writer = SummaryWriter(str(run_dir / "tb")) if main else None
    positions_per_iteration = config.selfplay.batch_size * config.selfplay.moves_per_iteration
    since_log, log_clock = 0, time.monotonic()
    try:
        stop_on_sigterm = _stop_on_sigterm()
        with stop_on_sigterm, open(run_dir / METRICS_FILE if main else os.devnull, "a") as log:
            while True:
                elapsed = time.monotonic() - start
                if iterations is not None and iteration >= iterations:
                    break
                stop = seconds is not None and elapsed >= seconds
                if jax.process_count() > 1:  # process 0's clock decides for everyone
                    stop = bool(multihost_utils.broadcast_one_to_all(np.bool_(stop)))
                if stop:
                    break
                try:
                    if recorder is None:
                        state, metrics = trainer.iteration(state)
                    else:
                        state, metrics, moves = trainer.iteration(state)
                        moves = jax.device_get(moves)
                        recorder.add(moves["action"], moves["done"], moves["reward"])
                    iteration += 1
                    since_log += 1
                except KeyboardInterrupt:
                    interrupted = True
                    break
                logged = iteration % config.train.log_every == 0
                row: dict[str, float] = {}
                if logged:
                    row = {"iteration": iteration, "elapsed": time.monotonic() - start}
                    row |= _to_host(metrics)  # waits for the device: time after it
                    now = time.monotonic()
                    row["positions_per_second"] = (
                        since_log * positions_per_iteration / max(now - log_clock, 1e-9)
                    )
                if checks_due(config, iteration):
                    jax.block_until_ready(state)  # the checks' time is theirs alone
                checks_start = time.monotonic()
                state, checks = periodic_checks(config, state, iteration)
                if logged:
                    since_log, log_clock = 0, time.monotonic()  # throughput excludes checks
                elif checks:
                    log_clock += time.monotonic() - checks_start
                    row = {"iteration": iteration, "elapsed": time.monotonic() - start}
                if row and main:
                    row |= checks
                    last = row if logged else last | row
                    log.write(json.dumps(row) + "\n")
                    log.flush()
                    for name, value in row.items():
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
        if writer is not None:
            writer.close()
    return TrainResult(run_dir, iteration, time.monotonic() - start, interrupted, last)
