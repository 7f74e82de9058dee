"""Move quality on solved positions: how often a player's move is game-theoretically optimal.

    probe = SolvedPositions(env)                      # replays the game's solved set once
    quality = probe.quality(player, params)           # MoveQuality
    quality = optimal_move_share(player, "connect_four", params=params)   # the same, once

The positions come from the game's registry entry (:mod:`jaxzero.measure.games`):
tic-tac-toe's 4,520 decision states, Connect Four's shipped solver-labelled set. They are
fed to the player in batches of ``batch_size`` (the last one padded), so the player
compiles once per probe; an illegal move counts as a wrong one.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import envs
from envs.core import Env, State
from jaxzero.measure.games import PositionSet, position_set
from jaxzero.measure.players import Player

Array = jax.Array


def make_replayer(env: Env) -> Callable[[Array, Array], State]:
    """``replay(moves int32 [N, L], lengths int32 [N]) -> states [N]``, jitted: the state
    after ``moves[i, :lengths[i]]`` from ``env.init`` (a negative length replays nothing).
    The caller keeps it: each call with the same shapes reuses its compilation."""

    @jax.jit
    @jax.vmap
    def replay(row: Array, length: Array) -> State:
        state = env.init(jax.random.key(0))

        def play(t, s):
            nxt = env.step(s, row[t])
            return jax.tree.map(lambda a, b: jnp.where(t < length, a, b), nxt, s)

        return jax.lax.fori_loop(0, row.shape[0], play, state)

    return replay


def states_from_moves(env: Env, moves: np.ndarray, lengths: np.ndarray) -> State:
    """The states [N] reached by playing ``moves[i, :lengths[i]]`` from ``env.init``."""
    return make_replayer(env)(jnp.asarray(moves, jnp.int32), jnp.asarray(lengths, jnp.int32))


@dataclasses.dataclass(frozen=True)
class MoveQuality:
    """How often a policy's move is game-theoretically optimal on a solved position set."""

    positions: int
    optimal: float  # share of positions whose move keeps the best result (win/draw/loss)
    exact: float  # share whose move has the best score (the quickest win, slowest loss)
    critical: int  # positions where some legal move would change the result
    kept: float  # share of the critical positions whose move keeps the result
    # bool [positions]: whether each position's move kept the best result (for paired
    # comparisons of two policies on the same set; see paired_difference)
    optimal_moves: np.ndarray | None = dataclasses.field(default=None, repr=False, compare=False)

    def __str__(self) -> str:
        return (
            f"optimal {self.optimal:.1%} of {self.positions} (exact score {self.exact:.1%}); "
            f"result kept in {self.kept:.1%} of {self.critical} critical positions"
        )


@dataclasses.dataclass(frozen=True, eq=False)
class SolvedPositions:
    """The solved position set of ``env``'s game, replayed once into batches of states."""

    env: Env
    batch_size: int = 1024

    @functools.cached_property
    def data(self) -> PositionSet:
        return position_set(self.env.id)

    @functools.cached_property
    def batches(self) -> list[State]:
        """The positions as states, in batches of one size (the last padded)."""
        n = len(self.data.lengths)
        batch = min(self.batch_size, n)
        pad = -n % batch
        moves = np.concatenate([self.data.moves, np.repeat(self.data.moves[-1:], pad, 0)])
        lengths = np.concatenate([self.data.lengths, np.repeat(self.data.lengths[-1:], pad, 0)])
        replay = make_replayer(self.env)
        return [
            replay(
                jnp.asarray(moves[i : i + batch], jnp.int32),
                jnp.asarray(lengths[i : i + batch], jnp.int32),
            )
            for i in range(0, n + pad, batch)
        ]

    def quality(self, player: Player, params: Any = None, key: Array | None = None) -> MoveQuality:
        """``player``'s moves on every position, the player compiled once (jax keeps the
        compilation with the player: a kept player is compiled on its first probe only)."""
        act = jax.jit(player)
        key = jax.random.key(0) if key is None else key
        chosen = []
        for states in self.batches:
            key, k = jax.random.split(key)
            chosen.append(np.asarray(act(params, states, k)))
        return judge(self.data, np.concatenate(chosen)[: len(self.data.lengths)])


def judge(data: PositionSet, action: np.ndarray) -> MoveQuality:
    """The quality of one chosen action int [N] per position of ``data``."""
    n = len(action)
    rows = np.arange(n)
    results = data.results  # int8 [N, A], -2 illegal
    best = results.max(1)
    worst = np.where(data.legal, results, 2).min(1)
    legal_choice = data.legal[rows, action]
    kept = legal_choice & (results[rows, action] == best)
    scores = np.where(data.legal, data.scores.astype(np.int32), -1000)
    exact = legal_choice & (scores[rows, action] == scores.max(1))
    critical = worst < best
    return MoveQuality(
        positions=n,
        optimal=float(kept.mean()),
        exact=float(exact.mean()),
        critical=int(critical.sum()),
        kept=float(kept[critical].mean()) if critical.any() else 1.0,
        optimal_moves=kept,
    )


def optimal_move_share(
    player: Player,
    game: str | Env,
    *,
    params: Any = None,
    key: Array | None = None,
    batch_size: int = 1024,
) -> MoveQuality:
    """Measure ``player`` on the solved positions of ``game`` (an env or its id), once.

    The positions are replayed and fed to the player in batches of ``batch_size`` (the
    last padded), so it compiles once; an illegal move counts as a wrong one. To measure
    more than once, keep a :class:`SolvedPositions` instead.

    Args:
        player: a :class:`~jaxzero.measure.players.Player`.
        game: an env or its id with a solved position set ("tic_tac_toe",
            "connect_four").
        params: the player's network variables; None for a fixed opponent.
        key: a PRNG key, split per batch; default ``jax.random.key(0)``.
        batch_size: N, the positions per call of the player.

    Returns:
        A :class:`MoveQuality`: the share of optimal moves, of exact-score moves, of kept
        results on critical positions, and ``optimal_moves`` bool [positions].

    Raises:
        ValueError: an unknown game, or one without a solved position set.
    """
    env = envs.make(game) if isinstance(game, str) else game
    return SolvedPositions(env, batch_size).quality(player, params, key)
