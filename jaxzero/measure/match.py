"""The match engine: two players, paired random openings, both colours, one compiled loop.

    match = make_match(env, player_a, player_b, num_games=100, opening_plies=2)
    result = match.result(params_a, params_b, key)     # MatchResult, A's point of view
    outcome, a_seat = match(params_a, params_b, key)    # int32 [G] each, on device
    outcome, a_seat, actions, final = match.recorded(params_a, params_b, key)

``num_games / 2`` openings of ``opening_plies`` uniformly random plies are each played
twice, A first in one game and second in the other, with the same env keys (so
stochastic games see the same chance events); then the players take over until every
game has ended, all in one ``lax.while_loop``. A game the opening ends counts with its
result, in both colours.

When both sides are the same :class:`~jaxzero.measure.players.SearchPlayer` (two
networks of one architecture searching alike), one batched search serves both: tree
``g`` evaluates every node with the network of the player to move at its root (both
networks run on every node batch, each tree keeps its own's output), so the tree work is
done once and the compiled function holds one search, not two. Otherwise every player is
asked for every game at every move and each game takes its mover's answer.

A search player with tree reuse (``SearchPlayer.reuses_tree``) keeps one tree per game,
in the loop's carry: only the mover's search grows its tree, and every move played, by
either side, carries both sides' trees to the subtree of that move (a player whose tree
had not looked at the opponent's reply starts its next search fresh). In the shared
search each game searches from its mover's tree.

The match object owns its two compiled functions (plain and recording), each compiled on
its first call, so a caller that never asks for the record pays nothing for it.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from envs.core import Env, State
from jaxzero.measure.opponents import TreePlayer, sample_legal
from jaxzero.measure.players import Player, SearchPlayer
from jaxzero.measure.statistics import wilson_interval

Array = jax.Array
# (params_a, params_b, states [G], a_moves bool [G], key, trees) -> (int32 [G], trees):
# every game's move; trees = (A's, B's) carried search trees, None for a player without
JointMove = Callable[[Any, Any, State, Array, Array, Any], tuple[Array, Any]]


@dataclasses.dataclass(frozen=True)
class MatchResult:
    """Game counts from player A's point of view.

    ``str(result)`` reads ``+W =D -L of G: score S [lo, hi]`` (the Wilson interval).

    Attributes:
        wins: games A won (A's total reward > 0).
        draws: games drawn (total reward 0).
        losses: games A lost (total reward < 0).
        first: ``(wins, draws, losses)`` of the games where A moved first.
    """

    wins: int
    draws: int
    losses: int
    first: tuple[int, int, int]  # (wins, draws, losses) of the games where A moved first

    @classmethod
    def from_games(cls, outcome: Any, a_seat: Any) -> MatchResult:
        """Count the games of a match (host arrays or device arrays, fetched here).

        Args:
            outcome: int [G] in {-1, 0, 1}, each game's result from A's view.
            a_seat: int [G], A's seat in each game (0: A moved first).

        Returns:
            The :class:`MatchResult` of the G games.
        """
        outcome, a_seat = np.asarray(jax.device_get(outcome)), np.asarray(jax.device_get(a_seat))
        return cls(*_counts(outcome), _counts(outcome[a_seat == 0]))

    @property
    def games(self) -> int:
        """Games played: wins + draws + losses."""
        return self.wins + self.draws + self.losses

    @property
    def score(self) -> float:
        """(wins + draws / 2) / games."""
        return (self.wins + 0.5 * self.draws) / max(self.games, 1)

    def interval(self, z: float = 1.96) -> tuple[float, float]:
        """Wilson interval of :attr:`score` (a draw counting half a win).

        Args:
            z: the normal quantile of the confidence level (1.96: 95%).

        Returns:
            ``(low, high)``, the interval's bounds on the score in [0, 1].
        """
        return wilson_interval(self.wins + 0.5 * self.draws, self.games, z)

    def __str__(self) -> str:
        lo, hi = self.interval()
        return (
            f"+{self.wins} ={self.draws} -{self.losses} of {self.games}: "
            f"score {self.score:.3f} [{lo:.3f}, {hi:.3f}]"
        )


def _counts(outcome: np.ndarray) -> tuple[int, int, int]:
    return int((outcome > 0).sum()), int((outcome == 0).sum()), int((outcome < 0).sum())


@dataclasses.dataclass(frozen=True, eq=False)
class Match:
    """A compiled paired match (see the module docstring); build it with :func:`make_match`."""

    env: Env
    num_games: int
    play: Callable[[Any, Any, Array], tuple[Array, Array]]
    play_recorded: Callable[[Any, Any, Array], tuple[Array, Array, Array, State]]

    def __call__(self, params_a: Any, params_b: Any, key: Array) -> tuple[Array, Array]:
        """(outcome int32 [G] in {-1, 0, 1} from A's view, A's seat int32 [G])."""
        return self.play(params_a, params_b, key)

    def recorded(self, params_a: Any, params_b: Any, key: Array):
        """The same games (same key, same moves) with every game's actions, int32 [G, L]
        with L = ``env.max_steps`` (column ``t`` is the game's ``t``-th action, opening
        plies included, -1 once it is over), and the final states [G]."""
        return self.play_recorded(params_a, params_b, key)

    def result(self, params_a: Any, params_b: Any, key: Array) -> MatchResult:
        return MatchResult.from_games(*self.play(params_a, params_b, key))


def make_match(
    env: Env, player_a: Player, player_b: Player, num_games: int, opening_plies: int
) -> Match:
    """The match of ``num_games`` games (even) of A against B; see the module docstring.

    ``num_games / 2`` random openings of ``opening_plies`` plies, each played with A first
    and with A second; one batched search serves both sides when they are the same
    :class:`~jaxzero.measure.players.SearchPlayer`. Nothing is compiled until the match is
    first played.

    Args:
        env: the game (two players).
        player_a: A, a :class:`~jaxzero.measure.opponents.Player`.
        player_b: B, the same or another player.
        num_games: G, a positive even number of games.
        opening_plies: uniformly random plies that open each pair of games.

    Returns:
        A :class:`Match`: ``match(params_a, params_b, key)`` gives ``(outcome int32 [G]``
        in {-1, 0, 1} from A's view, ``a_seat int32 [G])``; ``match.result(...)`` the
        :class:`MatchResult`; ``match.recorded(...)`` also the actions int32 [G, L] and the
        final states [G].

    Raises:
        ValueError: ``num_games`` not positive and even, or ``opening_plies`` < 0.
    """
    if num_games <= 0 or num_games % 2:
        raise ValueError(f"num_games must be a positive even number, got {num_games}")
    if opening_plies < 0:
        raise ValueError(f"opening_plies must be >= 0, got {opening_plies}")
    if isinstance(player_a, SearchPlayer) and player_a == player_b:
        joint = _shared_search(player_a)
    else:
        joint = _each_asked(player_a, player_b)
    players = (player_a, player_b)
    games = functools.partial(_play, env, joint, players, num_games, opening_plies)
    return Match(
        env=env,
        num_games=num_games,
        play=jax.jit(functools.partial(games, record=False)),
        play_recorded=jax.jit(functools.partial(games, record=True)),
    )


def _where_games(take: Array, a: Any, b: Any) -> Any:
    """Per game [G]: ``a``'s trees where ``take``, else ``b``'s."""
    return jax.tree.map(lambda x, y: jnp.where(take.reshape(-1, *[1] * (x.ndim - 1)), x, y), a, b)


def _ask(player: Player, params, states: State, trees, key: Array) -> tuple[Array, Any]:
    if trees is None or not isinstance(player, TreePlayer):
        return player(params, states, key), None
    return player.act(params, states, trees, key)


def _each_asked(player_a: Player, player_b: Player) -> JointMove:
    def joint(params_a, params_b, states, a_moves, key, trees):
        k_a, k_b = jax.random.split(key)
        actions_a, grown_a = _ask(player_a, params_a, states, trees[0], k_a)
        actions_b, grown_b = _ask(player_b, params_b, states, trees[1], k_b)
        kept = (
            None if grown_a is None else _where_games(a_moves, grown_a, trees[0]),
            None if grown_b is None else _where_games(~a_moves, grown_b, trees[1]),
        )
        return jnp.where(a_moves, actions_a, actions_b), kept

    return joint


def _shared_search(player: SearchPlayer) -> JointMove:
    apply_fn = player.apply_fn

    def paired_apply(variables, observation):
        params_a, params_b, a_moves = variables
        logits_a, value_a = apply_fn(params_a, observation)
        logits_b, value_b = apply_fn(params_b, observation)
        return (
            jnp.where(a_moves[:, None], logits_a, logits_b),
            jnp.where(a_moves, value_a, value_b),
        )

    both = player.replace(apply_fn=paired_apply)

    def joint(params_a, params_b, states, a_moves, key, trees):
        variables = (params_a, params_b, a_moves)
        if trees[0] is None:
            return both(variables, states, key), trees
        actions, grown = both.act(variables, states, _where_games(a_moves, *trees), key)
        return actions, (
            _where_games(a_moves, grown, trees[0]),
            _where_games(~a_moves, grown, trees[1]),
        )

    return joint


def _carried(players: tuple[Player, Player], trees, actions: Array):
    """Both sides' trees after ``actions`` [G] are played."""
    return tuple(
        p.carry(t, actions) if t is not None and isinstance(p, TreePlayer) else None
        for p, t in zip(players, trees, strict=True)
    )


def _play(
    env: Env, joint: JointMove, players: tuple[Player, Player], num_games: int,
    opening_plies: int, params_a, params_b, key, record,
):  # fmt: skip
    """The games of :func:`make_match`: (outcome, a_seat) or, recording, also the actions
    and final states. ``record`` is a Python-level choice, fixed at trace time."""
    pairs = num_games // 2
    a_seat = jnp.repeat(jnp.arange(2, dtype=jnp.int32), pairs)  # int32 [G]

    def both(x: Array) -> Array:
        return jnp.concatenate([x, x])  # [P, ...] -> [G, ...]: the same for both seats

    def step(states: State, actions: Array, key: Array) -> tuple[State, Array]:
        states = jax.vmap(env.step)(states, actions, both(jax.random.split(key, pairs)))
        return states, jnp.take_along_axis(states.rewards, a_seat[:, None], 1)[:, 0]

    def write(log: Array | None, t: Array, states: State, actions: Array) -> Array | None:
        """The record with column ``t`` set to the actions of the games still on."""
        if log is None:
            return None
        live = ~(states.terminated | states.truncated)
        return log.at[:, t].set(jnp.where(live, actions, -1), mode="drop")

    def opening(carry, x):
        states, returns, log = carry
        t, k = x
        k_act, k_step = jax.random.split(k)
        mask = states.legal_action_mask[:pairs]
        actions = both(jax.vmap(sample_legal)(jax.random.split(k_act, pairs), mask))
        log = write(log, t, states, actions)
        states, reward = step(states, actions, k_step)
        return (states, returns + reward, log), None

    def unfinished(carry) -> Array:
        return ~(carry[0].terminated | carry[0].truncated).all()

    def move(carry):
        states, returns, k, t, log, trees = carry
        k, k_move, k_step = jax.random.split(k, 3)
        a_moves = states.current_player == a_seat
        actions, trees = joint(params_a, params_b, states, a_moves, k_move, trees)
        log = write(log, t, states, actions)
        states, reward = step(states, actions, k_step)
        trees = _carried(players, trees, actions)
        return states, returns + reward, k, None if t is None else t + 1, log, trees

    k_init, k_open, k_play = jax.random.split(key, 3)
    states = jax.vmap(env.init)(both(jax.random.split(k_init, pairs)))
    returns = jnp.zeros(num_games, jnp.float32)  # A's total reward [G]
    log = jnp.full((num_games, env.max_steps), -1, jnp.int32) if record else None
    # Step counters exist only when recording, so the plain match compiles as it always did.
    plies = jnp.arange(opening_plies, dtype=jnp.int32) if record else None
    (states, returns, log), _ = jax.lax.scan(
        opening, (states, returns, log), (plies, jax.random.split(k_open, opening_plies))
    )
    t0 = jnp.int32(opening_plies) if record else None
    trees = tuple(
        p.empty_trees(states) if isinstance(p, TreePlayer) and p.reuses_tree else None
        for p in players
    )
    states, returns, _, _, log, _ = jax.lax.while_loop(
        unfinished, move, (states, returns, k_play, t0, log, trees)
    )
    outcome = jnp.sign(returns).astype(jnp.int32)
    return (outcome, a_seat, log, states) if record else (outcome, a_seat)


def play_match(
    env: Env,
    player_a: Player,
    player_b: Player,
    num_games: int,
    key: Array,
    *,
    opening_plies: int = 2,
    params_a: Any = None,
    params_b: Any = None,
) -> MatchResult:
    """One match, compiled for this call alone: ``make_match(...).result(...)``. Keep the
    :class:`Match` of :func:`make_match` instead to play the same match more than once.

    Args:
        env: the game (two players).
        player_a: A, a :class:`~jaxzero.measure.opponents.Player`.
        player_b: B, the same or another player.
        num_games: G, a positive even number of games.
        key: a PRNG key for the openings, the players and the env.
        opening_plies: uniformly random plies that open each pair of games.
        params_a: A's network variables (None for a fixed opponent).
        params_b: B's network variables (None for a fixed opponent).

    Returns:
        The :class:`MatchResult`, from A's point of view.

    Raises:
        ValueError: ``num_games`` not positive and even, or ``opening_plies`` < 0.
    """
    match = make_match(env, player_a, player_b, num_games, opening_plies)
    return match.result(params_a, params_b, key)
