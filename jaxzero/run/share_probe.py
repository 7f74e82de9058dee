"""ShareProbe: a driver hook that measures a run at equal steps of training time.

    probe = ShareProbe(config, seconds=600, evals=10, judge=make_judge(config))
    train(run_dir, config, iterations=2**31 - 1, hooks=[probe])   # the probe ends the run
    probe.rows                                                    # one row a measurement

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
    evals`` of training time; ends the run after the last (``evals + 1`` rows in all).

    ``judge`` measures (one judge can serve every run of a study); ``rows`` collects a dict
    of :data:`COLUMNS` per measurement, ``wall_seconds`` on the training clock."""

    config: Config
    seconds: float
    evals: int
    judge: ShareJudge
    rows: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    _zero: float | None = None  # the training clock's zero: the end of the first iteration

    def start(self, state: Any) -> None:
        """The measurement before training (the driver calls it once)."""
        self._measure(state, 0.0)

    def __call__(self, step: Step) -> None:
        jax.block_until_ready(step.state)
        clock = step.clock.elapsed() - step.clock.checking
        self._zero = clock if self._zero is None else self._zero
        if clock - self._zero >= self.seconds * len(self.rows) / self.evals:
            with step.clock.check(step.state):
                self._measure(step.state, clock - self._zero)
        step.stop = len(self.rows) > self.evals  # the driver saves the run as it ends

    def _measure(self, state: Any, wall: float) -> None:
        config = self.config
        values = (config.game, config.search.kind, config.search.num_simulations, config.seed)
        values += (int(state.iteration), wall, int(state.positions_written))
        self.rows.append(dict(zip(COLUMNS, values, strict=False)) | self.judge(state.params))
