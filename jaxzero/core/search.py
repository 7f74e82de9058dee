"""mctx search over any Env: the recurrent function, PUCT and Gumbel policies, move choice.

The model mctx plans with is the game itself: a node's embedding is the env state, and
expanding it steps the env and asks the network for the new position's prior and value.
mctx backs values up as ``q = reward + discount * value(child)``, every quantity from
the point of view of the player to move at the *parent*. Hence, for the transition
``s --a--> s'`` made by ``mover = s.current_player``:

    reward   = s'.rewards[mover]                       (the mover's reward)
    discount = 0   if s' is terminal or truncated      (nothing follows)
             = +1  if s'.current_player == mover       (the same player moves again)
             = -1  otherwise                           (the turn passes: values flip sign)
    value    = v(s') from s'.current_player's view, 0 at the end

Illegal actions are masked at the root (``invalid_actions``) and inside the tree (prior
logits set to the dtype's smallest finite value, never ``-inf``, so a softmax over a row
with a single legal action stays finite).

Tree reuse (``SearchConfig.reuse_tree``): a search may start from a carried tree
(:func:`carry_tree`: the subtree of the move played, from :func:`jaxzero.core.mcts.subtree`)
of capacity 2S + 1 nodes for S simulations. It is used only where its root is the position
reached, every field of the state equal (:func:`same_states`); elsewhere, as after a chance
event the tree did not foresee, a redealt hidden hand, or a new game, the search starts
from an empty tree. So reuse is exact for deterministic games and harmless for the rest.

Chance (games whose step draws a dice roll or a spawned tile from its key). By default
the key is the chance event: mctx expands each edge once and keeps the state it reached,
so a child keeps the outcome it first sampled (docs/pgx.md measures the bias). With
``SearchConfig.chance_nodes``, for a game that enumerates its events
(``env.num_chance_outcomes``), the tree has explicit chance nodes
(:func:`make_chance_recurrent_fn`, :mod:`jaxzero.core.mcts`): a move with a chance event
leads to a chance node, whose children are the outcomes, visited in proportion to their
probabilities, so its value is their expectation. A move without one (most of
backgammon's, every move of a deterministic game) leads straight to the next position.

Determinised search (games with hidden information): when the env has
``resample_hidden(state, key)`` and ``SearchConfig.determinize`` is on, every root state is
first replaced by a state its mover cannot tell apart from it (hidden cards redealt, one
key per batch element), and the tree is grown from that sample. The network sees the same
observation, so the root prior and value are unchanged, but nothing below the root can
depend on what the mover may not know. ``determinize=False`` searches the true state (a
peeking search, for study).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import jax
import jax.numpy as jnp
import mctx

from envs.core import Env, State
from jaxzero.core import mcts
from jaxzero.core.config import SearchConfig
from jaxzero.core.mcts import mask_logits
from jaxzero.core.model import LearnedModel
from jaxzero.core.networks import ApplyFn
from jaxzero.core.policies import SearchPolicy

Array = jax.Array


@dataclasses.dataclass(frozen=True)
class SearchOptions:
    """How a game is searched, whichever policy searches it: what ``make_trainer`` and
    ``load_agent`` read once from ``SearchConfig`` (the module docstring says what each does).

    Attributes:
        determinize: search from resampled hidden information (games that have it).
        chance_nodes: explicit chance nodes (games that list their chance events).
        reuse_tree: carry the chosen child's subtree to the next search.
        model: plan with this learned model (:mod:`jaxzero.core.model`) instead of the
            rules; None: the rules.
    """

    determinize: bool = True
    chance_nodes: bool = False
    reuse_tree: bool = False
    model: LearnedModel | None = None

    @classmethod
    def of(cls, config: SearchConfig, model: LearnedModel | None = None) -> SearchOptions:
        """The options a search section records.

        Args:
            config: the search section (``search.determinize``, ``search.chance_nodes``,
                ``search.reuse_tree``).
            model: the learned model to plan with (``jaxzero.core.model.learned_model``),
                or None for the rules.

        Returns:
            Its :class:`SearchOptions`.
        """
        return cls(config.determinize, config.chance_nodes, config.reuse_tree, model)


def make_recurrent_fn(env: Env, apply_fn: ApplyFn) -> Callable:
    """``recurrent_fn(params, key, action [B], state [B]) -> (RecurrentFnOutput, state [B])``."""

    def recurrent_fn(params, key: Array, action: Array, state: State):
        batch = action.shape[0]
        mover = state.current_player  # int32 [B]
        keys = jax.random.split(key, batch)
        nxt = jax.vmap(env.step)(state, action, keys)
        logits, value = apply_fn(params, nxt.observation)  # [B, A], [B]
        done = nxt.terminated | nxt.truncated  # bool [B]
        reward = jnp.take_along_axis(nxt.rewards, mover[:, None], axis=1)[:, 0]  # [B]
        same_mover = nxt.current_player == mover
        discount = jnp.where(done, 0.0, jnp.where(same_mover, 1.0, -1.0))
        output = mctx.RecurrentFnOutput(
            reward=reward.astype(jnp.float32),
            discount=discount.astype(jnp.float32),
            prior_logits=mask_logits(logits, nxt.legal_action_mask),
            value=jnp.where(done, 0.0, value).astype(jnp.float32),
        )
        return output, nxt

    return recurrent_fn


def make_chance_recurrent_fn(env: Env, apply_fn: ApplyFn) -> Callable:
    """``recurrent_fn(params, key, action [B], node [B])`` for a search with explicit chance
    nodes over ``node``: :class:`jaxzero.core.mcts.ChanceEmbedding` [B]; ``action`` < A is a
    move, A + o the chance outcome o. One env step and one network call per expansion:

    * a move from a decision node whose chance event is still open (``chance_probs`` not
      one-hot) makes a chance node: priors log p(o) in the outcome slots, reward 0,
      discount 1, and as its value ``r + γ v(s')`` of one outcome drawn from ``key``
      (an unbiased estimate, which the visits to its outcomes then average);
    * any other expansion (a move without chance, a chance node's outcome) makes a
      decision node exactly as :func:`make_recurrent_fn` does.
    """
    num_actions = env.num_actions

    def recurrent_fn(params, key: Array, action: Array, node: mcts.ChanceEmbedding):
        state, decide = node.state, node.is_decision  # [B], bool [B]
        move = jnp.where(decide, action, node.action)  # int32 [B]
        probs = jax.vmap(env.chance_probs)(state, move)  # [B, C]
        floor = jnp.finfo(jnp.float32).min
        chance_logits = jnp.where(probs > 0, jnp.log(jnp.maximum(probs, 1e-30)), floor)
        drawn = jax.random.categorical(key, chance_logits, axis=-1).astype(jnp.int32)
        outcome = jnp.where(decide, drawn, action - num_actions)
        nxt = jax.vmap(env.step_outcome)(state, move, outcome)
        logits, value = apply_fn(params, nxt.observation)  # [B, A], [B]
        done = nxt.terminated | nxt.truncated
        mover = state.current_player
        reward = jnp.take_along_axis(nxt.rewards, mover[:, None], axis=1)[:, 0]
        discount = jnp.where(done, 0.0, jnp.where(nxt.current_player == mover, 1.0, -1.0))
        value = jnp.where(done, 0.0, value)
        chance = decide & (probs.max(axis=-1) < 1)  # bool [B]: the new node is a chance node
        moves_logits = mask_logits(logits, nxt.legal_action_mask)
        prior = jnp.where(
            chance[:, None],
            jnp.concatenate([jnp.full_like(moves_logits, floor), chance_logits], axis=1),
            jnp.concatenate([moves_logits, jnp.full_like(chance_logits, floor)], axis=1),
        )
        output = mctx.RecurrentFnOutput(
            reward=jnp.where(chance, 0.0, reward).astype(jnp.float32),
            discount=jnp.where(chance, 1.0, discount).astype(jnp.float32),
            prior_logits=prior.astype(jnp.float32),
            value=jnp.where(chance, reward + discount * value, value).astype(jnp.float32),
        )

        def keep(before, after):  # a chance node keeps the position its move was made from
            where = chance.reshape(chance.shape + (1,) * (before.ndim - 1))
            return jnp.where(where, before, after)

        embedding = mcts.ChanceEmbedding(
            state=jax.tree.map(keep, state, nxt),
            action=jnp.where(chance, move, 0).astype(jnp.int32),
            is_decision=~chance,
        )
        return output, embedding

    return recurrent_fn


def decision_roots(states: State) -> mcts.ChanceEmbedding:
    """The roots [B] of a search with explicit chance nodes: decision nodes at ``states``."""
    batch = states.current_player.shape[0]
    return mcts.ChanceEmbedding(
        state=states,
        action=jnp.zeros((batch,), jnp.int32),
        is_decision=jnp.ones((batch,), bool),
    )


def has_chance_nodes(env: Env, options: SearchOptions) -> bool:
    """Whether :func:`run_search` searches ``env`` with explicit chance nodes."""
    return options.chance_nodes and env.num_chance_outcomes > 0


def determinizes(env: Env, options: SearchOptions) -> bool:
    """Whether :func:`run_search` searches from resampled hidden information for ``env``."""
    return options.determinize and env.has_hidden_information


def resample_roots(env: Env, states: State, key: Array) -> State:
    """``env.resample_hidden`` on each state of a batch [B], with one split key per state."""
    keys = jax.random.split(key, states.current_player.shape[0])
    return jax.vmap(env.resample_hidden)(states, keys)


def tree_capacity(num_simulations: int) -> int:
    """Nodes of a reusable tree for searches of ``num_simulations``: the carried nodes (at
    most S + 1: a search's own nodes and its root) and the S the next search adds."""
    return 2 * num_simulations + 1


def empty_trees(states: State, num_simulations: int, num_actions: int) -> mcts.Tree:
    """B empty reusable trees (capacity :func:`tree_capacity`) for ``states`` [B]."""
    batch = states.current_player.shape[0]
    zeros = jnp.zeros((batch,), jnp.float32)
    root = mctx.RootFnOutput(
        prior_logits=jnp.zeros((batch, num_actions), jnp.float32), value=zeros, embedding=states
    )
    invalid = jnp.zeros((batch, num_actions), bool)
    tree = mcts.instantiate(root, tree_capacity(num_simulations) - 1, invalid)
    return mcts.cleared(tree, jnp.ones((batch,), bool))


def carry_tree(tree: mcts.Tree, action: Array, num_simulations: int) -> mcts.Tree:
    """The tree to carry after ``action`` [B] is played from the root of ``tree``: the
    child's subtree, cut to the nodes the next search of ``num_simulations`` leaves room for."""
    return mcts.subtree(tree, action, keep=tree.node_visits.shape[1] - num_simulations)


def same_states(a: State, b: State) -> Array:
    """bool [B]: whether ``a`` [B] and ``b`` [B] are the same positions, every field equal."""

    def equal(x, y):
        if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
            x, y = jax.random.key_data(x), jax.random.key_data(y)
        return (x == y).reshape(x.shape[0], -1).all(axis=1)

    return jnp.stack(jax.tree.leaves(jax.tree.map(equal, a, b))).all(axis=0)


def make_root(
    params, states: State, apply_fn: ApplyFn, options: SearchOptions = SearchOptions()
) -> mctx.RootFnOutput:
    """The search root for a batch of states: network prior (masked) and value, and as
    its embedding the states, or with a learned model (``options.model``) their latents."""
    if options.model is not None:
        return options.model.root(params, states, apply_fn)
    logits, value = apply_fn(params, states.observation)
    return mctx.RootFnOutput(
        prior_logits=mask_logits(logits, states.legal_action_mask),
        value=value.astype(jnp.float32),
        embedding=states,
    )


def run_search(
    params,
    states: State,
    key: Array,
    env: Env,
    apply_fn: ApplyFn,
    policy: SearchPolicy,
    *,
    num_simulations: int,
    options: SearchOptions = SearchOptions(),
    noise: bool = True,
    root: mctx.RootFnOutput | None = None,
    tree: mcts.Tree | None = None,
    member_axis: str | None = None,
) -> mctx.PolicyOutput:
    """Search from a batch of states [B] and return mctx's PolicyOutput.

    Args:
        params: the network's variables.
        states: B env states.
        key: a PRNG key.
        env: the game.
        apply_fn: the network.
        policy: the search policy (:mod:`jaxzero.core.policies`).
        num_simulations: simulations of this search (mctx's argument).
        options: how the env is searched (determinisation, chance nodes).
        noise: root noise on (self-play) or off (evaluation).
        root: a precomputed :func:`make_root`.
        tree: a carried tree (:func:`empty_trees`, :func:`carry_tree`), used where its
            root is the position searched; the search's tree (``search_tree``) is then
            that tree grown.
        member_axis: the name of the vmapped population axis this search runs under, if
            any: the members' search loops then end together (``SearchPolicy.__call__``).

    Returns:
        The policy's ``mctx.PolicyOutput``: ``action_weights`` [B, A] are the policy
        target (PUCT: the visit distribution; Gumbel: the improved policy).

    The policies run over :mod:`jaxzero.core.mcts`'s batched search (mctx's trees,
    faster). With a learned model (``options.model``) the tree grows in the model's
    latent space from ``h(observation)`` (:mod:`jaxzero.core.model`), and determinisation,
    chance nodes and tree reuse, which act on game states, do not apply. With
    :func:`has_chance_nodes` the tree has explicit chance nodes (module docstring), and
    ``search_tree`` is its decision part. With :func:`determinizes` the
    tree grows from ``resample_roots(states)`` (the key is split first, one part for the
    resampling), the root's prior and value still come from the observation, which
    resampling leaves unchanged.
    """
    if root is None:
        root = make_root(params, states, apply_fn, options)
    if options.model is not None:  # the model plans from the observation alone
        if tree is not None:
            raise ValueError("a learned model's search carries no tree: search.reuse_tree=false")
        return policy(
            params, key, root, options.model.recurrent_fn(env),
            num_simulations=num_simulations, invalid_actions=~states.legal_action_mask,
            noise=noise, member_axis=member_axis,
        )  # fmt: skip
    if determinizes(env, options):
        key, k_hidden = jax.random.split(key)
        root = root.replace(embedding=resample_roots(env, states, k_hidden))
    if tree is not None:
        capacity = tree.node_visits.shape[1]
        if capacity < tree_capacity(num_simulations):
            raise ValueError(
                f"a carried tree of {capacity} nodes has no room for {num_simulations} "
                f"simulations; make it with empty_trees(states, {num_simulations}, ...)"
            )
        root_state = jax.tree.map(lambda x: x[:, mcts.Tree.ROOT_INDEX], tree.embeddings)
        tree = mcts.cleared(tree, ~same_states(root_state, root.embedding))
    recurrent_fn = make_recurrent_fn(env, apply_fn)
    chance_outcomes = 0
    if has_chance_nodes(env, options):
        if tree is not None:
            raise ValueError(
                "search.chance_nodes and search.reuse_tree cannot both be on: a carried tree "
                "keeps no chance nodes"
            )
        chance_outcomes = env.num_chance_outcomes
        root = root.replace(embedding=decision_roots(root.embedding))
        recurrent_fn = make_chance_recurrent_fn(env, apply_fn)
    return policy(
        params,
        key,
        root,
        recurrent_fn,
        num_simulations=num_simulations,
        invalid_actions=~states.legal_action_mask,
        noise=noise,
        tree=tree,
        chance_outcomes=chance_outcomes,
        member_axis=member_axis,
    )


def visit_counts(policy_output: mctx.PolicyOutput) -> Array:
    """Root visit counts N(a): float32 [B, A]."""
    tree = policy_output.search_tree
    return tree.children_visits[:, tree.ROOT_INDEX].astype(jnp.float32)


def select_action(
    policy_output: mctx.PolicyOutput,
    step_count: Array,
    key: Array,
    *,
    policy: SearchPolicy,
    temperature_moves: int,
    temperature: float = 1.0,
) -> Array:
    """The move to play, int32 [B]: sampled with probability ∝ N(a)^(1/temperature) while
    ``step_count < temperature_moves`` (exploration early in the game), else
    ``policy.greedy_action``. Only visited actions can be sampled, so an illegal move never is."""
    greedy = policy.greedy_action(policy_output)
    if temperature_moves <= 0:
        return greedy
    counts = visit_counts(policy_output)  # [B, A]
    logits = jnp.where(
        counts > 0, jnp.log(jnp.maximum(counts, 1.0)) / temperature, jnp.finfo(jnp.float32).min
    )
    sampled = jax.random.categorical(key, logits, axis=-1).astype(jnp.int32)
    return jnp.where(step_count < temperature_moves, sampled, greedy)
