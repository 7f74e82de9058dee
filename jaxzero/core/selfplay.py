"""Batched self-play: B games stepped together by ``lax.scan``, persisting across calls.

Each game carries its env state and its trajectory so far (at most ``env.max_steps``
positions: observation, search policy, legal mask, mover, root value, return so far). A
call plays T moves of every game. When a game ends (terminated or truncated) after the
move at ply ``n - 1``, each of its positions ``i < n`` is labelled

    value_target_i = (1 - w) · G_i + w · q_i,    G_i = Σ_{t=i}^{n-1} γ^(t - i) · r_{t+1}[mover_i]

where ``r_{t+1}`` is the reward vector paid by the move at ply ``t``, ``mover_i`` the
player to move at position ``i``, so ``G_i`` is the discounted return from position ``i``
to the end for the player who decides there (γ < 1 prefers quick wins), ``q_i`` the
search's root value there (mover's view) and ``w`` the config's ``root_value_weight``
(0 = AlphaZero's pure outcome; mixing in ``q`` trades the outcome's noise, which moves
played later add, for the search's bias). One rule for every game: in a two-player game
whose only reward is the outcome ``z`` on the last move, ``G_i = γ^(n - 1 - i) · z[mover_i]``
(AlphaZero's target, discounted); in a single-player game it is the discounted score to
the end. ``G`` is accumulated as the rewards arrive (:func:`add_rewards`). All positions
are written to the replay buffer in order, and the game restarts from ``env.init``. No
game is cut off because a call ended: the next call continues it.

With playout-cap randomisation (``SelfPlayConfig.full_search_share`` < 1) a move of the
batch is searched cheaply with probability 1 - p (``lax.cond``, one draw per move: the B
games are searched together); its positions are recorded with an all-zero policy, which
the loss reads as "no policy target" (KataGo's weighting: the policy term of a minibatch
is averaged over all its positions, cheap ones adding zero).

With tree reuse (``SearchConfig.reuse_tree``) each game also carries its search tree: the
subtree of the move played (:func:`jaxzero.core.search.carry_tree`) is the next search's
root; a new game, or a chance event the tree did not foresee, starts from an empty tree.

With ``model.td_steps`` n > 0 (single-player games) ``G_i`` is instead the n-step return
bootstrapped from the search's root value n moves later,
``Σ_{t=i}^{i+n-1} γ^(t-i) · r_{t+1} + γ^n · q_{i+n}`` (the sum stopping at the game's end,
where nothing is bootstrapped): MuZero's target for scores.

For a learned model (and for n-step targets) each game also records the move played at
each position and the reward it paid its mover; a finished game's positions are written
with them and with how many positions of the game follow each (``remaining``), which the
learner's unroll reads (:mod:`jaxzero.core.unroll`).

The write is one masked scatter of the fixed-shape [B, L] trajectory block per move,
rows of unfinished games and slots past a game's length being dropped.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import jax
import jax.numpy as jnp

from envs.core import Env, State, state_dataclass
from jaxzero.core import mcts, search
from jaxzero.core import model as model_lib
from jaxzero.core import replay as replay_lib
from jaxzero.core.config import SelfPlayConfig
from jaxzero.core.networks import ApplyFn
from jaxzero.core.policies import SearchPolicy
from jaxzero.core.search import SearchOptions

Array = jax.Array


@state_dataclass
class SelfPlayState:
    """B games, L = env.max_steps, A = actions."""

    env_state: State  # [B] the positions to move from (never finished: games auto-reset)
    observation: Array  # [B, L, *observation_shape] positions of the current games
    policy: Array  # float32 [B, L, A] search policies
    legal_action_mask: Array  # bool [B, L, A]
    player: Array  # int32 [B, L]  mover at each position
    root_value: Array  # float32 [B, L]  search value at each position, mover's view
    value_return: Array  # float32 [B, L]  discounted return since each position, mover's view
    length: Array  # int32 [B]  positions recorded in the current game
    returns: Array  # float32 [B, P]  rewards summed over the current game, per player
    tree: mcts.Tree | None = None  # [B] the carried search trees (None: no tree reuse)
    # The moves and their rewards (a learned model, n-step targets; None otherwise):
    action: Array | None = None  # int32 [B, L]  move played at each position
    reward: Array | None = None  # float32 [B, L]  what it paid its mover

    def replace(self, **changes) -> SelfPlayState:
        return dataclasses.replace(self, **changes)


METRIC_SUMS = (
    "games_finished",
    "game_length_sum",
    "first_player_wins",
    "draws",
    "first_player_losses",
    "kl_search_prior_sum",
    "prior_entropy_sum",
    "search_entropy_sum",
    "root_value_sum",
    "positions_written",
    "first_player_return_sum",
)
# A learned model's search: its nodes, and those off the true rules' paths.
MODEL_SUMS = ("off_rules_sum", "expanded_sum")


def init_selfplay(
    env: Env,
    batch_size: int,
    key: Array,
    reuse_simulations: int | None = None,
    record_moves: bool = False,
) -> SelfPlayState:
    """B fresh games with empty trajectories, and empty carried trees for searches of
    ``reuse_simulations`` when given (tree reuse); ``record_moves``: the trajectories
    keep each position's move and reward (a learned model, n-step targets)."""
    states = jax.vmap(env.init)(jax.random.split(key, batch_size))
    tree = None
    if reuse_simulations is not None:
        tree = search.empty_trees(states, reuse_simulations, env.num_actions)
    b, length, a = batch_size, env.max_steps, env.num_actions
    obs = states.observation
    return SelfPlayState(
        env_state=states,
        observation=jnp.zeros((b, length, *obs.shape[1:]), obs.dtype),
        policy=jnp.zeros((b, length, a), jnp.float32),
        legal_action_mask=jnp.zeros((b, length, a), jnp.bool_),
        player=jnp.zeros((b, length), jnp.int32),
        root_value=jnp.zeros((b, length), jnp.float32),
        value_return=jnp.zeros((b, length), jnp.float32),
        length=jnp.zeros((b,), jnp.int32),
        returns=jnp.zeros((b, env.num_players), jnp.float32),
        tree=tree,
        action=jnp.zeros((b, length), jnp.int32) if record_moves else None,
        reward=jnp.zeros((b, length), jnp.float32) if record_moves else None,
    )


