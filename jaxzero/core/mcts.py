"""mctx's batched MCTS with a traversal and a backup built for batches.

``mctx.search`` runs, per simulation, three steps over a batch of B trees: a traversal
(``jax.vmap`` of a ``while_loop`` whose body evaluates *both* the root and the interior
selection, since a ``lax.cond`` on the depth becomes a select under ``vmap``), the
expansion of one leaf, and a backup (a second vmapped ``while_loop``, which under ``vmap``
selects between the old and the new tree, all of it, at every level). Both loops run as
many iterations as the deepest path in the batch, so with sharp priors (deep trees) they
are much of self-play's time (docs/benchmarks.md, "The search loop"). Here, for the same
``mctx.Tree``:

* the root's action is chosen once, before the traversal, which then runs the interior
  selection only, and records the path: nodes and actions, [B, D] each, one entry per
  tree and level;
* the expansion is mctx's;
* the backup walks the recorded path from the bottom up, one loop iteration per level of
  the deepest path, each writing B entries per field; nothing is selected or written over
  the whole tree, and nothing costs O(D) per level.

The trees are mctx's exactly: same selection functions (mctx's own, under ``vmap``), same
keys for the recurrent function, same floating-point operations in the same order
(``tests/core/test_mcts.py`` compares them leaf for leaf against ``mctx.search``). One
difference no mctx selection sees: mctx splits the simulation's key at every level of
the traversal, which none of its selections reads; here every level gets the same key.
``puct_policy`` and ``gumbel_policy`` are ``mctx.muzero_policy`` and
``mctx.gumbel_muzero_policy`` over this search; the PUCT one skips the Dirichlet draw
when its weight is 0.

Tree reuse (``search(..., tree=carried)``): after a move, :func:`subtree` keeps the
chosen child's subtree as the next root, its statistics intact, renumbered in creation
order by one gather (membership by pointer jumping over ``parents``: log2 N gathers, no
loop over nodes). The tree then has a fixed capacity N = carried + simulations + 1;
:func:`subtree` keeps at most ``keep`` nodes (the oldest, an ancestor-closed set since a
parent is created before its children) and unlinks the edges below the rest, so the next
search always has room for its own simulations. A search from a carried tree replaces
the root's prior (fresh root noise) and takes new nodes from the first free slot.

* PUCT counts carried visits as its own, as AlphaGo Zero does ("the subtree below this
  child is retained along with all its statistics", Silver et al. 2017, Methods).
* Gumbel: Danihelka et al. 2022 define sequential halving over one search's budget n and
  say nothing of reuse. Here the halving schedules this search's ``num_simulations``
  exactly as from a fresh tree (carried root visits are subtracted from its counts, and
  the survivor is the most visited considered action by this search's visits), while the
  completed Q, and σ's visit scale, use the whole tree: carried visits sharpen the values
  the halving compares, and do not spend its budget.

Explicit chance nodes (``search(..., chance_outcomes=C)``), for games that enumerate
their chance events (:mod:`envs.core`): as in mctx's ``stochastic_muzero_policy``
(Antonoglou et al. 2022, Stochastic MuZero), an edge carries either a move (the first A
slots) or a chance outcome (the last C), and each node's embedding says which kind of
node it is (:class:`ChanceEmbedding`). At a decision node the policy's own selection
picks a move, over the tree's decision part (:func:`decisions`); at a chance node the
outcome is mctx's deterministic choice ``argmax p(o) / (N(o) + 1)``, so visits follow the
outcomes' probabilities and the node's value averages over them. The search returns the
tree's decision part, so the policies read it as any tree.

Shapes: B batch, N = simulations + 1 nodes (more with a carried tree), A actions, D = max
depth (edges from the root, ``num_simulations`` unless given; N - 1 with a carried tree).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar, dataclass_transform

import chex
import jax
import jax.numpy as jnp
import mctx
from mctx import Tree

from jaxzero.core.sharding import most_over_members

Array = jax.Array
# (key [B], tree, node [B], depth [B]) -> action int32 [B]; mctx's unbatched signature, vmapped
Selection = Callable[[Array, Tree, Array, Array], Array]
T = TypeVar("T")


@dataclass_transform(frozen_default=True)
def _pytree_dataclass(cls: type[T]) -> type[T]:
    """``chex.dataclass(frozen=True)``, declared a dataclass to mypy: chex ships no types,
    so without it the fields are not the constructor's keywords."""
    return chex.dataclass(frozen=True)(cls)


