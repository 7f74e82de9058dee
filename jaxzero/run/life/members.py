"""A population's run directory: one run of P members, each readable as an ordinary run.

    RUN/config.json              the settings the members share
    RUN/population.json          {"seeds": [...], "hyper": {"optim.learning_rate": [...]},
                                  "diverged": [{"member": K, "seed": ..., "iteration": I,
                                                "hyper": {...}}]  (once one has)
    RUN/checkpoints/N/           the whole population's state (every leaf [P, ...])
    RUN/members/K/config.json    member K's own config: the single run it equals
    RUN/members/K/metrics.jsonl  member K's metrics rows

``RUN/members/K`` is the name of member K everywhere a run is read (``jaxzero eval``,
``play``, ``export``, ``report``, ``load_agent``): its config and metrics are its own, and
its network is read from the population's checkpoints, member K's slice.

A member that diverges (:class:`~jaxzero.core.population.PopulationState`) is frozen at its
last finite state while the others train on; :class:`MembersGuard` names it in one line,
records it in population.json, and stops the run only once every member has diverged.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import numpy as np

from jaxzero.core import sharding
from jaxzero.core.config import Config, config_to_dict, flatten
from jaxzero.core.loop import Trainer
from jaxzero.core.memory import check_memory
from jaxzero.core.population import Population, member
from jaxzero.run.folder import manifest
from jaxzero.run.folder.layout import (
    CONFIG_FILE,
    GAMES_FILE,
    MEMBERS_DIR,
    METRICS_FILE,
    POPULATION_FILE,
    member_folder,
)
from jaxzero.run.folder.nolink import write_json
from jaxzero.run.folder.reads import read_json
from jaxzero.run.life.checkpoint import Checkpointer
from jaxzero.run.life.game_records import GameRecorder
from jaxzero.run.life.hooks import (
    FINITE,
    Diverged,
    FiniteGuard,
    Hook,
    JsonlWriter,
    MetricsRow,
    Progress,
    Step,
)
from jaxzero.run.life.runs import Judge, Run, SingleRun

DIVERGED = "diverged"  # population.json's record of the members that diverged


def is_population(run_dir: Path) -> bool:
    """Whether ``run_dir`` holds a population (its population.json, or its members'
    folders: a deleted population.json is then reported as such, not as another config)."""
    return (run_dir / POPULATION_FILE).is_file() or (run_dir / MEMBERS_DIR).is_dir()


def read_population(run_dir: Path) -> tuple[list[int], dict[str, list[float]]]:
    """(seeds, hyper) of the population in ``run_dir``; ValueError naming the file when
    it is unreadable."""
    path = run_dir / POPULATION_FILE
    if not path.exists() and (run_dir / MEMBERS_DIR).is_dir():
        raise ValueError(
            f"{path} is missing, yet {run_dir / MEMBERS_DIR} holds a population's members: "
            f"restore {POPULATION_FILE} (its seeds and grid), or start a new run"
        )
    try:
        data = read_json(path, run_dir)
        seeds = [int(s) for s in data["seeds"]]
        hyper = {str(k): [float(v) for v in values] for k, values in data["hyper"].items()}
    except (OSError, ValueError, KeyError, TypeError, OverflowError) as error:
        raise ValueError(f"{path} is not a readable population ({error})") from None
    return seeds, hyper


def read_diverged(run_dir: Path) -> dict[int, dict[str, Any]]:
    """The members of the population in ``run_dir`` that diverged, K to its record
    (``{"member", "seed", "iteration", "hyper"}``); {} when none did or the file says
    nothing readable about it (the file's own readers name what is wrong with it)."""
    try:
        records = read_json(run_dir / POPULATION_FILE, run_dir).get(DIVERGED, [])
        return {r["member"]: r for r in records if _a_record(r)}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)  # JSON true is no number


def _a_record(record: Any) -> bool:
    """Whether ``record`` is a divergence record as :func:`record_diverged` writes it."""
    return (
        isinstance(record, dict)
        and all(_whole(record.get(key)) for key in ("member", "seed", "iteration"))
        and isinstance(record.get("hyper"), dict)
        and all(isinstance(v, int | float | str) for v in record["hyper"].values())
    )