def _entropy(p: Array) -> Array:
    return -jnp.sum(jnp.where(p > 0, p * jnp.log(jnp.where(p > 0, p, 1.0)), 0.0), axis=-1)


def add_rewards(sp: SelfPlayState, rewards: Array, discount: float) -> SelfPlayState:
    """Credit the rewards [B, P] of the move just made from each game's last recorded
    position (ply ``length - 1``) to the return of every recorded position ``i``: its
    mover's reward, discounted by γ^(length - 1 - i)."""
    n = sp.player.shape[1]
    ply = jnp.arange(n, dtype=jnp.int32)[None, :]  # [1, L]
    plies_after = (sp.length[:, None] - 1 - ply).astype(jnp.float32)  # [B, L]
    to_mover = jnp.take_along_axis(rewards, sp.player, axis=1)  # [B, L]
    gain = to_mover * jnp.power(jnp.float32(discount), jnp.maximum(plies_after, 0.0))
    return sp.replace(
        value_return=sp.value_return + jnp.where(ply < sp.length[:, None], gain, 0.0),
        returns=sp.returns + rewards,
    )


def n_step_returns(sp: SelfPlayState, n: int, discount: float) -> Array:
    """float32 [B, L]: each position's n-step return, bootstrapped from the root value n
    positions later, the sum stopping at the game's end (single-player: one mover)."""
    assert sp.reward is not None, "n-step returns need the recorded rewards"
    length = sp.player.shape[1]
    ply = jnp.arange(length, dtype=jnp.int32)[None, :]  # [1, L]
    gamma = jnp.float32(discount)
    total = jnp.zeros_like(sp.reward)
    for j in range(n):  # n is small (MuZero: 10); each term a shifted copy of the rewards
        later = jnp.pad(sp.reward[:, j:], ((0, 0), (0, j)))  # [B, L]: r at ply i + j
        total = total + jnp.where(ply + j < sp.length[:, None], gamma**j * later, 0.0)
    bootstrap = jnp.pad(sp.root_value[:, n:], ((0, 0), (0, n)))  # q at ply i + n
    return total + jnp.where(ply + n < sp.length[:, None], gamma**n * bootstrap, 0.0)


