"""Strength measures: matches between two policies, and move quality on solved positions.

A policy is ``policy(states, key) -> actions`` over a batch of env states (see
:mod:`jaxzero.measure.opponents`).

* :func:`play_match` plays B games in one compiled ``lax.while_loop``, each random opening
  twice with the colours swapped, and counts wins/draws/losses from the first policy's view;
  :func:`wilson_interval` gives a 95% interval for a score.
* :func:`optimal_move_share` asks a policy for its move in every position of a solved set
  (tic-tac-toe: all 4,520 decision states; Connect Four: the shipped labelled set) and
  reports how often the move is game-theoretically optimal.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.resources
import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import envs
from envs.core import Env, State
from jaxzero.measure.opponents import Policy, sample_legal

Array = jax.Array
CONNECT_FOUR_POSITIONS = "connect_four_positions.npz"


def wilson_interval(wins: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval of a success rate ``wins / n`` (95% for z = 1.96).

    ``wins`` may be fractional (draws as half wins). ``n = 0`` gives ``(0, 1)``.
    """
    if n <= 0:
        return 0.0, 1.0
    p = wins / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def paired_difference(
    first: np.ndarray, second: np.ndarray, z: float = 1.96
) -> tuple[float, float, float]:
    """Difference of two success rates measured on the same items, with its interval.

    ``first`` and ``second`` are bool [N] outcomes item by item (e.g. two policies on one
    position set). Returns (p1 - p2, low, high): Newcombe's (1998, method 10) interval,
    built from each rate's Wilson interval and the correlation of the pairs, which is far
    narrower than comparing two independent intervals when the items are shared.
    """
    first, second = np.asarray(first, bool), np.asarray(second, bool)
    if first.shape != second.shape or first.ndim != 1:
        raise ValueError(f"need two bool [N] outcomes, got {first.shape} and {second.shape}")
    n = len(first)
    if n == 0:
        return 0.0, -1.0, 1.0
    both, only1 = int((first & second).sum()), int((first & ~second).sum())
    only2, neither = int((~first & second).sum()), int((~first & ~second).sum())
    p1, p2 = (both + only1) / n, (both + only2) / n
    l1, u1 = wilson_interval(both + only1, n, z)
    l2, u2 = wilson_interval(both + only2, n, z)
    margins = (both + only1) * (only2 + neither) * (both + only2) * (only1 + neither)
    phi = (both * neither - only1 * only2) / math.sqrt(margins) if margins else 0.0
    below = math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    above = math.sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2))
    return p1 - p2, max(-1.0, p1 - p2 - below), min(1.0, p1 - p2 + above)


@dataclasses.dataclass(frozen=True)
class MatchResult:
    """Game counts from player A's point of view."""

    wins: int
    draws: int
    losses: int
    first: tuple[int, int, int]  # (wins, draws, losses) of the games where A moved first

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    @property
    def score(self) -> float:
        """(wins + draws / 2) / games."""
        return (self.wins + 0.5 * self.draws) / max(self.games, 1)

    def interval(self, z: float = 1.96) -> tuple[float, float]:
        """Wilson interval of :attr:`score`."""
        return wilson_interval(self.wins + 0.5 * self.draws, self.games, z)

    def __str__(self) -> str:
        lo, hi = self.interval()
        return (
            f"+{self.wins} ={self.draws} -{self.losses} of {self.games}: "
            f"score {self.score:.3f} [{lo:.3f}, {hi:.3f}]"
        )


def play_match(
    env: Env,
    policy_a: Policy,
    policy_b: Policy,
    num_games: int,
    key: Array,
    *,
    opening_plies: int = 2,
) -> MatchResult:
    """Play ``num_games`` games of A against B and count A's wins, draws and losses.

    ``num_games // 2`` openings of ``opening_plies`` uniformly random plies are each played
    twice: A moves first in one game and second in the other (the same env keys in both,
    so stochastic games see the same chance events). A game that the random opening ends
    counts with its result, in both colours. All games run in one jitted function; it is
    compiled once per (env, policies, num_games, opening_plies) and cached.
    """
    if num_games <= 0 or num_games % 2:
        raise ValueError(f"num_games must be a positive even number, got {num_games}")
    run = _compiled_match(env, policy_a, policy_b, num_games, opening_plies)
    outcome, a_seat = jax.device_get(run(key))  # int32 [G] in {-1, 0, 1}, int32 [G]
    a_first = a_seat == 0

    def counts(o: np.ndarray) -> tuple[int, int, int]:
        return int((o > 0).sum()), int((o == 0).sum()), int((o < 0).sum())

    wins, draws, losses = counts(outcome)
    return MatchResult(wins, draws, losses, counts(outcome[a_first]))


