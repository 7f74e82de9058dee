"""Fixed opponents for measuring agents: random, one-ply tactics, pure MCTS, perfect play,
greedy players (Star Duel's heuristic, othello's most discs, 2048's largest merge).

Every opponent is a player (:mod:`jaxzero.measure.players`) that takes no parameters:
``opponent(None, states, key) -> actions``, ``states`` a batch of env states (every leaf
has a leading ``[B]`` axis), ``actions`` int32 [B], always a legal action of each state.
Opponents are pure and jit-safe; each is written for one state and ``jax.vmap``-ed, so a
match of B games costs one call per move.

``make_opponent(name, env, **kwargs)`` builds one by name (see :func:`opponents`);
``register_opponent(name, factory)`` adds a name. A game's own players (a solver, a
heuristic) are declared with the rest of the game, in its kit (:mod:`jaxzero.core.games`),
and found here by name; "greedy" and "perfect" are the players its kit names. This module
knows no game by name.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import jax
import jax.numpy as jnp
import mctx

from envs.core import Env, State
from jaxzero.core.games import game_kit, game_kits
from jaxzero.measure.players import Player

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


def batched(act: Callable[[State, Array], Array]) -> Player:
    """Turn ``act(state, key) -> action`` for one state into a batched player."""

    def player(params: Any, states: State, key: Array) -> Array:
        del params  # a fixed opponent has none
        batch = states.current_player.shape[0]
        return jax.vmap(act)(states, jax.random.split(key, batch))

    return player


def require_game(env: Env, game: str, name: str) -> None:
    """ValueError unless ``env`` is the game ``game`` that the opponent ``name`` plays."""
    if env.id != game:
        raise ValueError(f"{name} plays {game}, not {env.id!r}")


def uniform_random(env: Env) -> Player:
    """A uniformly random legal move."""
    del env
    return batched(lambda state, key: sample_legal(key, state.legal_action_mask))


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

    return batched(act)


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


def greedy_by(env: Env, value: Callable[[State, State], Array]) -> Player:
    """The legal move of the highest ``value(state, after)`` (float [A], ``after`` the A
    successor states), ties at random."""
    actions = jnp.arange(env.num_actions)

    def act(state: State, key: Array) -> Array:
        k_step, k_pick = jax.random.split(key)
        after = jax.vmap(lambda a: env.step(state, a, k_step))(actions)  # [A] states
        score = jnp.where(state.legal_action_mask, value(state, after), -jnp.inf)
        return sample_legal(k_pick, state.legal_action_mask & (score == score.max()))

    return batched(act)


def largest_reward(env: Env) -> Player:
    """The move of the highest immediate reward for the mover (2048: the largest merge),
    ties at random: the greedy player of any single-player game."""

    def value(state: State, after: State) -> Array:  # float [A] the step's reward
        return after.rewards[:, state.current_player]

    return greedy_by(env, value)


def greedy(env: Env) -> Player:
    """The game's heuristic player, as its kit names it (:mod:`jaxzero.core.games`:
    ``star_duel_greedy``, ``othello_greedy``, ``largest_reward``); a single-player game
    without one plays ``largest_reward``.

    Other games have none (ValueError): in a game that pays only its outcome, "greedy" is
    the one-ply player."""
    name = game_kit(env.id).heuristic
    if name is None and env.num_players == 1:  # any reward-paying solo game has this one
        name = "largest_reward"
    if name is None:
        have = [game for game, kit in game_kits().items() if kit.heuristic]
        raise ValueError(
            f"no greedy player for {env.id!r}: it plays {', '.join(have)} and single-player "
            "games (one_ply is the greedy player of games scored by outcome)"
        )
    return make_opponent(name, env)


def perfect(env: Env, **kwargs: Any) -> Player:
    """The game's perfect player, as its kit names it (:mod:`jaxzero.core.games`):
    ``tic_tac_toe_minimax``, ``connect_four_solver``."""
    name = game_kit(env.id).perfect
    if name is None:
        have = sorted(g for g, kit in game_kits().items() if kit.perfect)
        raise ValueError(f"no perfect player for {env.id!r}; available for: {have}")
    return make_opponent(name, env, **kwargs)


OpponentFactory = Callable[..., Player]  # (env, **settings) -> Player
# The opponents of any game, and those register_opponent adds; a game's own players are
# its kit's (GameKit.opponents), found by name beside these.
OPPONENTS: dict[str, OpponentFactory] = {
    "random": uniform_random,
    "one_ply": one_ply,
    "pure_mcts": pure_mcts,
    "greedy": greedy,
    "perfect": perfect,
    "largest_reward": largest_reward,
}


def opponents() -> dict[str, OpponentFactory]:
    """Every opponent by name: ``OPPONENTS``, then each game's own players (its kit's)."""
    own = {name: f for kit in game_kits().values() for name, f in kit.opponents.items()}
    return OPPONENTS | {name: f for name, f in own.items() if name not in OPPONENTS}


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
    """Build the opponent ``name`` (a key of :func:`opponents`) for ``env``.

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
    known = opponents()
    if name not in known:
        raise ValueError(f"unknown opponent {name!r}; choose one of: {', '.join(known)}")
    return known[name](env, **kwargs)