@_pytree_dataclass
class ChanceEmbedding:
    """A node of a search with explicit chance nodes: a decision node holds its position;
    a chance node (a move whose chance event is still to come) holds the position the
    move was made from and the move."""

    state: chex.ArrayTree  # [B] positions
    action: Array  # int32 [B]: a chance node's move (0 at a decision node)
    is_decision: Array  # bool [B]


def decisions(tree: Tree, num_actions: int) -> Tree:
    """The tree's decision part: every edge array cut to its first ``num_actions`` slots."""

    def moves(x):
        return x[..., :num_actions]

    return tree.replace(
        children_index=moves(tree.children_index),
        children_prior_logits=moves(tree.children_prior_logits),
        children_visits=moves(tree.children_visits),
        children_rewards=moves(tree.children_rewards),
        children_discounts=moves(tree.children_discounts),
        children_values=moves(tree.children_values),
        root_invalid_actions=moves(tree.root_invalid_actions),
    )


def chance_selection(selection: Selection, num_actions: int) -> Selection:
    """``selection`` (batched) at decision nodes, over the tree's decision part; at chance
    nodes mctx's stochastic choice ``argmax p(o) / (N(o) + 1)``, as slot A + o."""

    def select(keys: Array, tree: Tree, node: Array, depth: Array) -> Array:
        rows = jnp.arange(node.shape[0])
        move = selection(keys, decisions(tree, num_actions), node, depth)
        probs = jax.nn.softmax(tree.children_prior_logits[rows, node, num_actions:])  # [B, C]
        visits = tree.children_visits[rows, node, num_actions:]
        outcome = jnp.argmax(probs / (visits + 1), axis=-1).astype(jnp.int32) + num_actions
        return jnp.where(tree.embeddings.is_decision[rows, node], move, outcome)

    return select


def instantiate(
    root: mctx.RootFnOutput, num_simulations: int, invalid_actions: Array, extra_data=None
) -> Tree:
    """An empty tree of N = num_simulations + 1 nodes with the root (node 0) filled in."""
    batch, num_actions = root.prior_logits.shape
    nodes = (batch, num_simulations + 1)
    edges = (*nodes, num_actions)
    value_dtype = root.value.dtype

    def node_slots(x):
        return jnp.zeros(nodes + x.shape[1:], x.dtype).at[:, Tree.ROOT_INDEX].set(x)

    return Tree(
        node_visits=jnp.zeros(nodes, jnp.int32).at[:, Tree.ROOT_INDEX].set(1),
        raw_values=node_slots(root.value),
        node_values=node_slots(root.value),
        parents=jnp.full(nodes, Tree.NO_PARENT, jnp.int32),
        action_from_parent=jnp.full(nodes, Tree.NO_PARENT, jnp.int32),
        children_index=jnp.full(edges, Tree.UNVISITED, jnp.int32),
        children_prior_logits=node_slots(root.prior_logits),
        children_values=jnp.zeros(edges, value_dtype),
        children_visits=jnp.zeros(edges, jnp.int32),
        children_rewards=jnp.zeros(edges, value_dtype),
        children_discounts=jnp.zeros(edges, value_dtype),
        embeddings=jax.tree.map(node_slots, root.embedding),
        root_invalid_actions=invalid_actions,
        extra_data=extra_data,
    )


def cleared(tree: Tree, clear: Array) -> Tree:
    """``tree`` with the trees where ``clear`` [B] is set emptied: no node in use (node 0's
    visits are 0), every edge unexpanded. Embeddings are left: a search overwrites them."""
    return _clear_slots(tree, jnp.broadcast_to(clear[:, None], tree.node_visits.shape))