@functools.lru_cache(maxsize=32)
def _compiled_match(env: Env, policy_a: Policy, policy_b: Policy, num_games: int, plies: int):
    def joint(params_a, params_b, states: State, a_moves: Array, key: Array) -> Array:
        del params_a, params_b  # fixed policies carry no parameters
        k_a, k_b = jax.random.split(key)
        return jnp.where(a_moves, policy_a(states, k_a), policy_b(states, k_b))

    match = make_paired_match(env, joint, num_games, plies)
    return lambda key: match(None, None, key)


@dataclasses.dataclass(frozen=True, eq=False)
class PairedMatch:
    """A compiled paired-opening match (see :func:`make_paired_match`).

    ``match(params_a, params_b, key) -> (outcome int32 [G], a_seat int32 [G])``;
    ``match.recorded(...) -> (outcome, a_seat, actions, final)`` plays the same games (same
    key, same moves) and also returns every game's actions, int32 [G, L] with
    L = ``env.max_steps`` (column ``t`` is the ``t``-th action of the game, random opening
    plies included, -1 once the game is over), and the games' final states [G].
    The two are separate compiled functions, each compiled on its first call, so a caller
    that never asks for the record pays nothing for it.
    """

    play: Callable[[Any, Any, Array], tuple[Array, Array]]
    play_recorded: Callable[[Any, Any, Array], tuple[Array, Array, Array, State]]

    def __call__(self, params_a: Any, params_b: Any, key: Array) -> tuple[Array, Array]:
        return self.play(params_a, params_b, key)

    def recorded(
        self, params_a: Any, params_b: Any, key: Array
    ) -> tuple[Array, Array, Array, State]:
        return self.play_recorded(params_a, params_b, key)


def make_paired_match(env: Env, joint: Callable, num_games: int, opening_plies: int) -> PairedMatch:
    """One jitted match of ``num_games`` games: ``match(params_a, params_b, key) ->
    (outcome int32 [G] in {-1, 0, 1} from A's view, A's seat int32 [G])``.

    ``num_games // 2`` random openings of ``opening_plies`` plies are each played twice,
    A first in one game and second in the other, with the same env keys; then
    ``joint(params_a, params_b, states [G], a_moves bool [G], key)`` gives every game's move
    (A's where A is to move, B's elsewhere) until all games end (``lax.while_loop``).
    Shared by :func:`play_match` (fixed policies) and the arena (two networks).
    ``match.recorded`` also returns the games' actions (:class:`PairedMatch`).
    """
    if num_games <= 0 or num_games % 2:
        raise ValueError(f"num_games must be a positive even number, got {num_games}")
    if opening_plies < 0:
        raise ValueError(f"opening_plies must be >= 0, got {opening_plies}")
    pairs = num_games // 2
    a_seat = jnp.repeat(jnp.arange(2, dtype=jnp.int32), pairs)  # int32 [G]

    def both(x: Array) -> Array:
        return jnp.concatenate([x, x])  # [P, ...] -> [G, ...]: the same for both seats

    def step(states: State, actions: Array, key: Array) -> tuple[State, Array]:
        states = jax.vmap(env.step)(states, actions, both(jax.random.split(key, pairs)))
        return states, jnp.take_along_axis(states.rewards, a_seat[:, None], 1)[:, 0]

    def write(log: Array | None, t: Array, states: State, actions: Array) -> Array | None:
        """The record with column ``t`` set to ``actions`` of the games still on (int32 [G, L])."""
        if log is None:  # not recording (a Python-level choice, fixed at trace time)
            return None
        live = ~(states.terminated | states.truncated)
        return log.at[:, t].set(jnp.where(live, actions, -1), mode="drop")

    def match(params_a: Any, params_b: Any, key: Array, record: bool):
        k_init, k_open, k_play = jax.random.split(key, 3)
        states = jax.vmap(env.init)(both(jax.random.split(k_init, pairs)))
        returns = jnp.zeros(num_games, jnp.float32)  # A's total reward [G]
        log = jnp.full((num_games, env.max_steps), -1, jnp.int32) if record else None

        def opening(carry, x):
            states, returns, log = carry
            t, k = x
            k_act, k_step = jax.random.split(k)
            mask = states.legal_action_mask[:pairs]
            actions = both(jax.vmap(sample_legal)(jax.random.split(k_act, pairs), mask))
            log = write(log, t, states, actions)
            states, reward = step(states, actions, k_step)
            return (states, returns + reward, log), None

        # Step counters exist only when recording, so the plain match compiles as it always did.
        plies = jnp.arange(opening_plies, dtype=jnp.int32) if record else None
        (states, returns, log), _ = jax.lax.scan(
            opening, (states, returns, log), (plies, jax.random.split(k_open, opening_plies))
        )

        def unfinished(carry) -> Array:
            return ~(carry[0].terminated | carry[0].truncated).all()

        def move(carry):
            states, returns, k, t, log = carry
            k, k_move, k_step = jax.random.split(k, 3)
            a_moves = states.current_player == a_seat  # bool [G]
            actions = joint(params_a, params_b, states, a_moves, k_move)
            log = write(log, t, states, actions)
            states, reward = step(states, actions, k_step)
            return states, returns + reward, k, None if t is None else t + 1, log

        t0 = jnp.int32(opening_plies) if record else None
        states, returns, _, _, log = jax.lax.while_loop(
            unfinished, move, (states, returns, k_play, t0, log)
        )
        outcome = jnp.sign(returns).astype(jnp.int32)
        return (outcome, a_seat, log, states) if record else (outcome, a_seat)

    return PairedMatch(
        play=jax.jit(functools.partial(match, record=False)),
        play_recorded=jax.jit(functools.partial(match, record=True)),
    )