def diverged_description(run_dir: Path, k: int, record: dict[str, Any]) -> str:
    """ "member 1 of RUN diverged at iteration 3 (optim.learning_rate=1e+30)"."""
    values = ", ".join(f"{key}={_shown(v)}" for key, v in record.get("hyper", {}).items())
    hyper = f" ({values})" if values else ""
    return f"member {k} of {run_dir} diverged at iteration {record.get('iteration')}{hyper}"


def diverged_refusal(path: Path, step: int | None) -> str:
    """Why ``path``, a member ``RUN/members/K`` that diverged, cannot be loaded at
    checkpoint ``step`` (None: the latest), in one line; "" when it can: a checkpoint
    from its divergence on holds its frozen last finite state, not a trained network."""
    found = member_of(path)
    if found is None:
        return ""
    run_dir, k = found
    diverged = read_diverged(run_dir)
    record = diverged.get(k)
    if record is None or step is not None and step < int(record.get("iteration", 0)):
        return ""
    others = [j for j in range(len(read_population(run_dir)[0])) if j not in diverged]
    instead = (
        f"use another member, e.g. {member_folder(run_dir, others[0])}"
        if others
        else "every member diverged: start a new run with a lower optim.learning_rate, or "
        "clip gradients with optim.max_grad_norm > 0"
    )
    return (
        f"{diverged_description(run_dir, k, record)}; it stopped training there (its "
        f"checkpoints from then on hold its last finite state): {instead}"
    )


def _shown(value: Any) -> Any:
    return f"{value:g}" if isinstance(value, float) else value


def _strict(value: float) -> float | str:
    """A number as strict JSON takes it: a non-finite one as its text."""
    return value if math.isfinite(value) else str(value)


def record_diverged(run_dir: Path, population: Population, diverged_at: dict[int, int]) -> None:
    """population.json's record of the diverged members (K to the iteration it diverged
    at), with each one's seed and hyperparameters: strict JSON."""
    path = run_dir / POPULATION_FILE
    data = read_json(path, run_dir)
    data.pop(DIVERGED, None)
    if diverged_at:
        data[DIVERGED] = [
            {
                "member": k,
                "seed": population.seeds[k],
                "iteration": iteration,
                "hyper": {key: _strict(values[k]) for key, values in population.hyper.items()},
            }
            for k, iteration in sorted(diverged_at.items())
        ]
    write_json(run_dir, path, data)


def write_population(run_dir: Path, population: Population) -> None:
    """population.json and every member's folder with its config.json."""
    data = {
        "seeds": list(population.seeds),
        "hyper": {k: list(v) for k, v in population.hyper.items()},
    }
    manifest.record(run_dir, files=[run_dir / POPULATION_FILE])
    write_json(run_dir, run_dir / POPULATION_FILE, data)
    for k, config in enumerate(population.members):
        folder = member_folder(run_dir, k)
        manifest.make_folders(run_dir, folder)
        manifest.record(run_dir, files=[folder / CONFIG_FILE])
        write_json(run_dir, folder / CONFIG_FILE, config_to_dict(config))


def check_members(run_dir: Path, population: Population) -> None:
    """ValueError, in one line, unless each member of ``population`` is the member
    ``run_dir`` trained: its ``members/K/config.json`` (seed and hyperparameters included).
    It catches an edited population.json, or other seeds or values asked of a resume."""
    for k, config in enumerate(population.members):
        path = member_folder(run_dir, k) / CONFIG_FILE
        try:
            trained = read_json(path, path.parent)
            if not isinstance(trained, dict):
                raise ValueError("no JSON object")
            trained = flatten(trained, sep=".")
        except (OSError, ValueError) as error:
            raise ValueError(f"{path} is not a readable member config ({error})") from None
        asked = flatten(json.loads(json.dumps(config_to_dict(config))), sep=".")
        if differ := sorted(
            key for key in trained.keys() | asked.keys() if trained.get(key) != asked.get(key)
        ):
            key = differ[0]
            raise ValueError(
                f"member {k} of {run_dir} was trained with {key}={trained.get(key)}, but the "
                f"population to resume has {key}={asked.get(key)} (an edited "
                f"{POPULATION_FILE}, or other --seeds/--grid): restore it, or start a new run"
            )


