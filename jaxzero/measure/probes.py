"""Probes: a network's solver-optimal move share, measured again and again as it trains.

    judge = make_judge(config)        # config's raw network, its game's solved positions
    judge(params)                     # {"optimal": 0.87, "optimal_low": ..., "optimal_high": ...}

A judge replays its game's solved positions once and its player compiles once, so one
judge serves every measurement of a study: each run of one network shape, each time it is
measured. The driver's periodic evaluation calls one from inside training
(``eval/raw_optimal``, every ``evaluation.every`` iterations).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import envs
from jaxzero.core import networks
from jaxzero.core.config import Config
from jaxzero.core.model import make_network
from jaxzero.measure.players import RawPolicyPlayer
from jaxzero.measure.positions import MoveQuality, SolvedPositions
from jaxzero.measure.statistics import wilson_interval


def optimal_share(quality: MoveQuality) -> dict[str, float]:
    """The optimal-move share of ``quality`` with its 95% Wilson interval.

    Args:
        quality: a player's moves judged on a solved position set.

    Returns:
        ``optimal``, ``optimal_low`` and ``optimal_high``, shares of all its positions.
    """
    low, high = wilson_interval(quality.optimal * quality.positions, quality.positions)
    return {"optimal": quality.optimal, "optimal_low": low, "optimal_high": high}


@dataclasses.dataclass(frozen=True, eq=False)
class ShareJudge:
    """A network's raw policy as a player, and the solved positions it is judged on."""

    player: RawPolicyPlayer
    positions: SolvedPositions

    def quality(self, params: Any) -> MoveQuality:
        """The raw policy of ``params`` on every solved position."""
        return self.positions.quality(self.player, params)

    def __call__(self, params: Any) -> dict[str, float]:
        """The raw policy's optimal share with its interval (:func:`optimal_share`)."""
        return optimal_share(self.quality(params))


def make_judge(config: Config) -> ShareJudge:
    """The judge of every network ``config`` trains.

    Args:
        config: a run's config; its game needs a solved position set
            (``jaxzero.measure.games.solved_games()``: tic-tac-toe, Connect Four).

    Returns:
        The raw policy of ``config.network`` as a player, with the game's solved positions
        replayed once.
    """
    env = envs.make(config.game)
    network = make_network(config, env)  # the rules network, or the learned model's
    return ShareJudge(RawPolicyPlayer(networks.make_apply_fn(network)), SolvedPositions(env))