def subtree(tree: Tree, action: Array, keep: int) -> Tree:
    """The subtree below the root's edge ``action`` [B] as a tree of its own (capacity
    unchanged, ``extra_data`` dropped): the child becomes node 0, its descendants follow in
    creation order, and only the first ``keep`` of them (child included) stay; an edge whose
    node is dropped becomes unexpanded again (its visits and value zeroed: statistics the
    next search can extend). Where the edge was never expanded the tree is empty.

    n lies below the child iff the child is n or one of its ancestors: ``parents`` is
    followed by pointer jumping (after k rounds, a node has looked 2^k generations up), so
    membership costs log2 N gathers, and renumbering is a cumulative sum (parents keep
    smaller numbers than their children)."""
    batch, num_nodes = tree.node_visits.shape
    chex.assert_shape(action, (batch,))
    rows = jnp.arange(batch)[:, None]
    nodes = jnp.arange(num_nodes, dtype=jnp.int32)
    child = tree.children_index[rows[:, 0], Tree.ROOT_INDEX, action]  # [B], -1 unexpanded
    # Slot N is a sentinel: no parent's parent, never the child, its own ancestor.
    up = jnp.where(tree.parents == Tree.NO_PARENT, num_nodes, tree.parents)
    up = jnp.concatenate([up, jnp.full((batch, 1), num_nodes, jnp.int32)], axis=1)  # [B, N+1]
    hit = jnp.concatenate([nodes[None, :] == child[:, None], jnp.zeros((batch, 1), bool)], 1)
    for _ in range(max(1, (num_nodes - 1).bit_length())):  # 2^rounds >= N generations
        hit = hit | jnp.take_along_axis(hit, up, axis=1)
        up = jnp.take_along_axis(up, up, axis=1)
    rank = jnp.cumsum(hit[:, :num_nodes], axis=1, dtype=jnp.int32) - 1  # new number [B, N]
    kept = hit[:, :num_nodes] & (rank < keep)
    renumber = jnp.where(kept, rank, num_nodes)  # [B, N]; N: dropped
    renumber = jnp.concatenate([renumber, jnp.full((batch, 1), num_nodes, jnp.int32)], 1)
    old = jnp.full((batch, num_nodes), num_nodes, jnp.int32)
    old = old.at[rows, renumber[:, :num_nodes]].set(nodes[None, :], mode="drop")  # [B, N]
    new_to_old = jnp.minimum(old, num_nodes - 1)  # a safe index for empty slots
    empty = old == num_nodes  # bool [B, N]

    def gather(x):  # node field [B, N, ...] -> the new numbering
        return jnp.take_along_axis(x, new_to_old.reshape(*old.shape, *[1] * (x.ndim - 2)), 1)

    def renumbered(index):  # node indices (-1: none) -> new numbers (-1: none or dropped)
        new = jnp.take_along_axis(renumber, jnp.where(index < 0, num_nodes, index), axis=1)
        return jnp.where(new == num_nodes, -1, new)

    batch_edges = (batch, num_nodes * tree.children_index.shape[2])
    children = renumbered(gather(tree.children_index).reshape(batch_edges))
    children = children.reshape(tree.children_index.shape)
    linked = children != Tree.UNVISITED  # [B, N, A]: expanded edges whose node is kept
    parents = jnp.where(nodes[None, :] == Tree.ROOT_INDEX, -1, renumbered(gather(tree.parents)))
    carried = tree.replace(
        node_visits=gather(tree.node_visits),
        raw_values=gather(tree.raw_values),
        node_values=gather(tree.node_values),
        parents=parents,
        action_from_parent=jnp.where(parents < 0, -1, gather(tree.action_from_parent)),
        children_index=children,
        children_prior_logits=gather(tree.children_prior_logits),
        children_values=jnp.where(linked, gather(tree.children_values), 0),
        children_visits=jnp.where(linked, gather(tree.children_visits), 0),
        children_rewards=jnp.where(linked, gather(tree.children_rewards), 0),
        children_discounts=jnp.where(linked, gather(tree.children_discounts), 0),
        embeddings=jax.tree.map(gather, tree.embeddings),
        extra_data=None,
    )
    return _clear_slots(carried, empty)


