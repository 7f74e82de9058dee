"""What the driver trains, one run or a population, behind one protocol: the driver asks
a :class:`Run` for its state, its iteration and its hooks, and never which it holds.

    run = as_run(make_trainer(config))           # SingleRun
    run = as_run(make_population(config, ...))   # jaxzero.run.life.members.PopulationRun

A single run writes ``metrics.jsonl``, ``games.jsonl`` and TensorBoard beside its config; a
population writes each member's rows and games into ``RUN/members/K`` and its
``population.json`` (:mod:`jaxzero.run.life.members`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import jax

from jaxzero.core import sharding
from jaxzero.core.config import Config
from jaxzero.core.loop import Trainer
from jaxzero.core.memory import check_memory
from jaxzero.measure.evaluation import DRIVER_OPPONENTS, make_evaluation
from jaxzero.measure.gate import make_gate
from jaxzero.measure.players import evaluation_player
from jaxzero.run.folder.layout import GAMES_FILE, METRICS_FILE, TENSORBOARD_DIR
from jaxzero.run.life import hooks as hooks_lib
from jaxzero.run.life.checkpoint import Checkpointer
from jaxzero.run.life.game_records import GameRecorder
from jaxzero.run.life.hooks import FiniteGuard, Hook

Judge = Callable[[Any], dict[str, float]]  # params -> {"optimal": share of solved positions}


class Run(Protocol):
    """One run or a population, as the driver trains it."""

    @property
    def config(self) -> Config: ...

    @property
    def trainer(self) -> Trainer:
        """The compiled parts (env, network, search) a run, or every member, plays with."""
        ...

    def fresh(self) -> Any:
        """The state a new run starts from (a population's: every member's, stacked)."""
        ...

    def iteration(self, state: Any) -> tuple[Any, Any, Any]:
        """``(state, metrics, moves)``: one compiled iteration."""
        ...

    def check_memory(self) -> None:
        """MemoryError-like ValueError, in one line, when the run does not fit."""
        ...

    def write_new(self, run_dir: Path) -> None:
        """What a new run writes beside its config (a population: its members)."""
        ...

    def check_resumed(self, run_dir: Path) -> None:
        """ValueError unless ``run_dir`` holds this run (a population: its members)."""
        ...

    def guard(self, checkpointer: Checkpointer, run_dir: Path) -> FiniteGuard:
        """The finite guard: no save, no check of a diverged state."""
        ...

    def hooks(self, run_dir: Path, on_log: Callable | None, judge: Judge | None) -> list[Hook]:
        """The driver's own hooks, the metrics row first, in the order they take turns."""
        ...


@dataclasses.dataclass(frozen=True)
class SingleRun:
    """One run of a :class:`~jaxzero.core.loop.Trainer`."""

    trainer: Trainer

    @property
    def config(self) -> Config:
        return self.trainer.config

    def fresh(self) -> Any:
        return self.trainer.init(jax.random.key(self.config.seed))

    def iteration(self, state: Any) -> tuple[Any, Any, Any]:
        return self.trainer.iteration(state)

    def check_memory(self) -> None:
        check_memory(self.trainer)

    def write_new(self, run_dir: Path) -> None:
        pass  # its config.json is all

    def check_resumed(self, run_dir: Path) -> None:
        pass  # its config.json and checkpoint are checked by the driver

    def guard(self, checkpointer: Checkpointer, run_dir: Path) -> FiniteGuard:
        return FiniteGuard(checkpointer)

    def hooks(self, run_dir: Path, on_log: Callable | None, judge: Judge | None) -> list[Hook]:
        config, trainer = self.config, self.trainer
        positions = config.selfplay.batch_size * config.selfplay.moves_per_iteration
        hooks: list[Hook] = [hooks_lib.MetricsRow(config.train.log_every, positions)]
        # one process writes the games; several hosts record none (their matches stay one program)
        games = GameRecorder(run_dir / GAMES_FILE, config.train.log_every)
        recording = jax.process_count() == 1
        if config.gate.enabled:
            hooks.append(
                hooks_lib.GateHook(
                    make_gate(
                        config, trainer.env, trainer.apply_fn, trainer.search, trainer.options
                    ),
                    config.seed,
                )
            )
        if config.evaluation.every > 0:
            evaluation = None  # evaluation.games=0: no matches, the solved positions only
            if config.evaluation.games:
                player = evaluation_player(
                    config, trainer.env, trainer.apply_fn, trainer.search, trainer.options
                )
                evaluation = make_evaluation(
                    trainer.env,
                    player,
                    DRIVER_OPPONENTS,
                    config.evaluation.games,
                    config.evaluation.opening_plies,
                )
            hooks.append(
                hooks_lib.EvaluationHook(
                    evaluation,
                    config.evaluation.every,
                    config.seed,
                    judge,
                    config.evaluation.max_share,
                    games.add_match if recording else None,
                )
            )
        if sharding.is_main_process():
            hooks += [
                hooks_lib.JsonlWriter(run_dir / METRICS_FILE),
                hooks_lib.TensorBoardWriter(run_dir / TENSORBOARD_DIR),
                hooks_lib.Progress(on_log),
            ]
        return [*hooks, games] if recording else hooks