def finished_games_batch(
    sp: SelfPlayState, done: Array, root_value_weight: float = 0.0, td_steps: int = 0,
    discount: float = 1.0,
):  # fmt: skip
    """The positions of finished games, flattened game-major: (Batch [B*L], valid [B*L]);
    value targets the return to the end, or with ``td_steps`` n > 0 the n-step return."""
    b, n = sp.player.shape
    ply = jnp.arange(n, dtype=jnp.int32)[None, :]  # [1, L]
    target = sp.value_return if td_steps == 0 else n_step_returns(sp, td_steps, discount)
    # w may be a population member's traced value: computed even at 0 (it is then exact)
    target = (1.0 - root_value_weight) * target + root_value_weight * sp.root_value
    valid = done[:, None] & (ply < sp.length[:, None])  # [B, L]
    batch = replay_lib.Batch(
        observation=sp.observation.reshape(b * n, *sp.observation.shape[2:]),
        policy=sp.policy.reshape(b * n, -1),
        value_target=target.reshape(b * n),
        legal_action_mask=sp.legal_action_mask.reshape(b * n, -1),
    )
    if sp.action is not None and sp.reward is not None:
        remaining = sp.length[:, None] - 1 - ply  # [B, L]
        batch = batch.replace(
            action=sp.action.reshape(b * n),
            reward=sp.reward.reshape(b * n),
            remaining=remaining.reshape(b * n),
        )
    return batch, valid.reshape(b * n)


def _record_move(sp: SelfPlayState, action: Array, rewards: Array, mover: Array) -> SelfPlayState:
    """Record the move [B] played at each game's last recorded position and what the
    rewards [B, P] of that move paid its ``mover`` [B] (when the trajectories keep moves)."""
    if sp.action is None or sp.reward is None:
        return sp
    reward = jnp.take_along_axis(rewards, mover[:, None], axis=1)[:, 0]  # [B]
    rows, at = jnp.arange(sp.length.shape[0]), sp.length - 1  # [B], [B]
    return sp.replace(
        action=sp.action.at[rows, at].set(action), reward=sp.reward.at[rows, at].set(reward)
    )


def _record_position(sp: SelfPlayState, states: State, policy: Array, value: Array):
    """Append each game's current position, search policy [B, A] and root value [B] to
    its trajectory (at index ``sp.length``, per game)."""
    rows, at = jnp.arange(sp.length.shape[0]), sp.length  # [B], [B]
    return sp.replace(
        observation=sp.observation.at[rows, at].set(states.observation),
        policy=sp.policy.at[rows, at].set(policy),
        legal_action_mask=sp.legal_action_mask.at[rows, at].set(states.legal_action_mask),
        player=sp.player.at[rows, at].set(states.current_player),
        root_value=sp.root_value.at[rows, at].set(value),
        length=at + 1,
    )


