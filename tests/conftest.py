"""Shared test setup: one tiny config per game, and the trainers compiled from them.

``tiny_config(game, **overrides)`` is the smallest run of ``game``'s preset that still
trains (updates start after two iterations); ``trainers`` compiles each config once for
the whole session and hands the same Trainer to every test that asks for that config.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

import envs
from jaxzero.core.config import Config, apply_overrides
from jaxzero.core.loop import Trainer, make_trainer
from jaxzero.core.presets import PRESETS
from jaxzero.run import compile_cache

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))  # benchmark modules (gtp_referee, ...) as scripts
pytest_plugins = ["durations_file"]  # --durations-file PATH (make test keeps each run's times)

# JAX's persistent compilation cache (jaxzero.run.compile_cache) for the whole suite: the
# pytest workers and the `jaxzero` processes the tests start compile many identical
# programs, which one compile serves. Kept beside pytest's own cache, out of git.
os.environ.setdefault(compile_cache.ENV_VAR, str(ROOT / ".pytest_cache" / "xla"))
compile_cache.enable_compile_cache()

TINY: dict[str, Any] = {
    "selfplay.batch_size": 8,
    "selfplay.moves_per_iteration": 3,
    "replay.capacity": 256,
    "replay.min_size": 16,
    "optim.minibatch_size": 16,
    "optim.updates_per_iteration": 2,
    "search.num_simulations": 4,
    "evaluation.simulations": 4,
    "network.hidden_size": 16,
    "network.num_blocks": 1,
    "network.channels": 8,
    "network.value_hidden": 16,
    "train.log_every": 1,
    "train.checkpoint_every": 2,
}


def tiny_config(game: str, **overrides: Any) -> Config:
    """``game``'s preset (or the defaults) at toy size; ``overrides`` use dotted keys
    with ``__`` for the dot (``tiny_config("go_6x6", selfplay__batch_size=2)``)."""
    base = PRESETS.get(game, Config(game=game))
    changes = {key.replace("__", "."): value for key, value in overrides.items()}
    return apply_overrides(base, TINY | changes)


class Trainers:
    """One compiled Trainer per config for the session (the fixture owns them)."""

    def __init__(self) -> None:
        self._built: dict[Config, Trainer] = {}

    def __call__(self, config: Config) -> Trainer:
        if config not in self._built:
            self._built[config] = make_trainer(config)
        return self._built[config]


@pytest.fixture(scope="session")
def trainers() -> Trainers:
    return Trainers()


@pytest.fixture(scope="session")
def ttt():
    return envs.make("tic_tac_toe")


@pytest.fixture(scope="session")
def c4_env():
    return envs.make("connect_four")


@pytest.fixture(scope="session")
def ttt_config() -> Config:
    return tiny_config("tic_tac_toe")


@pytest.fixture(scope="session")
def c4_config() -> Config:
    return tiny_config("connect_four", selfplay__moves_per_iteration=4)


@pytest.fixture(scope="session")
def train_run(trainers):
    """``jaxzero.run.driver.train`` with the session's trainer of the run's config (that
    of ``config``, or of the run directory when resuming)."""
    from jaxzero.run.driver import load_run_config, train

    def run(run_dir, config=None, **options):
        resume = options.get("resume", False)
        known = load_run_config(run_dir) if resume and config is None else config
        return train(run_dir, config, trainer=trainers(known), **options)

    return run
