"""jaxzero.core.mcts grows mctx's trees: for the same key, on positions whose trees reach
terminal states, every visit count, child index, parent and action equals mctx's, and every
value, prior and weight equals it to float32 rounding (bit for bit on this machine, except
where XLA contracts a multiply-add differently)."""

import functools

import jax
import jax.numpy as jnp
import mctx
import numpy as np
import pytest

import envs
from jaxzero.core import mcts, search

SIMULATIONS = 24


def _linear_net(env, key):
    """A cheap network with sharp, position-dependent priors: deep trees, no ties."""
    weights = 2.0 * jax.random.normal(
        key, (int(np.prod(env.observation_shape)), env.num_actions + 1)
    )

    def apply(params, observation):
        x = observation.reshape(observation.shape[0], -1).astype(jnp.float32) @ weights
        return x[:, :-1], jnp.tanh(x[:, -1])

    return apply


def _roots(game: str, batch: int = 6):
    """Positions a few random moves in, so some subtrees end in terminal states."""
    env = envs.make(game)
    key = jax.random.key(3)
    states = jax.vmap(env.init)(jax.random.split(key, batch))
    for i in range(4 if game == "tic_tac_toe" else 8):
        k = jax.random.fold_in(key, i)
        logits = jnp.where(states.legal_action_mask, 0.0, -jnp.inf)
        action = jax.random.categorical(k, logits)
        states = jax.vmap(env.step)(states, action, jax.random.split(k, batch))
    apply = _linear_net(env, key)
    root = search.make_root(None, states, apply)
    return env, root, search.make_recurrent_fn(env, apply), ~states.legal_action_mask


def _assert_same(ours: mctx.PolicyOutput, theirs: mctx.PolicyOutput):
    leaves = jax.tree_util.tree_leaves_with_path(theirs)
    for (path, expected), actual in zip(leaves, jax.tree.leaves(ours), strict=True):
        name = jax.tree_util.keystr(path)
        if jnp.issubdtype(expected.dtype, jnp.floating):  # XLA may fuse a*b+c differently
            np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=1e-6, err_msg=name)
        else:  # visits, children, parents, actions: exact
            np.testing.assert_array_equal(actual, expected, err_msg=name)


@pytest.mark.parametrize(
    "game, simulations",
    [("tic_tac_toe", SIMULATIONS), ("connect_four", SIMULATIONS), ("tic_tac_toe", 40)],
)
def test_puct_grows_mctx_tree(game, simulations):
    """40 simulations of tic-tac-toe: more than the game's 9 moves, so paths end in
    terminal positions and the search goes on below them."""
    _, root, recurrent_fn, invalid = _roots(game)
    kwargs = dict(invalid_actions=invalid, dirichlet_fraction=0.25, dirichlet_alpha=0.3)
    key = jax.random.key(0)
    theirs = jax.jit(
        lambda k: mctx.muzero_policy(None, k, root, recurrent_fn, simulations, **kwargs)
    )
    ours = jax.jit(lambda k: mcts.puct_policy(None, k, root, recurrent_fn, simulations, **kwargs))
    expected = theirs(key)
    tree = expected.search_tree
    if game == "tic_tac_toe":  # some expanded edge ends the game, and the search goes on below
        assert bool(jnp.any((tree.children_discounts == 0) & (tree.children_index >= 0)))
    _assert_same(ours(key), expected)


def test_bounded_puct_grows_mctx_tree():
    """``q_bound`` > 0: mctx's muzero_policy with Q read on the fixed range [-q, q]; the
    tree differs from the default transform's (the option changes the search)."""
    _, root, recurrent_fn, invalid = _roots("connect_four")
    kwargs = dict(invalid_actions=invalid, dirichlet_fraction=0.25, dirichlet_alpha=0.3)
    bounded = functools.partial(mctx.qtransform_by_min_max, min_value=-1.0, max_value=1.0)
    key = jax.random.key(0)
    theirs = jax.jit(
        lambda k: mctx.muzero_policy(
            None, k, root, recurrent_fn, SIMULATIONS, qtransform=bounded, **kwargs
        )
    )

    def ours(q_bound):
        policy = functools.partial(mcts.puct_policy, q_bound=q_bound, **kwargs)
        return jax.jit(lambda k: policy(None, k, root, recurrent_fn, SIMULATIONS))(key)

    expected = theirs(key)
    _assert_same(ours(1.0), expected)
    default = ours(0.0).search_tree.children_visits
    assert not np.array_equal(default, expected.search_tree.children_visits)


@pytest.mark.parametrize("game", ["tic_tac_toe", "connect_four"])
def test_gumbel_grows_mctx_tree(game):
    _, root, recurrent_fn, invalid = _roots(game)
    key = jax.random.key(1)
    theirs = functools.partial(
        mctx.gumbel_muzero_policy, qtransform=mctx.qtransform_completed_by_mix_value
    )
    outputs = [
        jax.jit(
            lambda k, policy=policy: policy(
                None, k, root, recurrent_fn, SIMULATIONS, invalid_actions=invalid,
                max_num_considered_actions=4,
            )
        )(key)
        for policy in (mcts.gumbel_policy, theirs)
    ]  # fmt: skip
    _assert_same(*outputs)


def test_a_depth_cutoff_reexpands_as_mctx_does():
    """With ``max_depth`` 2 the traversal stops on expanded nodes, which are evaluated again."""
    _, root, recurrent_fn, invalid = _roots("tic_tac_toe")
    select = jax.vmap(mctx.muzero_action_selection)
    key = jax.random.key(2)
    kwargs = dict(root=root, recurrent_fn=recurrent_fn, num_simulations=SIMULATIONS, max_depth=2)
    theirs = mctx.search(
        None,
        key,
        root_action_selection_fn=functools.partial(mctx.muzero_action_selection, depth=0),
        interior_action_selection_fn=mctx.muzero_action_selection,
        invalid_actions=invalid,
        **kwargs,
    )
    ours = mcts.search(
        None,
        key,
        root_selection=select,
        interior_selection=select,
        invalid_actions=invalid,
        **kwargs,
    )
    assert int(jnp.max(ours.node_visits[:, 0])) == SIMULATIONS + 1
    _assert_same(ours, theirs)


def test_a_recurrent_function_of_the_wrong_shape_fails_at_trace_time():
    """A value [B, 1] where the contract says [B] is named when the search is traced, not
    broadcast into the tree."""
    _, root, recurrent_fn, invalid = _roots("tic_tac_toe")

    def columns(params, key, action, embedding):
        step, embedding = recurrent_fn(params, key, action, embedding)
        return step.replace(value=step.value[:, None]), embedding

    with pytest.raises(AssertionError, match="shape"):
        mcts.puct_policy(None, jax.random.key(0), root, columns, 2, invalid_actions=invalid)
