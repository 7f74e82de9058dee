"""Fixed opponents for measuring agents: random, one-ply tactics, pure MCTS, perfect play,
greedy players (Star Duel's heuristic, othello's most discs, 2048's largest merge).

Every opponent is a player (:mod:`jaxzero.measure.players`) that takes no parameters:
``opponent(None, states, key) -> actions``, ``states`` a batch of env states (every leaf
has a leading ``[B]`` axis), ``actions`` int32 [B], always a legal action of each state.
Opponents are pure and jit-safe; each is written for one state and ``jax.vmap``-ed, so a
match of B games costs one call per move.

``make_opponent(name, env, **kwargs)`` builds one by name (see ``OPPONENTS``);
``register_opponent(name, factory)`` adds a name. "greedy" and "perfect" are the game's
own heuristic and perfect players, as its entry in :mod:`jaxzero.measure.games` names
them; this module knows no game by name beyond the players written for one.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, cast, runtime_checkable

import jax
import jax.numpy as jnp
import mctx
import numpy as np

from envs.core import Env, State
from jaxzero.measure.games import EXTRAS, game_extras
from jaxzero.measure.players import Player

if TYPE_CHECKING:
    from envs.connect_four import ConnectFourState
    from envs.star_duel import StarDuelState
    from envs.tic_tac_toe import TicTacToeState

Array = jax.Array


@runtime_checkable
class TreePlayer(Player, Protocol):
    """A player that may keep its search trees between moves (tree reuse): the match
    engine, ``play`` and ``gtp`` carry them when ``reuses_tree`` is on."""

    @property
    def reuses_tree(self) -> bool: ...

    def empty_trees(self, states: State, params: Any = None) -> Any:
        """Empty carried trees for ``states`` [G] (a new game's memory)."""
        ...

    def act(self, params: Any, states: State, trees: Any, key: Array) -> tuple[Array, Any]:
        """Moves [G] from searches grown from ``trees``, and the grown trees."""
        ...

    def carry(self, trees: Any, actions: Array) -> Any:
        """The trees after ``actions`` [G] are played from their roots."""
        ...


def sample_legal(key: Array, mask: Array) -> Array:
    """A uniformly random action among ``mask`` (bool [A]); int32 []."""
    logits = jnp.where(mask, 0.0, jnp.finfo(jnp.float32).min)
    return jax.random.categorical(key, logits).astype(jnp.int32)


def _batched(act: Callable[[State, Array], Array]) -> Player:
    """Turn ``act(state, key) -> action`` for one state into a batched player."""

    def player(params: Any, states: State, key: Array) -> Array:
        del params  # a fixed opponent has none
        batch = states.current_player.shape[0]
        return jax.vmap(act)(states, jax.random.split(key, batch))

    return player


def _plays(env: Env, game: str, name: str) -> None:
    """ValueError unless ``env`` is the game ``game`` that the opponent ``name`` plays."""
    if env.id != game:
        raise ValueError(f"{name} plays {game}, not {env.id!r}")


def uniform_random(env: Env) -> Player:
    """A uniformly random legal move."""
    del env
    return _batched(lambda state, key: sample_legal(key, state.legal_action_mask))


# Successor states one_ply steps at once for each state it plays (times the games in play).
REPLY_STEPS = 256


def one_ply(env: Env) -> Player:
    """Win if you can, block if you must, else random.

    For each legal action ``a`` the player looks at ``env.step(state, a)``:

    * **win**: the step pays the mover +1. If any action wins, one of those is played.
    * **block**: a move is *unsafe* when, after it, the turn passes to the opponent and the
      opponent has a legal action that pays them +1 at once. Unsafe moves are avoided
      whenever a safe one exists. This is the general form of "block the opponent's winning
      point": in Connect Four or tic-tac-toe, when the opponent threatens to win, every move
      but the block leaves the threat (unsafe) and the block is the safe one; it also avoids
      moves that create a winning point, such as playing just below an opponent threat.
    * otherwise a uniformly random move among the safe ones (among all legal ones if every
      move is unsafe: the position is lost to one-ply tactics anyway).

    Multi-action turns: if the mover moves again after ``a`` (the turn does not pass), ``a``
    counts as safe: one ply is one action by each side, and the player does not search
    sequences of its own actions. Stochastic games: the look-ahead steps use one sampled
    key, so "win" and "unsafe" are judged on that sample.

    The replies are A x A steps a state: they are taken ``REPLY_STEPS // A`` first moves
    at a time (``lax.map``), so that a match of many games of a game of many actions fits
    in memory (docs/benchmarks.md, "Measuring costs").
    """
    actions = jnp.arange(env.num_actions)
    chunk = max(1, REPLY_STEPS // env.num_actions)  # first moves whose replies go together

    def immediate_wins(state: State, key: Array) -> Array:
        """bool [A]: legal actions whose step pays the player to move +1."""
        after = jax.vmap(lambda a: env.step(state, a, key))(actions)
        return state.legal_action_mask & (after.rewards[:, state.current_player] > 0)

    def act(state: State, key: Array) -> Array:
        k_step, k_pick = jax.random.split(key)
        legal = state.legal_action_mask  # bool [A]
        after = jax.vmap(lambda a: env.step(state, a, k_step))(actions)  # [A] states
        wins = legal & (after.rewards[:, state.current_player] > 0)  # bool [A]
        replies_win = jax.lax.map(  # bool [A]
            lambda s: immediate_wins(s, k_step).any(), after, batch_size=chunk
        )
        live = ~(after.terminated | after.truncated)
        turn_passes = after.current_player != state.current_player
        safe = legal & ~(live & turn_passes & replies_win)  # bool [A]
        choice = jnp.where(wins.any(), wins, jnp.where(safe.any(), safe, legal))
        return sample_legal(k_pick, choice)

    return _batched(act)


def rollout_return(env: Env, state: State, key: Array) -> Array:
    """Return of one uniformly random playout from ``state``, for its player to move.

    The sum of the rewards paid to ``state.current_player`` until the game ends (terminal
    or truncated); 0 for a finished state. Unbatched; float32 [].
    """

    def unfinished(carry: tuple[State, Array, Array]) -> Array:
        s, _, _ = carry
        return ~(s.terminated | s.truncated)

    def play(carry: tuple[State, Array, Array]) -> tuple[State, Array, Array]:
        s, total, k = carry
        k, k_act, k_step = jax.random.split(k, 3)
        s = env.step(s, sample_legal(k_act, s.legal_action_mask), k_step)
        return s, total + s.rewards, k

    init = (state, jnp.zeros(env.num_players, jnp.float32), key)
    _, total, _ = jax.lax.while_loop(unfinished, play, init)
    return total[state.current_player]


def pure_mcts(
    env: Env,
    *,
    num_simulations: int = 200,
    exploration: float = 1.0,
) -> Player:
    """Monte Carlo tree search with random rollouts, no network: the pre-AlphaZero baseline.

    The tree is ``mctx.muzero_policy`` with a uniform prior over legal actions and no root
    noise; a new leaf is valued by one uniformly random playout (:func:`rollout_return`).
    Edges carry the env's reward for the mover, and the discount is +1 when the same player
    moves again, -1 when the turn passes and 0 once the game is over (the DESIGN.md rule).
    Q-values are mapped from [-1, 1] to [0, 1]; the selection score is
    ``Q(a) + exploration * sqrt(N) / (1 + n(a))`` up to mctx's slowly growing c(N)
    (the prior 1/A is cancelled by ``pb_c_init = exploration * A``), a UCT-like rule. The
    move played is the most visited (random among ties).
    """
    num_actions = env.num_actions
    low = jnp.finfo(jnp.float32).min

    def prior_logits(mask: Array) -> Array:
        return jnp.where(mask, 0.0, low)

    def expand(state: State, action: Array, key: Array):
        k_step, k_roll = jax.random.split(key)
        nxt = env.step(state, action, k_step)
        mover = state.current_player
        done = nxt.terminated | nxt.truncated
        discount = jnp.where(done, 0.0, jnp.where(nxt.current_player == mover, 1.0, -1.0))
        value = jnp.where(done, 0.0, rollout_return(env, nxt, k_roll))
        out = mctx.RecurrentFnOutput(
            reward=nxt.rewards[mover],
            discount=discount,
            prior_logits=prior_logits(nxt.legal_action_mask),
            value=value,
        )
        return out, nxt

    def recurrent_fn(params, key, action, states):
        del params
        batch = action.shape[0]
        return jax.vmap(expand)(states, action, jax.random.split(key, batch))

    def player(params: Any, states: State, key: Array) -> Array:
        del params
        batch = states.current_player.shape[0]
        k_root, k_search = jax.random.split(key)
        root_values = jax.vmap(functools.partial(rollout_return, env))(
            states, jax.random.split(k_root, batch)
        )
        done = states.terminated | states.truncated
        root = mctx.RootFnOutput(
            prior_logits=jax.vmap(prior_logits)(states.legal_action_mask),
            value=jnp.where(done, 0.0, root_values),
            embedding=states,
        )
        out = mctx.muzero_policy(
            params=(),
            rng_key=k_search,
            root=root,
            recurrent_fn=recurrent_fn,
            num_simulations=num_simulations,
            invalid_actions=~states.legal_action_mask,
            qtransform=functools.partial(mctx.qtransform_by_min_max, min_value=-1, max_value=1),
            dirichlet_fraction=0.0,
            pb_c_init=exploration * num_actions,
            temperature=0.0,
        )
        return out.action.astype(jnp.int32)

    return player


def tic_tac_toe_minimax(env: Env) -> Player:
    """Perfect tic-tac-toe: a uniformly random move among those with the best result.

    Reads the exhaustive table of :mod:`jaxzero.measure.solvers.tic_tac_toe` (computed once per
    process) with the base-3 index of ``state.board``. Never loses; wins whenever the
    opponent errs into a lost position.
    """
    _plays(env, "tic_tac_toe", "tic_tac_toe_minimax")
    from jaxzero.measure.solvers import tic_tac_toe

    results = tic_tac_toe.solve().move_results  # int8 [19683, 9]
    table = jnp.asarray(np.where(results == tic_tac_toe.ILLEGAL, -2, results), jnp.int8)
    powers = jnp.asarray(tic_tac_toe.POWERS)

    def act(state: State, key: Array) -> Array:
        board = cast("TicTacToeState", state).board  # tic-tac-toe's, as _plays checked
        index = jnp.sum((board + 1) * powers)
        values = table[index]  # int8 [9], -2 where illegal
        best = state.legal_action_mask & (values == values.max())
        return sample_legal(key, jnp.where(best.any(), best, state.legal_action_mask))

    return _batched(act)


def connect_four_solver(env: Env, *, max_nodes: int = 2_000_000) -> Player:
    """Connect Four by the exact solver where it is fast enough, else one-ply tactics.

    For each state a host callback runs :class:`jaxzero.measure.solvers.connect_four.Solver` on
    every column with a budget of ``max_nodes`` search nodes (about 0.2 s per million on
    one core). If the position is solved in budget, a uniformly random move among those
    with the best score is played (the quickest win, the slowest loss); otherwise the
    :func:`one_ply` move. Early positions (fewer than about 8 stones) are beyond a small
    budget, so this player is perfect in the middle and end game only.
    """
    _plays(env, "connect_four", "connect_four_solver")
    from jaxzero.measure.solvers import connect_four as c4

    solver = c4.Solver()
    fallback = one_ply(env)

    def label(boards: np.ndarray, players: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lead = players.shape
        boards = boards.reshape(-1, c4.HEIGHT, c4.WIDTH)  # flat [.., 42] or [.., 6, 7] boards
        players = players.reshape(-1)
        scores = np.full((len(boards), c4.WIDTH), c4.ILLEGAL, np.int8)
        solved = np.zeros(len(boards), bool)
        done: dict[tuple[int, int], np.ndarray | None] = {}  # a batch may repeat positions
        for i, (board, player) in enumerate(zip(boards, players, strict=True)):
            position, mask, moves = c4.bitboards_from_board(board, int(player))
            if moves == c4.CELLS or c4.is_over(position ^ mask, mask):
                continue
            if (position, mask) not in done:
                done[position, mask] = solver.move_scores_bitboards(
                    position, mask, moves, max_nodes=max_nodes
                )
            found = done[position, mask]
            if found is not None:
                scores[i], solved[i] = found, True
        return scores.reshape(*lead, c4.WIDTH), solved.reshape(lead)

    def player(params: Any, states: State, key: Array) -> Array:
        del params
        k_fallback, k_pick = jax.random.split(key)
        batch = states.current_player.shape[0]
        shapes = (
            jax.ShapeDtypeStruct((batch, c4.WIDTH), jnp.int8),
            jax.ShapeDtypeStruct((batch,), jnp.bool_),
        )
        boards = cast("ConnectFourState", states).board  # Connect Four's, as _plays checked
        scores, solved = jax.pure_callback(
            label, shapes, boards, states.current_player, vmap_method="broadcast_all"
        )
        best = states.legal_action_mask & (scores == scores.max(axis=1, keepdims=True))
        keys = jax.random.split(k_pick, batch)
        exact = jax.vmap(sample_legal)(keys, best & solved[:, None])
        return jnp.where(solved, exact, fallback(None, states, k_fallback))

    return player


def _greedy_by(env: Env, value: Callable[[State, State], Array]) -> Player:
    """The legal move of the highest ``value(state, after)`` (float [A], ``after`` the A
    successor states), ties at random."""
    actions = jnp.arange(env.num_actions)

    def act(state: State, key: Array) -> Array:
        k_step, k_pick = jax.random.split(key)
        after = jax.vmap(lambda a: env.step(state, a, k_step))(actions)  # [A] states
        score = jnp.where(state.legal_action_mask, value(state, after), -jnp.inf)
        return sample_legal(k_pick, state.legal_action_mask & (score == score.max()))

    return _batched(act)


def largest_reward(env: Env) -> Player:
    """The move of the highest immediate reward for the mover (2048: the largest merge),
    ties at random: the greedy player of any single-player game."""

    def value(state: State, after: State) -> Array:  # float [A] the step's reward
        return after.rewards[:, state.current_player]

    return _greedy_by(env, value)


def othello_greedy(env: Env) -> Player:
    """Othello (``pgx/othello``): the move that leaves the mover the most discs (the most
    flipped), ties at random."""
    _plays(env, "pgx/othello", "othello_greedy")

    def value(state: State, after: State) -> Array:  # float [A] the mover's discs after
        planes = jax.vmap(env.observe, in_axes=(0, None))(after, state.current_player)
        return planes[..., 0].reshape(env.num_actions, -1).sum(-1).astype(jnp.float32)

    return _greedy_by(env, value)


def star_duel_greedy(env: Env) -> Player:
    """Star Duel's heuristic (:func:`envs.star_duel.greedy_action`): play every card, buy
    the most expensive affordable card, destroy bases (outposts first), attack the player,
    end the turn."""
    from envs import star_duel

    _plays(env, star_duel.StarDuel.id, "star_duel_greedy")
    # Star Duel's own states, as _plays checked.
    return _batched(lambda state, key: star_duel.greedy_action(cast("StarDuelState", state), key))


def greedy(env: Env) -> Player:
    """The game's heuristic player, as its registry entry names it
    (:mod:`jaxzero.measure.games`: ``star_duel_greedy``, ``othello_greedy``,
    ``largest_reward``); a single-player game without one plays ``largest_reward``.

    Other games have none (ValueError): in a game that pays only its outcome, "greedy" is
    the one-ply player."""
    name = game_extras(env.id).heuristic
    if name is None and env.num_players == 1:  # any reward-paying solo game has this one
        name = "largest_reward"
    if name is None:
        have = [game for game, extras in EXTRAS.items() if extras.heuristic]
        raise ValueError(
            f"no greedy player for {env.id!r}: it plays {', '.join(have)} and single-player "
            "games (one_ply is the greedy player of games scored by outcome)"
        )
    return make_opponent(name, env)


def perfect(env: Env, **kwargs: Any) -> Player:
    """The game's perfect player, as its registry entry names it
    (:mod:`jaxzero.measure.games`): ``tic_tac_toe_minimax``, ``connect_four_solver``."""
    name = game_extras(env.id).perfect
    if name is None:
        have = sorted(g for g, extras in EXTRAS.items() if extras.perfect)
        raise ValueError(f"no perfect player for {env.id!r}; available for: {have}")
    return make_opponent(name, env, **kwargs)


OpponentFactory = Callable[..., Player]  # (env, **settings) -> Player
OPPONENTS: dict[str, OpponentFactory] = {
    "random": uniform_random,
    "one_ply": one_ply,
    "pure_mcts": pure_mcts,
    "greedy": greedy,
    "perfect": perfect,
    "tic_tac_toe_minimax": tic_tac_toe_minimax,
    "connect_four_solver": connect_four_solver,
    "star_duel_greedy": star_duel_greedy,
    "othello_greedy": othello_greedy,
    "largest_reward": largest_reward,
}


def register_opponent(name: str, factory: OpponentFactory) -> None:
    """Make the opponent ``name`` (``make_opponent``, the periodic evaluation's and
    ``make_evaluation``'s opponents, ``jaxzero eval --opponents``) build
    ``factory(env, **settings)``.

    Args:
        name: the opponent's name: a plain word (no ``:``, ``,`` or space).
        factory: ``(env, **settings) -> Player``, a player that takes no parameters
            (``opponent(None, states [G], key) -> int32 [G]``, a legal action per state),
            pure and jit-safe; ValueError for a game it does not play.

    Raises:
        ValueError: ``name`` is empty or holds a ``:``, ``,`` or space.
    """
    if not name or any(c in name for c in ":, "):
        raise ValueError(f"an opponent name is a plain word, got {name!r}")
    OPPONENTS[name] = factory


def make_opponent(name: str, env: Env, **kwargs: Any) -> Player:
    """Build the opponent ``name`` (a key of ``OPPONENTS``) for ``env``.

    Args:
        name: "random", "one_ply", "pure_mcts", "greedy" (the game's heuristic player),
            "perfect" (the game's perfect player), a game's own player
            ("tic_tac_toe_minimax", "connect_four_solver", "star_duel_greedy",
            "othello_greedy", "largest_reward"), or a name :func:`register_opponent` added.
        env: the game it plays.
        **kwargs: the opponent's own settings, e.g. ``num_simulations`` of "pure_mcts",
            ``max_nodes`` of "connect_four_solver".

    Returns:
        A :class:`Player` that takes no parameters: ``opponent(None, states [G], key)``
        -> int32 [G], a legal action per state.

    Raises:
        ValueError: an unknown ``name``, or an opponent that does not play ``env`` (a
            solver of another game, no greedy or perfect player for it).
    """
    if name not in OPPONENTS:
        raise ValueError(f"unknown opponent {name!r}; choose one of: {', '.join(OPPONENTS)}")
    return OPPONENTS[name](env, **kwargs)