def _move_sums(root, weights: Array, sp: SelfPlayState, done: Array, valid: Array) -> dict:
    """The metric sums of one move (``METRIC_SUMS``): finished games' outcomes and
    lengths, KL(search || prior) and both entropies over the B positions."""
    prior = jax.nn.softmax(root.prior_logits, axis=-1)  # [B, A]
    log_ratio = jnp.log(jnp.where(weights > 0, weights, 1.0)) - jnp.log(
        jnp.maximum(prior, jnp.finfo(jnp.float32).tiny)
    )
    kl = jnp.sum(jnp.where(weights > 0, weights * log_ratio, 0.0), axis=-1)
    outcome = sp.returns[:, 0]
    donef = done.astype(jnp.float32)
    return {
        "games_finished": donef.sum(),
        "game_length_sum": (donef * sp.length).sum(),
        "first_player_wins": (donef * (outcome > 0)).sum(),
        "draws": (donef * (outcome == 0)).sum(),
        "first_player_losses": (donef * (outcome < 0)).sum(),
        "kl_search_prior_sum": kl.sum(),
        "prior_entropy_sum": _entropy(prior).sum(),
        "search_entropy_sum": _entropy(weights).sum(),
        "root_value_sum": root.value.sum(),
        "positions_written": valid.sum().astype(jnp.float32),
        "first_player_return_sum": (donef * outcome).sum(),
    }


def _make_search_move(
    sp_cfg: SelfPlayConfig,
    env: Env,
    apply_fn: ApplyFn,
    policy: SearchPolicy,
    options: SearchOptions,
    simulations: int,
    member_axis: str | None,
) -> Callable:
    """``search_move(params, states, root, tree, k_search, k_act) -> (weights, action,
    value, verdict, target, tree, counts)``: the search of a move of B games, its policy
    ``weights`` float32 [B, A], the move chosen ``action`` int32 [B], the root ``value``
    float32 [B] (the mean of its simulations: the value target), the search's ``verdict``
    float32 [B] (its own choice's Q, as the board and the game records show it: Gumbel's
    mean counts its visits to weaker moves), the policy ``target`` [B, A] recorded for
    training (``weights``, or zeros after a cheap search of playout-cap randomisation),
    the grown tree (None without tree reuse) and a learned model's node counts
    (``MODEL_SUMS``, float32 [] each; zeros with the rules); values from the mover's
    view."""

    def search_move(params, states, root, tree, k_search, k_act):
        def searched(num_simulations: int, noise: bool):
            output = search.run_search(
                params, states, k_search, env, apply_fn, policy, options=options,
                num_simulations=num_simulations, noise=noise, root=root, tree=tree,
                member_axis=member_axis,
            )  # fmt: skip
            action = search.select_action(
                output,
                states.step_count,
                k_act,
                policy=policy,
                temperature_moves=sp_cfg.temperature_moves,
                temperature=sp_cfg.temperature,
            )
            grown = output.search_tree if tree is not None else None
            counts = (jnp.float32(0), jnp.float32(0))
            if options.model is not None:
                counts = model_lib.off_rules_counts(output.search_tree)
            summary = output.search_tree.summary()
            best = policy.greedy_action(output)  # int32 [B]
            verdict = jnp.take_along_axis(summary.qvalues, best[:, None], axis=-1)[:, 0]
            return output.action_weights, action, summary.value, verdict, grown, counts

        if not sp_cfg.playout_cap:
            weights, action, value, verdict, grown, counts = searched(simulations, True)
            return weights, action, value, verdict, weights, grown, counts
        # One draw for the batch (its games are searched together): full or cheap.
        full = jax.random.uniform(jax.random.fold_in(k_search, 2)) < sp_cfg.full_search_share
        weights, action, value, verdict, grown, counts = jax.lax.cond(
            full,
            lambda: searched(simulations, True),
            lambda: searched(sp_cfg.cheap_simulations, False),
        )
        return weights, action, value, verdict, jnp.where(full, weights, 0.0), grown, counts

    return search_move