def _clear_slots(tree: Tree, empty: Array) -> Tree:
    """Slots ``empty`` [B, N] made unused nodes: no visits, values or parent, every edge
    unexpanded (what :func:`instantiate` leaves in a slot the search has not reached)."""

    def at(x, fill):
        where = empty.reshape(*empty.shape, *[1] * (x.ndim - 2))
        return jnp.where(where, jnp.asarray(fill, x.dtype), x)

    return tree.replace(
        node_visits=at(tree.node_visits, 0),
        raw_values=at(tree.raw_values, 0),
        node_values=at(tree.node_values, 0),
        parents=at(tree.parents, Tree.NO_PARENT),
        action_from_parent=at(tree.action_from_parent, Tree.NO_PARENT),
        children_index=at(tree.children_index, Tree.UNVISITED),
        children_prior_logits=at(tree.children_prior_logits, 0),
        children_values=at(tree.children_values, 0),
        children_visits=at(tree.children_visits, 0),
        children_rewards=at(tree.children_rewards, 0),
        children_discounts=at(tree.children_discounts, 0),
    )


def _replant(tree: Tree, root: mctx.RootFnOutput, invalid_actions: Array, extra_data) -> Tree:
    """A carried tree [B] ready for a new search from ``root``: node 0 takes the root's
    prior (with this search's noise), raw value and embedding; it keeps its visits and value
    where it was carried, and is filled in as :func:`instantiate` does where empty."""
    fresh = tree.node_visits[:, Tree.ROOT_INDEX] == 0  # [B]
    visits = jnp.where(fresh, 1, tree.node_visits[:, Tree.ROOT_INDEX])
    value = jnp.where(fresh, root.value, tree.node_values[:, Tree.ROOT_INDEX])

    def root_slot(x, new):
        return x.at[:, Tree.ROOT_INDEX].set(new)

    return tree.replace(
        node_visits=root_slot(tree.node_visits, visits),
        raw_values=root_slot(tree.raw_values, root.value),
        node_values=root_slot(tree.node_values, value),
        children_prior_logits=root_slot(tree.children_prior_logits, root.prior_logits),
        embeddings=jax.tree.map(root_slot, tree.embeddings, root.embedding),
        root_invalid_actions=invalid_actions,
        extra_data=extra_data,
    )


def traverse(keys: Array, tree: Tree, root_selection: Selection, interior_selection: Selection,
             max_depth: int, member_axis: str | None = None):  # fmt: skip
    """From the root down to an unexpanded edge (or ``max_depth`` edges), for B trees.

    Returns ``(parent [B], action [B], length [B], path [B, D], path_actions [B, D])``:
    the edge to expand is ``(parent, action)``, the ``length`` edges taken are
    ``path[:, d] --path_actions[:, d]-->`` for ``d < length``, and ``path[:, length - 1]``
    is ``parent``. Every level's selection gets the same ``keys`` [B]: mctx splits a key
    per level, but none of its selections reads it, and the split costs time at every
    level (docs/benchmarks.md, "No key split per level"). A selection that wants
    randomness per level derives it from its key and ``depth``. Under a population's
    vmap (``member_axis``) the loop runs until every member's trees are done.
    """
    batch = keys.shape[0]
    rows = jnp.arange(batch)

    node = jnp.full((batch,), Tree.ROOT_INDEX, jnp.int32)
    depth = jnp.zeros((batch,), jnp.int32)  # edges taken before this level
    action = root_selection(keys, tree, node, depth)
    chex.assert_shape(action, (batch,))
    path = jnp.zeros((batch, max_depth), jnp.int32)
    path_actions = jnp.zeros((batch, max_depth), jnp.int32).at[:, 0].set(action)
    child = tree.children_index[rows, node, action]
    length = jnp.ones((batch,), jnp.int32)

    def going(carry):  # bool [B]: the chosen edge leads to an expanded node, depth allows
        _, _, child, length, _, _ = carry
        return (child != Tree.UNVISITED) & (length < max_depth)

    def level(carry):
        node, action, child, length, path, path_actions = carry
        go = going(carry)
        node = jnp.where(go, child, node)
        action = jnp.where(go, interior_selection(keys, tree, node, length), action)
        at = jnp.where(go, length, max_depth)  # [B]; D: dropped
        path = path.at[rows, at].set(node, mode="drop")
        path_actions = path_actions.at[rows, at].set(action, mode="drop")
        child = jnp.where(go, tree.children_index[rows, node, action], child)
        return node, action, child, length + go, path, path_actions

    carry = (node, action, child, length, path, path_actions)
    # the same condition for every member of a population: no select over the carry
    carry = jax.lax.while_loop(
        lambda c: most_over_members(jnp.any(going(c)), member_axis), level, carry
    )
    node, action, _, length, path, path_actions = carry
    return node, action, length, path, path_actions


