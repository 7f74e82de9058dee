"""ShareProbe: a driver hook that measures a run at equal steps of training time.

    probe = ShareProbe(config, seconds=600, evals=10, judge=make_judge(config))
    train(run_dir, config, iterations=2**31 - 1, hooks=[probe])   # the probe ends the run
    probe.rows                                                    # one row a measurement

For a population (``jaxzero.make_population``) give its ``seeds``: each measurement is
then a row per member, each member's network judged on its own, and ``seconds`` and the
rows' ``wall_seconds`` are each member's share of the clock (the population's over P: the
compute of that many single runs, as the members run one at a time on a CPU).

The training clock is the wall time less the checks' (these measurements included) and
less the first iteration, its compilation, so runs of different searches or settings
compare at equal compute. The probe measures at the start and after each ``seconds /
evals`` of that clock; after the last it sets ``step.stop``, and the driver saves the run
as it ends.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax

from jaxzero.core.config import Config
from jaxzero.measure.probes import ShareJudge
from jaxzero.run.hooks import Step

COLUMNS = (
    "game", "search", "simulations", "seed", "iteration", "wall_seconds", "positions",
    "optimal", "optimal_low", "optimal_high",
)  # fmt: skip


@dataclasses.dataclass(eq=False)
class ShareProbe:
    """Measures the raw policy's optimal share at the start, then after each ``seconds /
    evals`` of training time (a population's: per member); ends the run after the last
    (``evals + 1`` rows in all).

    ``judge`` measures (one judge can serve every run of a study); ``rows`` collects a dict
    of :data:`COLUMNS` per measurement (per member of a population: ``seeds`` given, the
    state's leaves [P, ...]), ``wall_seconds`` on the training clock."""

    config: Config
    seconds: float
    evals: int
    judge: ShareJudge
    seeds: tuple[int, ...] = ()  # a population's, member by member; () a single run
    rows: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    _measured: int = 0  # measurements taken
    _zero: float | None = None  # the training clock's zero: the end of the first iteration

    def start(self, state: Any) -> None:
        """The measurement before training (the driver calls it once)."""
        self._measure(state, 0.0)

    def __call__(self, step: Step) -> None:
        jax.block_until_ready(step.state)
        clock = (step.clock.elapsed() - step.clock.checking) / max(len(self.seeds), 1)
        self._zero = clock if self._zero is None else self._zero
        if clock - self._zero >= self.seconds * self._measured / self.evals:
            with step.clock.check(step.state):
                self._measure(step.state, clock - self._zero)
        step.stop = self._measured > self.evals  # the driver saves the run as it ends

    def _measure(self, state: Any, wall: float) -> None:
        self._measured += 1
        members = [(self.config.seed, state)] if not self.seeds else [
            (seed, jax.tree.map(lambda x, k=k: x[k], state)) for k, seed in enumerate(self.seeds)
        ]  # fmt: skip
        search = self.config.search
        for seed, one in members:
            values = (
                self.config.game,
                search.kind,
                search.num_simulations,
                seed,
                int(one.iteration),
                wall,
                int(one.positions_written),
            )
            self.rows.append(dict(zip(COLUMNS, values, strict=False)) | self.judge(one.params))