def make_selfplay_fn(
    config: SelfPlayConfig,
    env: Env,
    apply_fn: ApplyFn,
    policy: SearchPolicy,
    options: SearchOptions,
    *,
    num_simulations: int,
    member_axis: str | None = None,
    td_steps: int = 0,
) -> Callable:
    """``play(params, sp, buffer, key) -> (sp, buffer, sums, moves)``: T moves of every game.

    ``sums`` maps the names in ``METRIC_SUMS`` to float32 scalars summed over the T moves
    (outcomes are from the first player's view; KL and entropies summed over positions).
    ``moves`` are the moves as played, for game records
    (``jaxzero.go.records.SelfPlayRecorder``): ``{"action": int32 [T, B], "done": bool
    [T, B] (the move ended the slot's game, which restarts), "reward": float32 [T, B, P],
    "value": float32 [T, B] (the search's verdict on the position before the move, its
    chosen move's Q from the mover's view)}``.
    Each move is searched by ``policy`` with ``num_simulations`` (a cheap search of
    playout-cap randomisation with ``config.cheap_simulations``) as ``options`` say (with
    ``options.reuse_tree`` the games carry their trees in ``sp.tree``); ``member_axis``
    names the population axis it is vmapped over, if any
    (:func:`jaxzero.core.search.run_search`). With a learned model (``options.model``)
    ``sums`` also holds ``MODEL_SUMS``; ``td_steps`` n > 0: n-step value targets.
    """
    sp_cfg = config
    search_move = _make_search_move(
        sp_cfg, env, apply_fn, policy, options, num_simulations, member_axis
    )

    def move(carry, key):
        params, sp, buffer = carry
        k_search, k_act, k_env, k_reset = jax.random.split(key, 4)
        states = sp.env_state
        b = states.current_player.shape[0]

        root = search.make_root(params, states, apply_fn, options)
        weights, action, value, verdict, target, tree, counts = search_move(
            params, states, root, sp.tree, k_search, k_act
        )
        if sp_cfg.opening_plies > 0:  # uniformly random legal moves open every game
            k_open = jax.random.fold_in(k_act, 1)
            opening = jax.random.categorical(
                k_open, jnp.where(states.legal_action_mask, 0.0, -jnp.inf), axis=-1
            ).astype(jnp.int32)
            action = jnp.where(states.step_count < sp_cfg.opening_plies, opening, action)

        if tree is not None:  # the move played (opening moves too) roots the next search
            tree = search.carry_tree(tree, action, num_simulations)
        sp = _record_position(sp, states, target, value)
        nxt = jax.vmap(env.step)(states, action, jax.random.split(k_env, b))
        sp = _record_move(sp, action, nxt.rewards, states.current_player)
        sp = add_rewards(sp, nxt.rewards, sp_cfg.discount)
        done = nxt.terminated | nxt.truncated  # bool [B]

        batch, valid = finished_games_batch(
            sp, done, sp_cfg.root_value_weight, td_steps, sp_cfg.discount
        )
        buffer = replay_lib.add(buffer, batch, valid)

        fresh = jax.vmap(env.init)(jax.random.split(k_reset, b))
        env_state = jax.tree.map(
            lambda f, n: jnp.where(done.reshape(-1, *[1] * (n.ndim - 1)), f, n), fresh, nxt
        )

        sums = _move_sums(root, weights, sp, done, valid)
        if options.model is not None:
            sums |= dict(zip(MODEL_SUMS, counts, strict=True))
        sp = sp.replace(
            env_state=env_state,
            tree=tree,
            length=jnp.where(done, 0, sp.length),
            value_return=jnp.where(done[:, None], 0.0, sp.value_return),
            returns=jnp.where(done[:, None], 0.0, sp.returns),
        )
        moves = dict(action=action.astype(jnp.int32), done=done, reward=nxt.rewards, value=verdict)
        return (params, sp, buffer), (sums, moves)

    def play(params, sp: SelfPlayState, buffer, key: Array):
        keys = jax.random.split(key, sp_cfg.moves_per_iteration)
        (_, sp, buffer), (sums, moves) = jax.lax.scan(move, (params, sp, buffer), keys)
        sums = jax.tree.map(lambda x: x.sum().astype(jnp.float32), sums)
        return sp, buffer, sums, moves

    return play
