"""A population's run directory: one run of P members, each readable as an ordinary run.

    RUN/config.json              the settings the members share
    RUN/population.json          {"seeds": [...], "hyper": {"optim.learning_rate": [...]}}
    RUN/checkpoints/N/           the whole population's state (every leaf [P, ...])
    RUN/members/K/config.json    member K's own config: the single run it equals
    RUN/members/K/metrics.jsonl  member K's metrics rows

``RUN/members/K`` is the name of member K everywhere a run is read (``jaxzero eval``,
``play``, ``export``, ``report``, ``load_agent``): its config and metrics are its own, and
its network is read from the population's checkpoints, member K's slice.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import numpy as np

from jaxzero.core.config import config_to_dict
from jaxzero.core.population import Population
from jaxzero.run.config_file import flatten
from jaxzero.run.files import write_json
from jaxzero.run.hooks import FINITE, JsonlWriter, MetricsRow, Step

POPULATION_FILE = "population.json"
MEMBERS_DIR = "members"


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
        data = json.loads(path.read_text())
        seeds = [int(s) for s in data["seeds"]]
        hyper = {str(k): [float(v) for v in values] for k, values in data["hyper"].items()}
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{path} is not a readable population ({error})") from None
    return seeds, hyper


def write_population(run_dir: Path, population: Population) -> None:
    """population.json and every member's folder with its config.json."""
    data = {
        "seeds": list(population.seeds),
        "hyper": {k: list(v) for k, v in population.hyper.items()},
    }
    write_json(run_dir / POPULATION_FILE, data)
    for k, config in enumerate(population.members):
        folder = member_folder(run_dir, k)
        folder.mkdir(parents=True, exist_ok=True)
        write_json(folder / "config.json", config_to_dict(config))


def check_members(run_dir: Path, population: Population) -> None:
    """ValueError, in one line, unless each member of ``population`` is the member
    ``run_dir`` trained: its ``members/K/config.json`` (seed and hyperparameters included).
    It catches an edited population.json, or other seeds or values asked of a resume."""
    for k, config in enumerate(population.members):
        path = member_folder(run_dir, k) / "config.json"
        try:
            trained = flatten(json.loads(path.read_text()))
        except (OSError, ValueError) as error:
            raise ValueError(f"{path} is not a readable member config ({error})") from None
        asked = flatten(json.loads(json.dumps(config_to_dict(config))))
        if differ := sorted(
            key for key in trained.keys() | asked.keys() if trained.get(key) != asked.get(key)
        ):
            key = differ[0]
            raise ValueError(
                f"member {k} of {run_dir} was trained with {key}={trained.get(key)}, but the "
                f"population to resume has {key}={asked.get(key)} (an edited "
                f"{POPULATION_FILE}, or other --seeds/--grid): restore it, or start a new run"
            )


def member_folder(run_dir: Path, k: int) -> Path:
    """``RUN/members/K``."""
    return run_dir / MEMBERS_DIR / str(k)


def member_of(path: Path) -> tuple[Path, int] | None:
    """(population run directory, K) when ``path`` is ``RUN/members/K``, else None."""
    if path.name.isdigit() and path.parent.name == MEMBERS_DIR:
        run_dir = path.parent.parent
        if is_population(run_dir):
            return run_dir, int(path.name)
    return None


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
            JsonlWriter(member_folder(self.run_dir, k) / "metrics.jsonl") for k in range(self.size)
        ]
        first = jax.tree.map(lambda x: x[0], state)
        for writer in self._writers:
            writer.start(first)

    def __call__(self, step: Step) -> None:
        rows: list[dict[str, float]] = [{} for _ in range(self.size)]
        if self.judge is not None and self.judge_every and step.iteration % self.judge_every == 0:
            with step.clock.check(step.state):
                for k, row in enumerate(rows):
                    params = jax.tree.map(lambda x, k=k: x[k], step.state.best_params)
                    row["eval/raw_optimal"] = self.judge(params)["optimal"]
            step.checks["eval/raw_optimal"] = float(np.mean([r["eval/raw_optimal"] for r in rows]))
        assert self._row is not None
        self._row(step)  # on a logging iteration: step.row, the members' mean
        if step.row:
            host = {k: np.asarray(v) for k, v in jax.device_get(step.metrics).items()}  # [P]
            host.pop(FINITE, None)
            rate = step.row["positions_per_second"] / self.size  # each member's
            rows = [
                {name: float(values[k]) for name, values in host.items()}
                | {"positions_per_second": rate}
                | row
                for k, row in enumerate(rows)
            ]
        for writer, row in zip(self._writers, rows, strict=True):
            if row:
                writer.write({"iteration": step.iteration, "elapsed": step.clock.elapsed()} | row)

    def close(self, step: Step | None) -> None:
        for writer in self._writers:
            writer.close(step)