def expand(params, key: Array, tree: Tree, recurrent_fn, parent: Array, action: Array,
           node: Array) -> Tree:  # fmt: skip
    """``recurrent_fn`` on the edges ``(parent, action)`` [B]; its results become ``node`` [B]."""
    rows = jnp.arange(parent.shape[0])
    embedding = jax.tree.map(lambda x: x[rows, parent], tree.embeddings)
    step, embedding = recurrent_fn(params, key, action, embedding)
    width = tree.children_prior_logits.shape[2]  # A, or A + C with chance nodes
    chex.assert_shape(step.prior_logits, (parent.shape[0], width))
    chex.assert_shape([step.value, step.reward, step.discount], parent.shape)
    return tree.replace(
        children_prior_logits=tree.children_prior_logits.at[rows, node].set(step.prior_logits),
        raw_values=tree.raw_values.at[rows, node].set(step.value),
        node_values=tree.node_values.at[rows, node].set(step.value),
        node_visits=tree.node_visits.at[rows, node].add(1),
        embeddings=jax.tree.map(lambda t, s: t.at[rows, node].set(s), tree.embeddings, embedding),
        children_index=tree.children_index.at[rows, parent, action].set(node),
        children_rewards=tree.children_rewards.at[rows, parent, action].set(step.reward),
        children_discounts=tree.children_discounts.at[rows, parent, action].set(step.discount),
        parents=tree.parents.at[rows, node].set(parent),
        action_from_parent=tree.action_from_parent.at[rows, node].set(action),
    )


def backup(
    tree: Tree,
    leaf: Array,
    length: Array,
    path: Array,
    path_actions: Array,
    member_axis: str | None = None,
) -> Tree:
    """mctx's ``backward`` from ``leaf`` [B] up the recorded path, for B trees at once.

    One loop iteration per level of the deepest path in the batch, from the bottom up, each
    writing B entries per field (a path that is shorter writes to index N, out of bounds,
    which the scatters drop). mctx's vmapped ``while_loop`` instead selects between the old
    and the new tree, all of it, at every level (docs/benchmarks.md, "A backup that costs
    what the path costs"). The arithmetic is mctx's, in its order:
    ``G_d = r_d + γ_d · G_(d+1)`` from ``G_length = value(leaf)``, each path node's value the
    running mean of its returns, each edge's value its child's new value."""
    batch = path.shape[0]
    rows = jnp.arange(batch)
    num_nodes = tree.node_values.shape[1]

    def level(carry):
        d, value, below, values, visits, edge_values, edge_visits = carry
        on = d < length  # bool [B]: this path has a level d
        node = jnp.where(on, path[:, d], num_nodes)  # [B]; N: dropped
        held = jnp.minimum(node, num_nodes - 1)  # a safe index to read
        action = path_actions[:, d]
        reward = tree.children_rewards[rows, held, action]
        discount = tree.children_discounts[rows, held, action]
        value = jnp.where(on, reward + discount * value, value)
        count = visits[rows, held]
        node_value = (values[rows, held] * count + value) / (count + 1.0)
        child_value = values[rows, below]  # the node below, already updated
        values = values.at[rows, node].set(node_value, mode="drop")
        visits = visits.at[rows, node].add(1, mode="drop")
        edge_values = edge_values.at[rows, node, action].set(child_value, mode="drop")
        edge_visits = edge_visits.at[rows, node, action].add(1, mode="drop")
        below = jnp.where(on, held, below)
        return d - 1, value, below, values, visits, edge_values, edge_visits

    carry = (
        # not per member: no select over the tree
        most_over_members(jnp.max(length), member_axis) - 1,
        tree.node_values[rows, leaf],
        leaf,
        tree.node_values,
        tree.node_visits,
        tree.children_values,
        tree.children_visits,
    )
    *_, values, visits, edge_values, edge_visits = jax.lax.while_loop(
        lambda carry: carry[0] >= 0, level, carry
    )
    return tree.replace(
        node_values=values,
        node_visits=visits,
        children_values=edge_values,
        children_visits=edge_visits,
    )


