"""Shared test setup: one tiny config per game, the trainers compiled from them, and one
tiny finished run.

``tiny_config(game, **overrides)`` is the smallest run of what users get for ``game`` (its
preset, else its ``default_config``) that still trains (updates start after two
iterations); ``trainers`` compiles each config once for the whole session and hands the
same Trainer to every test that asks for that config; ``tiny_run`` is a finished
tic-tac-toe run trained once per session.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pytest

import envs
from jaxzero.core.config import Config, apply_overrides, config_to_dict
from jaxzero.core.defaults import starting_config
from jaxzero.core.loop import Trainer, make_trainer
from jaxzero.run.life import compile_cache, ways
from jaxzero.run.life.checkpoint import Checkpointer
from jaxzero.run.life.driver import prepare_run_dir

# The suite compiles thousands of tiny programs and runs each for moments: XLA's cheap
# compile for the pytest workers and every process they start, which inherit it. XLA reads
# it when JAX first compiles, after these imports. No expensive LLVM passes; and XLA's older
# loop emitters for fused ops, which compile a tiny Connect Four iteration in 3.0 s against
# the fusion emitters' 4.7 s (tests/core/test_tree_reuse.py: 80 s against 112 s).
FAST_COMPILE = (
    "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"
    " --xla_cpu_use_fusion_emitters=false"
)
if FAST_COMPILE not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {FAST_COMPILE}".strip()
ROOT = Path(__file__).resolve().parents[1]
# The test files live in sub-folders that mirror the package (tests/core, tests/run/life,
# ...); the helper modules they import by name (helpers, toy_game, score_game, double_move,
# durations_file) stay here, beside this file.
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))  # benchmark modules (measuring_share, ...) as scripts
sys.path.insert(0, str(ROOT / "tools"))  # tools (gtp_referee, ...) as scripts
pytest_plugins = ["durations_file"]  # --durations-file PATH (make test keeps each run's times)

# JAX's persistent compilation cache (jaxzero.run.life.compile_cache) for the whole suite: the
# pytest workers and the `jaxzero` processes the tests start compile many identical
# programs, which one compile serves. Kept beside pytest's own cache, out of git.
os.environ.setdefault(compile_cache.ENV_VAR, str(ROOT / ".pytest_cache" / "xla"))
# Every compile kept, the tiny ones too: with XLA's cheap compile most take under the
# library's 0.5 s, and the `jaxzero` processes the tests start compile the same ones.
os.environ.setdefault(compile_cache.MIN_SECONDS_VAR, "0")
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
_XLA_CACHE = compile_cache.enable_compile_cache()
# The scripts the tests start that never turn the cache on (the benchmarks' sections, the
# multi-device checks) read JAX's own variables: the same folder, the same threshold.
if _XLA_CACHE is not None:
    os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", str(_XLA_CACHE))

# How a population's members run is measured once per machine and shapes
# (jaxzero.run.life.ways); the suite's many tiny populations run one member at a time on the
# devices that split them instead, and tests/run/life/test_ways.py measures.
os.environ.setdefault(ways.AT_ONCE_VAR, "1")
# The two pytest workers already keep both cores busy: the `jaxzero` processes they start
# keep one device each (tests of the cores as devices set their own count).
os.environ.setdefault(ways.HOST_DEVICES_VAR, "1")

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
# TINY on the command line (``jaxzero train GAME *TINY_ARGS``): a run of it compiles the
# programs of ``tiny_config(GAME)``, which the workers compile too, so whichever process
# comes second reads them from the compile cache. Its train.* (how often a run logs and
# saves, no part of a program) left to each test.
TINY_ARGS = [f"{key}={value}" for key, value in TINY.items() if not key.startswith("train.")]


def tiny_config(game: str, **overrides: Any) -> Config:
    """What ``jaxzero train game`` starts from (its preset, else its ``default_config``)
    at toy size; ``overrides`` use dotted keys with ``__`` for the dot
    (``tiny_config("go_6x6", selfplay__batch_size=2)``)."""
    base = starting_config(game)
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
    """``jaxzero.run.life.driver.train`` with the session's trainer of the run's config (that
    of ``config``, or of the run directory when resuming)."""
    from jaxzero.run.life.driver import load_run_config, train

    def run(run_dir, config=None, **options):
        resume = options.get("resume", False)
        known = load_run_config(run_dir) if resume and config is None else config
        return train(run_dir, config, trainer=trainers(known), **options)

    return run


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory, ttt_config, train_run) -> Path:
    """A finished 4-iteration tic-tac-toe run of ``ttt_config`` (checkpoints 2 and 4),
    trained once per session (per xdist worker). Shared: a test that writes to a run
    copies it first (``shutil.copytree(tiny_run, tmp_path / "run")``)."""
    run = tmp_path_factory.mktemp("tiny_run") / "run"
    train_run(run, ttt_config, iterations=4)
    return run


def untrained_run(
    root: Path, game: str, overrides: dict[str, Any], step: int = 5, random_network: bool = True
) -> Path:
    """A run directory ``root/game`` with one checkpoint at ``step``. Agents read back
    only the network, so the training state is zeros of the right shapes (cheaper than
    compiling ``trainer.init``) except, with ``random_network``, the network's parameters:
    normal draws from numpy (the tests need moves that vary, not a well-initialised
    network)."""
    config = apply_overrides(tiny_config(game, evaluation__simulations=2), overrides)
    run = root / game
    prepare_run_dir(run, config, resume=False, force=False)
    abstract = jax.eval_shape(make_trainer(config).init, jax.random.key(0))
    state = jax.tree.map(lambda x: np.zeros(x.shape, x.dtype), abstract)
    if random_network:
        rng = np.random.default_rng(0)
        params = jax.tree.map(lambda x: rng.normal(0, 0.5, x.shape).astype(x.dtype), state.params)
        state = state.replace(params=params, best_params=params)
    state = state.replace(iteration=np.int32(step))
    with Checkpointer(run) as checkpointer:
        checkpointer.save(step, state, config_to_dict(config))
    return run


@pytest.fixture(scope="session")
def go_run(tmp_path_factory) -> Path:
    """An untrained Go 6x6 agent's run (a small MLP, checkpoint 5), made once per session;
    never modified."""
    overrides = {"network.kind": "mlp", "network.hidden_size": 8, "network.num_layers": 1}
    return untrained_run(tmp_path_factory.mktemp("runs"), "go_6x6", overrides)