# ---------------------------------------------------------------------------- move quality


@dataclasses.dataclass(frozen=True)
class PositionSet:
    """Solved positions of one game, each reached by a move sequence from the start."""

    moves: np.ndarray  # int [N, L]  actions from the initial state, -1 padded
    lengths: np.ndarray  # int32 [N]
    scores: np.ndarray  # int8 [N, A]  mover's score after each action (sign = result)
    legal: np.ndarray  # bool [N, A]

    @property
    def results(self) -> np.ndarray:
        """int8 [N, A]: win 1 / draw 0 / loss -1 after each legal action (-2 if illegal)."""
        return np.where(self.legal, np.sign(self.scores), -2).astype(np.int8)


def position_set(game: str) -> PositionSet:
    """The solved positions of ``game``: "tic_tac_toe" (all 4,520) or "connect_four"."""
    if game == "tic_tac_toe":
        from jaxzero.measure.solvers import tic_tac_toe

        table = tic_tac_toe.solve()
        index = np.flatnonzero(table.decision)
        scores = table.move_scores[index]
        return PositionSet(
            table.decision_moves,
            table.decision_lengths,
            scores,
            scores != tic_tac_toe.ILLEGAL,
        )
    if game == "connect_four":
        from jaxzero.measure.solvers.connect_four import ILLEGAL

        path = importlib.resources.files("jaxzero") / "data" / CONNECT_FOUR_POSITIONS
        with path.open("rb") as f, np.load(f) as data:
            scores = data["scores"]
            return PositionSet(data["moves"], data["lengths"], scores, scores != ILLEGAL)
    raise ValueError(f"no solved positions for {game!r}; choose tic_tac_toe or connect_four")


def states_from_moves(env: Env, moves: np.ndarray, lengths: np.ndarray) -> State:
    """The states [N] reached by playing ``moves[i, :lengths[i]]`` from ``env.init``."""
    return _replayer(env)(jnp.asarray(moves, jnp.int32), jnp.asarray(lengths, jnp.int32))


@functools.lru_cache(maxsize=8)
def _replayer(env: Env):
    @jax.jit
    @jax.vmap
    def replay(row: Array, length: Array) -> State:
        state = env.init(jax.random.key(0))

        def play(t, s):
            nxt = env.step(s, row[t])
            return jax.tree.map(lambda a, b: jnp.where(t < length, a, b), nxt, s)

        return jax.lax.fori_loop(0, row.shape[0], play, state)

    return replay


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
    optimal_moves: np.ndarray = dataclasses.field(default=None, repr=False, compare=False)

    def __str__(self) -> str:
        return (
            f"optimal {self.optimal:.1%} of {self.positions} (exact score {self.exact:.1%}); "
            f"result kept in {self.kept:.1%} of {self.critical} critical positions"
        )


def optimal_move_share(
    policy_fn: Policy,
    game: str | Env,
    *,
    key: Array | None = None,
    batch_size: int = 1024,
) -> MoveQuality:
    """Measure ``policy_fn`` on the solved positions of ``game`` (an env or its id).

    Tic-tac-toe: all 4,520 decision states. Connect Four: the shipped labelled set
    (``jaxzero/data/connect_four_positions.npz``, made by
    ``benchmarks/make_connect_four_positions.py``). Positions are fed in batches of
    ``batch_size`` (the last one padded), so the policy compiles once. An illegal move
    counts as a wrong one.
    """
    env = envs.make(game) if isinstance(game, str) else game
    data = position_set(env.id)
    key = jax.random.key(0) if key is None else key
    n = len(data.lengths)
    batch = min(batch_size, n)
    pad = -n % batch
    moves = np.concatenate([data.moves, np.repeat(data.moves[-1:], pad, 0)])
    lengths = np.concatenate([data.lengths, np.repeat(data.lengths[-1:], pad, 0)])
    act = jax.jit(policy_fn)
    chosen = []
    for start in range(0, n + pad, batch):
        part = slice(start, start + batch)
        states = states_from_moves(env, moves[part], lengths[part])
        key, k = jax.random.split(key)
        chosen.append(np.asarray(act(states, k)))
    action = np.concatenate(chosen)[:n]  # int [N]

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