def search(
    params,
    key: Array,
    *,
    root: mctx.RootFnOutput,
    recurrent_fn: mctx.RecurrentFn,
    root_selection: Selection,
    interior_selection: Selection,
    num_simulations: int,
    invalid_actions: Array,
    max_depth: int | None = None,
    extra_data=None,
    tree: Tree | None = None,
    chance_outcomes: int = 0,
    member_axis: str | None = None,
) -> Tree:
    """``mctx.search`` with batched selections (see the module docstring). With ``tree``
    (a carried tree of N >= num_simulations + 1 nodes, empty or from :func:`subtree`) the
    search grows it from its first free slot instead of a fresh tree of N = simulations + 1,
    ``max_depth`` defaulting to N - 1. With ``chance_outcomes`` C > 0 the search has
    explicit chance nodes (the root's embedding a :class:`ChanceEmbedding`, ``recurrent_fn``
    expanding both kinds of node) and returns the tree's decision part. ``member_axis``
    names the vmapped population axis the search runs under, if any
    (:func:`jaxzero.core.sharding.most_over_members`)."""
    batch, num_actions = root.prior_logits.shape
    chex.assert_shape(root.value, (batch,))
    chex.assert_shape(invalid_actions, (batch, num_actions))
    rows = jnp.arange(batch)
    if chance_outcomes:
        if tree is not None:
            raise ValueError("a search with explicit chance nodes cannot grow a carried tree")
        floor = jnp.finfo(root.prior_logits.dtype).min
        pad = ((0, 0), (0, chance_outcomes))
        root = root.replace(prior_logits=jnp.pad(root.prior_logits, pad, constant_values=floor))
        invalid_actions = jnp.pad(invalid_actions, pad, constant_values=True)
        root_selection = _on_decisions(root_selection, num_actions)
        interior_selection = chance_selection(interior_selection, num_actions)
    first: int | Array  # the slot of the search's first new node: int, or [B] in a carried tree
    if tree is None:
        tree = instantiate(root, num_simulations, invalid_actions, extra_data)
        first = 1  # node 0 is the root: simulation s creates node s + 1
        depth = num_simulations
    else:
        tree = _replant(tree, root, invalid_actions, extra_data)
        first = jnp.sum(tree.node_visits > 0, axis=1, dtype=jnp.int32)  # [B] nodes in use
        depth = tree.node_visits.shape[1] - 1
    max_depth = depth if max_depth is None else max_depth

    def simulation(sim, carry):
        key, tree = carry
        key, k_simulate, k_expand = jax.random.split(key, 3)
        keys = jax.random.split(k_simulate, batch)
        parent, action, length, path, path_actions = traverse(
            keys, tree, root_selection, interior_selection, max_depth, member_axis
        )
        node = tree.children_index[rows, parent, action]
        node = jnp.where(node == Tree.UNVISITED, first + sim, node)
        tree = expand(params, k_expand, tree, recurrent_fn, parent, action, node)
        return key, backup(tree, node, length, path, path_actions, member_axis)

    tree = jax.lax.fori_loop(0, num_simulations, simulation, (key, tree))[1]
    return decisions(tree, num_actions) if chance_outcomes else tree


