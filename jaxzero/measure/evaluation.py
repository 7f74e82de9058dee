"""A player against fixed opponents, all in one compiled match.

    evaluation = make_evaluation(env, player, ("random", "one_ply"), games=100, opening_plies=2)
    results = evaluation(params, key)          # {"random": MatchResult, "one_ply": ...}
    metrics = evaluation.metrics(results)      # eval/vs_random, eval/vs_random_wins, ...

One match of ``K * games`` games serves the K opponents: the opponents' side is a
mixture that knows each game's opponent, so the player's search runs
once per move for all of them (every opponent is asked for every game; cheap next to a
search). Each opponent gets ``games / 2`` paired openings, played with both colours.
The driver's periodic evaluation and ``jaxzero eval`` are this.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from envs.core import Env, State
from jaxzero.measure.match import Match, MatchResult, make_match
from jaxzero.measure.opponents import make_opponent
from jaxzero.measure.players import Player
from jaxzero.measure.solo import SoloResult, make_solo

Array = jax.Array
DRIVER_OPPONENTS = ("random", "one_ply")  # the driver's periodic evaluation
SOLO_OPPONENTS = ("random", "greedy")  # the same, for single-player games


@dataclasses.dataclass(frozen=True, eq=False)
class Mixture:
    """Several fixed opponents as one player of a match of G games: game ``g`` is played
    by ``players[choice[g]]``. It takes no parameters, as its opponents take none."""

    players: tuple[Player, ...]
    choice: np.ndarray  # int32 [G]  the opponent of each game, an index into players

    def __call__(self, params: Any, states: State, key: Array) -> Array:
        del params  # fixed opponents have none
        keys = jax.random.split(key, len(self.players))
        actions = jnp.stack([p(None, states, k) for p, k in zip(self.players, keys, strict=True)])
        choice = jnp.asarray(self.choice)[None, :]
        return jnp.take_along_axis(actions, choice, axis=0)[0]  # [K, G] -> [G]


@dataclasses.dataclass(frozen=True, eq=False)
class Evaluation:
    """``evaluation(params, key) -> {opponent: MatchResult}`` (see the module docstring)."""

    opponents: tuple[str, ...]
    games: int  # per opponent
    match: Match
    choice: np.ndarray  # int32 [K * games]  the opponent of each game

    def __call__(self, params: Any, key: Array) -> dict[str, MatchResult]:
        return self._split(*self.match(params, None, key))

    def recorded(self, params: Any, key: Array) -> dict[str, tuple[MatchResult, tuple]]:
        """The same games with their record, per opponent: (result, (outcome, a_seat,
        actions, final)) as host arrays (``Match.recorded``)."""
        outcome, seat, actions, final = jax.device_get(self.match.recorded(params, None, key))
        out = {}
        for name, mine in self._games().items():
            part = jax.tree.map(functools.partial(np.take, indices=mine, axis=0), final)
            games = (outcome[mine], seat[mine], actions[mine], part)
            out[name] = (MatchResult.from_games(outcome[mine], seat[mine]), games)
        return out

    def _games(self) -> dict[str, np.ndarray]:
        return {name: np.flatnonzero(self.choice == i) for i, name in enumerate(self.opponents)}

    def _split(self, outcome: Array, seat: Array) -> dict[str, MatchResult]:
        outcome, seat = jax.device_get((outcome, seat))
        return {
            name: MatchResult.from_games(outcome[mine], seat[mine])
            for name, mine in self._games().items()
        }

    @staticmethod
    def metrics(results: dict[str, MatchResult]) -> dict[str, float]:
        """``eval/vs_NAME`` (score, draws count half) and ``eval/vs_NAME_wins`` (win rate)."""
        out = {}
        for name, result in results.items():
            out[f"eval/vs_{name}"] = result.score
            out[f"eval/vs_{name}_wins"] = result.wins / max(result.games, 1)
        return out


@dataclasses.dataclass(frozen=True, eq=False)
class SoloEvaluation:
    """``evaluation(params, key) -> {"player": SoloResult, NAME: SoloResult, ...}``: the
    player's games of a single-player game and each fixed player's, ``games`` each."""

    solos: dict[str, Any]  # name -> make_solo(...) ("player" takes params, the rest None)

    def __call__(self, params: Any, key: Array) -> dict[str, SoloResult]:
        keys = jax.random.split(key, len(self.solos))
        return {
            name: solo(params if name == "player" else None, k)
            for (name, solo), k in zip(self.solos.items(), keys, strict=True)
        }

    @staticmethod
    def metrics(results: dict[str, SoloResult]) -> dict[str, float]:
        """``eval/score`` (the player's mean score) and ``eval/NAME_score`` (the others')."""
        return {
            ("eval/score" if name == "player" else f"eval/{name}_score"): result.mean
            for name, result in results.items()
        }


def make_evaluation(
    env: Env, player: Player, opponents: tuple[str, ...], games: int, opening_plies: int
) -> Evaluation | SoloEvaluation:
    """``player`` against the named fixed opponents, ``games`` (even) games each; for a
    single-player game, the player's score beside ``SOLO_OPPONENTS``' (``opponents`` and
    ``opening_plies`` unused)."""
    if env.num_players == 1:
        fixed = {name: make_solo(env, make_opponent(name, env), games) for name in SOLO_OPPONENTS}
        return SoloEvaluation({"player": make_solo(env, player, games), **fixed})
    if games < 2 or games % 2:
        raise ValueError(f"games per opponent must be an even number >= 2, got {games}")
    count = len(opponents)
    pairs = count * games // 2
    pair_choice = (np.arange(pairs) * count) // pairs  # each opponent gets games/2 pairs
    choice = np.concatenate([pair_choice, pair_choice]).astype(np.int32)
    side = Mixture(tuple(make_opponent(name, env) for name in opponents), choice)
    match = make_match(env, player, side, count * games, opening_plies)
    return Evaluation(tuple(opponents), games, match, choice)
