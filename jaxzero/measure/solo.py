"""Single-player games measured by their score: a player's games, all in one compiled loop.

    solo = make_solo(env, player, games=100)
    result = solo(params, key)                  # SoloResult: scores and lengths [G]
    result.mean, result.interval()              # mean score and its 95% interval

A single-player game has no opponent and no outcome, so its strength is the score a
player makes: the sum of its rewards over a game, played to the end (or ``max_steps``).
The driver's periodic evaluation of a single-player game (:func:`make_evaluation` there)
is the playing network's mean score beside random play's and the greedy player's.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from envs.core import Env
from jaxzero.measure.players import Player

Array = jax.Array


@dataclasses.dataclass(frozen=True)
class SoloResult:
    scores: np.ndarray  # float32 [G]  each game's summed rewards
    lengths: np.ndarray  # int32 [G]  moves played
    final: Any = None  # the final states [G] (host arrays), for game-specific summaries

    @property
    def games(self) -> int:
        return int(self.scores.shape[0])

    @property
    def mean(self) -> float:
        return float(np.mean(self.scores))

    def interval(self, z: float = 1.96) -> tuple[float, float]:
        """The normal-approximation interval of the mean score."""
        half = (
            z * float(np.std(self.scores, ddof=1)) / math.sqrt(self.games)
            if self.games > 1
            else 0.0
        )
        return self.mean - half, self.mean + half

    def __str__(self) -> str:
        low, high = self.interval()
        return f"mean score {self.mean:.1f} [{low:.1f}, {high:.1f}] over {self.games} games"


def make_solo(env: Env, player: Player, games: int):
    """``solo(params, key) -> SoloResult``: ``games`` games of ``player`` from ``env.init``
    (one key each), played until every game has ended; one compiled function."""
    if env.num_players != 1:
        raise ValueError(f"{env.id} has {env.num_players} players; play it with a match")

    def run(params: Any, key: Array):
        k_init, k_play = jax.random.split(key)
        states = jax.vmap(env.init)(jax.random.split(k_init, games))
        scores = jnp.zeros((games,), jnp.float32)

        def live(carry) -> Array:
            states, _, _, t = carry
            return ~(states.terminated | states.truncated).all() & (t < env.max_steps)

        def move(carry):
            states, scores, key, t = carry
            key, k_act, k_env = jax.random.split(key, 3)
            actions = player(params, states, k_act)
            states = jax.vmap(env.step)(states, actions, jax.random.split(k_env, games))
            return states, scores + states.rewards[:, 0], key, t + 1

        states, scores, _, _ = jax.lax.while_loop(live, move, (states, scores, k_play, 0))
        return scores, states.step_count, states

    compiled = jax.jit(run)

    def solo(params: Any, key: Array) -> SoloResult:
        scores, lengths, final = jax.device_get(compiled(params, key))
        return SoloResult(np.asarray(scores), np.asarray(lengths), final)

    return solo