def _on_decisions(selection: Selection, num_actions: int) -> Selection:
    """``selection`` over the tree's decision part (the root is a decision node)."""
    return lambda keys, tree, node, depth: selection(
        keys, decisions(tree, num_actions), node, depth
    )


def mask_logits(logits: Array, legal_action_mask: Array) -> Array:
    """Illegal actions get the smallest finite logit of the dtype (never ``-inf``, so a
    softmax over a single legal action stays finite): [..., A] -> [..., A]."""
    return jnp.where(legal_action_mask, logits, jnp.finfo(logits.dtype).min)


def _mask_invalid(logits: Array, invalid_actions: Array) -> Array:
    """mctx's masking of a policy's root logits: centred on their maximum, then masked."""
    return mask_logits(logits - jnp.max(logits, axis=-1, keepdims=True), ~invalid_actions)


def _log(probs: Array) -> Array:
    return jnp.log(jnp.maximum(probs, jnp.finfo(probs.dtype).tiny))


def puct_policy(
    params,
    key: Array,
    root: mctx.RootFnOutput,
    recurrent_fn: mctx.RecurrentFn,
    num_simulations: int,
    *,
    invalid_actions: Array,
    dirichlet_fraction: float = 0.25,
    dirichlet_alpha: float = 0.3,
    pb_c_init: float = 1.25,
    pb_c_base: float = 19652.0,
    q_bound: float = 0.0,
    qtransform: Callable | None = None,
    root_selection: Callable | None = None,
    interior_selection: Callable | None = None,
    tree: Tree | None = None,
    chance_outcomes: int = 0,
    member_axis: str | None = None,
) -> mctx.PolicyOutput:
    """``mctx.muzero_policy`` (temperature 1) over :func:`search`, from a fresh tree or a
    carried ``tree`` (whose visits count as the search's own). Q is ``qtransform``'s, by
    default mctx's parent-and-siblings min-max, or with ``q_bound`` > 0 read on
    [-q_bound, q_bound]. The selections are mctx's unbatched signature ``(key, tree, node,
    depth) -> action``; by default ``mctx.muzero_action_selection`` with the pb_c constants
    and Q, the root's the interior's unless given."""
    key, k_dirichlet, k_search = jax.random.split(key, 3)
    probs = jax.nn.softmax(root.prior_logits)
    if dirichlet_fraction > 0:
        alpha = jnp.full(probs.shape[-1:], dirichlet_alpha)
        noise = jax.random.dirichlet(k_dirichlet, alpha=alpha, shape=probs.shape[:1])
        probs = (1 - dirichlet_fraction) * probs + dirichlet_fraction * noise
    root = root.replace(prior_logits=_mask_invalid(_log(probs), invalid_actions))
    if qtransform is None:
        qtransform = mctx.qtransform_by_parent_and_siblings
        if q_bound > 0:
            qtransform = functools.partial(
                mctx.qtransform_by_min_max, min_value=-q_bound, max_value=q_bound
            )
    if interior_selection is None:
        interior_selection = functools.partial(
            mctx.muzero_action_selection, pb_c_init=pb_c_init, pb_c_base=pb_c_base,
            qtransform=qtransform,
        )  # fmt: skip
    root_selection = interior_selection if root_selection is None else root_selection
    tree = search(
        params,
        k_search,
        root=root,
        recurrent_fn=recurrent_fn,
        root_selection=jax.vmap(root_selection),
        interior_selection=jax.vmap(interior_selection),
        num_simulations=num_simulations,
        invalid_actions=invalid_actions,
        tree=tree,
        chance_outcomes=chance_outcomes,
        member_axis=member_axis,
    )
    weights = tree.summary().visit_probs
    logits = _log(weights)
    action = jax.random.categorical(key, logits - jnp.max(logits, axis=-1, keepdims=True))
    return mctx.PolicyOutput(action=action, action_weights=weights, search_tree=tree)


@_pytree_dataclass
class GumbelReuseData:
    """A Gumbel search's root data over a carried tree: the noise and the root's visits
    before this search (int32 [B, A]), which sequential halving does not count."""

    root_gumbel: Array  # float32 [B, A]
    carried_visits: Array  # int32 [B, A]