def member_of(path: Path) -> tuple[Path, int] | None:
    """(population run directory, K) when ``path`` is ``RUN/members/K``, else None."""
    if path.name.isdigit() and path.parent.name == MEMBERS_DIR:
        run_dir = path.parent.parent
        if is_population(run_dir):
            return run_dir, int(path.name)
    return None


def _diverged(state: Any) -> dict[int, int]:
    """K to the iteration it diverged at, for each member of ``state`` that did."""
    flags = np.asarray(jax.device_get(state.diverged_at))
    return {k: int(i) for k, i in enumerate(flags) if i}


@dataclasses.dataclass(kw_only=True)
class MembersGuard(FiniteGuard):
    """The finite guard of a population. A member whose iteration was not finite is
    frozen on the device already (:func:`~jaxzero.core.population.make_population`);
    this guard, reading ``state.diverged_at`` [P] where the host waits anyway (a logged
    row, a save) or once it is computed, names each newly diverged member in one line
    (its seed, grid values, iteration) and records it in population.json, and lets the
    others train on. Once every member has diverged it raises :class:`Diverged`, as a
    single run's guard does, that iteration never saved."""

    run_dir: Path
    population: Population
    _known: dict[int, int] = dataclasses.field(default_factory=dict)

    def start(self, state: Any) -> None:
        """The restored members' record (a resumed run's population.json follows its
        checkpoint, as its metrics files do)."""
        self._known = _diverged(state)
        if sharding.is_main_process() and self._known != {
            k: int(r["iteration"]) for k, r in read_diverged(self.run_dir).items()
        }:
            record_diverged(self.run_dir, self.population, self._known)

    def __call__(self, step: Step) -> None:
        computed = jax.process_count() == 1 and step.state.diverged_at.is_ready()
        if step.row or computed:
            self.check(step)

    def check(self, step: Step) -> None:
        """Names and records the members diverged up to ``step`` (waits for it);
        Diverged once all have."""
        if self.diverged_at is None:
            now = _diverged(step.state)
            if now != self._known:
                training = self.population.size - len(now)
                for k in sorted(now.keys() - self._known.keys()) if training else ():
                    self._announce(k, now[k], training)  # (all gone: Diverged names them)
                self._known = now
                if sharding.is_main_process():
                    record_diverged(self.run_dir, self.population, now)
            if len(now) == self.population.size:
                self.diverged_at = max(now.values())
        if self.diverged_at is not None:
            raise Diverged(self._message())

    def _announce(self, k: int, iteration: int, training: int) -> None:
        """The line naming member ``k``, diverged at ``iteration``, ``training`` left."""
        if not sharding.is_main_process():
            return
        hyper = {name: values[k] for name, values in self.population.hyper.items()}
        record = {"iteration": iteration, "hyper": hyper}
        print(
            f"{diverged_description(self.run_dir, k, record)}, seed {self.population.seeds[k]}: "
            f"its losses, gradients or parameters were not finite; it stays frozen at its "
            f"last finite state, {training} other member{'s' * (training != 1)} training on",
            file=sys.stderr,
            flush=True,
        )

    def _message(self) -> str:
        members = ", ".join(f"member {k} at iteration {i}" for k, i in sorted(self._known.items()))
        return (
            f"training diverged: every member of the population did ({members}); the run "
            f"stopped without saving iteration {self.diverged_at}; {self._kept()}. Start a "
            "new run with a lower optim.learning_rate, or clip gradients with "
            "optim.max_grad_norm > 0"
        )