def gumbel_root_selection(key: Array, tree: Tree, node: Array, *, qtransform, **settings):
    """``mctx.gumbel_muzero_root_action_selection`` (unbatched) over a carried tree: the
    halving schedule sees only this search's visits (``extra_data.carried_visits``
    subtracted), the completed Q the whole tree's."""
    own = tree.children_visits.at[node].add(-tree.extra_data.carried_visits)
    return mctx.gumbel_muzero_root_action_selection(
        key, tree.replace(children_visits=own), node,
        qtransform=lambda _, n: qtransform(tree, n), **settings,
    )  # fmt: skip


def gumbel_policy(
    params,
    key: Array,
    root: mctx.RootFnOutput,
    recurrent_fn: mctx.RecurrentFn,
    num_simulations: int,
    *,
    invalid_actions: Array,
    max_num_considered_actions: int = 16,
    gumbel_scale: float = 1.0,
    qtransform: Callable = mctx.qtransform_completed_by_mix_value,
    interior_selection: Callable | None = None,
    tree: Tree | None = None,
    chance_outcomes: int = 0,
    member_axis: str | None = None,
) -> mctx.PolicyOutput:
    """``mctx.gumbel_muzero_policy`` over :func:`search`, from a fresh tree or a carried
    ``tree`` (see the module docstring: carried visits inform Q, not the halving). The
    root selects by sequential halving; ``interior_selection`` (mctx's unbatched signature)
    defaults to ``mctx.gumbel_muzero_interior_action_selection`` with ``qtransform``."""
    root = root.replace(prior_logits=_mask_invalid(root.prior_logits, invalid_actions))
    key, k_gumbel = jax.random.split(key)
    logits = root.prior_logits
    gumbel = gumbel_scale * jax.random.gumbel(k_gumbel, logits.shape, logits.dtype)
    settings: dict[str, Any] = dict(
        num_simulations=num_simulations,
        max_num_considered_actions=max_num_considered_actions,
        qtransform=qtransform,
    )
    if tree is None:
        carried = jnp.zeros(logits.shape, jnp.int32)
        root_selection = functools.partial(mctx.gumbel_muzero_root_action_selection, **settings)
        extra_data = mctx.GumbelMuZeroExtraData(root_gumbel=gumbel)
    else:
        carried = tree.children_visits[:, Tree.ROOT_INDEX]  # 0 in an empty tree
        root_selection = functools.partial(gumbel_root_selection, **settings)
        extra_data = GumbelReuseData(root_gumbel=gumbel, carried_visits=carried)
    interior = interior_selection or functools.partial(
        mctx.gumbel_muzero_interior_action_selection, qtransform=qtransform
    )
    tree = search(
        params,
        key,
        root=root,
        recurrent_fn=recurrent_fn,
        root_selection=jax.vmap(lambda k, t, n, d: root_selection(k, t, n)),
        interior_selection=jax.vmap(interior),
        num_simulations=num_simulations,
        invalid_actions=invalid_actions,
        extra_data=extra_data,
        tree=tree,
        chance_outcomes=chance_outcomes,
        member_axis=member_axis,
    )
    # The survivor of sequential halving (mctx's seq_halving.score_considered, masked).
    visits = tree.summary().visit_counts - carried  # [B, A] this search's visits
    completed_q = jax.vmap(qtransform, in_axes=[0, None])(tree, Tree.ROOT_INDEX)
    considered = visits == jnp.max(visits, axis=-1, keepdims=True)
    centred = logits - jnp.max(logits, axis=-1, keepdims=True)
    score = jnp.maximum(-1e9, gumbel + centred + completed_q) + jnp.where(considered, 0, -jnp.inf)
    action = jnp.argmax(jnp.where(invalid_actions, -jnp.inf, score), axis=-1).astype(jnp.int32)
    weights = jax.nn.softmax(_mask_invalid(logits + completed_q, invalid_actions))
    return mctx.PolicyOutput(action=action, action_weights=weights, search_tree=tree)