@dataclasses.dataclass
class MemberRows:
    """A population's metrics: every ``every`` iterations each member's row (metrics,
    time, its self-play positions per second) appended to ``RUN/members/K/metrics.jsonl``;
    ``step.row`` is the members' mean, for the progress line. With a ``judge`` (the game
    has a solved position set), every ``judge_every`` iterations each member's raw-policy
    optimal share ``eval/raw_optimal`` too: P batched forward passes, where matches
    against fixed opponents would cost P times a run's (a population plays none). On
    resume each file first drops the rows after the restored checkpoint, as a single
    run's does."""

    run_dir: Path
    size: int
    every: int
    positions_per_iteration: int  # one member's
    judge: Callable[[Any], dict[str, float]] | None = None
    judge_every: int = 0
    _writers: list[JsonlWriter] = dataclasses.field(default_factory=list)
    _row: MetricsRow | None = None  # the members' mean row, at the population's rate

    def start(self, state: Any) -> None:
        self._row = MetricsRow(self.every, self.positions_per_iteration * self.size)
        self._writers = [
            JsonlWriter(member_folder(self.run_dir, k) / METRICS_FILE) for k in range(self.size)
        ]
        # the population's iteration (a diverged member's own counter stopped)
        first = member(state, 0).replace(iteration=np.max(state.iteration))
        for writer in self._writers:
            writer.start(first)

    def __call__(self, step: Step) -> None:
        """Rows of the members still training: a diverged member's rows stop at its
        last finite iteration, and the members' mean is of those training."""
        rows: list[dict[str, float]] = [{} for _ in range(self.size)]
        judging = bool(self.judge is not None and self.judge_every)
        judging = judging and step.iteration % self.judge_every == 0
        training = np.ones(self.size, bool)
        if judging or step.iteration % self.every == 0:  # the host waits for these anyway
            training = np.asarray(jax.device_get(step.metrics[FINITE])) > 0  # [P]
        if judging:
            assert self.judge is not None
            with step.clock.check(step.state):
                for k in np.flatnonzero(training):
                    params = member(step.state.best_params, int(k))  # no cross-device op
                    rows[k]["eval/raw_optimal"] = self.judge(params)["optimal"]
            if training.any():
                step.checks["eval/raw_optimal"] = float(
                    np.mean([rows[k]["eval/raw_optimal"] for k in np.flatnonzero(training)])
                )
        assert self._row is not None
        self._row(step)  # on a logging iteration: step.row, the members' mean
        if step.row:
            host = {k: np.asarray(v) for k, v in jax.device_get(step.metrics).items()}  # [P]
            host.pop(FINITE, None)
            if training.any() and not training.all():  # the mean of those training
                step.row |= {name: float(values[training].mean()) for name, values in host.items()}
            rate = step.row["positions_per_second"] / self.size  # each member's
            rows = [
                {name: float(values[k]) for name, values in host.items()}
                | {"positions_per_second": rate}
                | row
                if training[k]
                else {}
                for k, row in enumerate(rows)
            ]
        for writer, row in zip(self._writers, rows, strict=True):
            if row:
                writer.write({"iteration": step.iteration, "elapsed": step.clock.elapsed()} | row)

    def close(self, step: Step | None) -> None:
        for writer in self._writers:
            writer.close(step)


@dataclasses.dataclass(frozen=True)
class PopulationRun:
    """A population trained as one run (:class:`~jaxzero.run.life.runs.Run`): its members'
    rows and games in ``RUN/members/K``, a diverged member frozen and named."""

    population: Population

    @property
    def config(self) -> Config:
        return self.population.config

    @property
    def trainer(self) -> Trainer:
        return self.population.trainer

    def fresh(self) -> Any:
        return self.population.init()

    def iteration(self, state: Any) -> tuple[Any, Any, Any]:
        return self.population.iteration(state)

    def check_memory(self) -> None:
        check_memory(self.trainer, members=self.population.size)

    def write_new(self, run_dir: Path) -> None:
        write_population(run_dir, self.population)

    def check_resumed(self, run_dir: Path) -> None:
        check_members(run_dir, self.population)

    def guard(self, checkpointer: Checkpointer, run_dir: Path) -> FiniteGuard:
        return MembersGuard(checkpointer, run_dir=run_dir, population=self.population)

    def hooks(self, run_dir: Path, on_log: Callable | None, judge: Judge | None) -> list[Hook]:
        config, size = self.config, self.population.size
        positions = config.selfplay.batch_size * config.selfplay.moves_per_iteration
        every = config.evaluation.every
        rows = MemberRows(run_dir, size, config.train.log_every, positions, judge, every)
        games = [
            GameRecorder(member_folder(run_dir, k) / GAMES_FILE, config.train.log_every, k)
            for k in range(size)
        ]
        return [rows, Progress(on_log), *(games if jax.process_count() == 1 else [])]


def as_run(trainer: Trainer | Population) -> Run:
    """The :class:`~jaxzero.run.life.runs.Run` of a trainer or a population: the one place
    that tells them apart, where a caller's object enters the driver."""
    return PopulationRun(trainer) if isinstance(trainer, Population) else SingleRun(trainer)
