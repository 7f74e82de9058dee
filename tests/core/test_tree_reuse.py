"""Tree reuse (jaxzero.core.mcts.subtree, search from a carried tree): the carried subtree
is the chosen child's subtree node for node, a search from an empty carried tree grows
mctx's tree, a reused search keeps its budget and never plays an illegal move, and a
carried tree whose root is not the position reached is never used."""

import functools

import jax
import jax.numpy as jnp
import mctx
import numpy as np
import pytest
from conftest import tiny_config
from test_mcts import _roots

from jaxzero.core import mcts, search
from jaxzero.core.config import SearchConfig
from jaxzero.core.policies import make_search
from jaxzero.measure import match, opponents, players
from jaxzero.run.life.checkpoint import Checkpointer

SIMULATIONS = 24
Tree = mctx.Tree


@functools.cache  # one compiled search per kind and game for the module's tests
def _search(kind: str, game: str = "tic_tac_toe"):
    env, root, recurrent_fn, invalid = _roots(game)
    policy = mcts.puct_policy if kind == "puct" else mcts.gumbel_policy
    kwargs = {} if kind == "puct" else {"max_num_considered_actions": 4}
    output = jax.jit(
        lambda k: policy(
            None, k, root, recurrent_fn, SIMULATIONS, invalid_actions=invalid, **kwargs
        )
    )(jax.random.key(0))
    return env, root, recurrent_fn, invalid, output


def _assert_same_subtree(old: Tree, new: Tree, b: int, o: int, n: int) -> int:
    """Walk old node ``o`` and new node ``n`` of tree ``b`` together (numpy, recursive);
    the number of nodes compared."""
    for name in ("node_visits", "raw_values", "node_values", "children_prior_logits"):
        np.testing.assert_array_equal(getattr(new, name)[b, n], getattr(old, name)[b, o], name)
    for name in ("children_visits", "children_values", "children_rewards", "children_discounts"):
        np.testing.assert_array_equal(getattr(new, name)[b, n], getattr(old, name)[b, o], name)
    count = 1
    for action, child in enumerate(old.children_index[b, o]):
        new_child = new.children_index[b, n, action]
        assert (child < 0) == (new_child < 0)
        if child >= 0:
            assert new.parents[b, new_child] == n and new_child > n  # creation order kept
            assert new.action_from_parent[b, new_child] == action
            count += _assert_same_subtree(old, new, b, child, new_child)
    return count


@pytest.mark.parametrize("kind", ["puct", "gumbel"])
def test_subtree_is_the_childs_subtree_node_for_node(kind):
    _, _, _, _, output = _search(kind, "connect_four")
    tree = jax.device_get(output.search_tree)
    num_nodes = tree.node_visits.shape[1]
    cut = jax.jit(mcts.subtree, static_argnums=2)
    for action in range(tree.children_index.shape[2]):  # visited and unvisited edges alike
        actions = jnp.full(tree.node_visits.shape[0], action)
        new = jax.device_get(cut(output.search_tree, actions, num_nodes))
        for b in range(tree.node_visits.shape[0]):
            child = tree.children_index[b, 0, action]
            used = int((new.node_visits[b] > 0).sum())
            if child < 0:
                assert used == 0 and (new.children_index[b] == -1).all()
                continue
            assert new.parents[b, 0] == Tree.NO_PARENT
            assert _assert_same_subtree(tree, new, b, child, 0) == used
            assert (new.node_visits[b, used:] == 0).all() and (new.parents[b, used:] == -1).all()
            assert (new.children_index[b, used:] == -1).all()


def _hand_built_tree() -> Tree:
    """One tree of 6 nodes, 3 actions: 0 -a0-> 1 -a1-> 3 -a2-> 5, 0 -a2-> 2 -a0-> 4."""
    edges = [(0, 0, 1), (1, 1, 3), (3, 2, 5), (0, 2, 2), (2, 0, 4)]  # parent, action, node
    visits = np.array([6, 3, 2, 2, 1, 1])
    parents, action_from = np.full(6, -1), np.full(6, -1)
    children = np.full((6, 3), -1)
    children_visits = np.zeros((6, 3), np.int32)
    for parent, action, node in edges:
        parents[node], action_from[node], children[parent, action] = parent, action, node
        children_visits[parent, action] = visits[node]
    values = np.arange(6, dtype=np.float32) / 10
    children_values = np.where(children >= 0, values[np.maximum(children, 0)], 0.0)
    one = lambda x: jnp.asarray(x)[None]  # noqa: E731
    return Tree(
        node_visits=one(visits.astype(np.int32)),
        raw_values=one(values + 1),
        node_values=one(values),
        parents=one(parents.astype(np.int32)),
        action_from_parent=one(action_from.astype(np.int32)),
        children_index=one(children.astype(np.int32)),
        children_prior_logits=one(np.arange(18, dtype=np.float32).reshape(6, 3)),
        children_values=one(children_values.astype(np.float32)),
        children_visits=one(children_visits),
        children_rewards=one(np.where(children >= 0, 0.5, 0.0).astype(np.float32)),
        children_discounts=one(np.where(children >= 0, -1.0, 0.0).astype(np.float32)),
        embeddings=one(np.arange(6, dtype=np.int32) * 100),
        root_invalid_actions=jnp.zeros((1, 3), bool),
        extra_data=None,
    )


def test_subtree_of_a_hand_built_tree_and_its_cut():
    tree = _hand_built_tree()
    whole = mcts.subtree(tree, jnp.array([0]), keep=6)  # nodes 1, 3, 5 -> 0, 1, 2
    np.testing.assert_array_equal(whole.embeddings[0, :3], [100, 300, 500])
    np.testing.assert_array_equal(whole.node_visits[0], [3, 2, 1, 0, 0, 0])
    np.testing.assert_array_equal(whole.parents[0], [-1, 0, 1, -1, -1, -1])
    np.testing.assert_array_equal(whole.children_index[0, :3], [[-1, 1, -1], [-1, -1, 2], [-1] * 3])
    np.testing.assert_allclose(whole.node_values[0, :3], [0.1, 0.3, 0.5])
    # Kept to 2 nodes: node 5 is dropped, its edge unexpanded again, statistics zeroed.
    cut = mcts.subtree(tree, jnp.array([0]), keep=2)
    np.testing.assert_array_equal(cut.node_visits[0], [3, 2, 0, 0, 0, 0])
    np.testing.assert_array_equal(cut.children_index[0, 1], [-1, -1, -1])
    np.testing.assert_array_equal(cut.children_visits[0, 1], [0, 0, 0])
    np.testing.assert_array_equal(cut.children_visits[0, 0], [0, 2, 0])
    other = mcts.subtree(tree, jnp.array([2]), keep=6)  # nodes 2, 4
    np.testing.assert_array_equal(other.node_visits[0], [2, 1, 0, 0, 0, 0])
    empty = mcts.subtree(tree, jnp.array([1]), keep=6)  # never expanded
    np.testing.assert_array_equal(empty.node_visits[0], np.zeros(6))


@pytest.mark.parametrize("kind", ["puct", "gumbel"])
def test_a_search_from_an_empty_carried_tree_grows_the_fresh_tree(kind):
    env, root, recurrent_fn, invalid, fresh = _search(kind)
    policy = mcts.puct_policy if kind == "puct" else mcts.gumbel_policy
    kwargs = {} if kind == "puct" else {"max_num_considered_actions": 4}
    empty = search.empty_trees(root.embedding, SIMULATIONS, env.num_actions)
    carried = jax.jit(
        lambda k, t: policy(
            None, k, root, recurrent_fn, SIMULATIONS, invalid_actions=invalid, tree=t, **kwargs
        )
    )(jax.random.key(0), empty)
    np.testing.assert_array_equal(carried.action, fresh.action)
    np.testing.assert_allclose(carried.action_weights, fresh.action_weights, rtol=1e-6)
    n = SIMULATIONS + 1
    for name in ("node_visits", "children_index", "parents", "children_visits"):
        got, want = getattr(carried.search_tree, name), getattr(fresh.search_tree, name)
        np.testing.assert_array_equal(got[:, :n], want, name)
        assert (got[:, n:] == (0 if name.endswith("visits") else -1)).all()


def _uniform(num_actions):
    def apply(params, observation):
        del params
        return jnp.zeros((observation.shape[0], num_actions)), jnp.zeros(observation.shape[0])

    return apply


@pytest.mark.parametrize("kind", ["puct", "gumbel"])
def test_reused_searches_play_legal_moves_within_budget(kind):
    """Whole games of connect four, every move from the carried tree: the carried root
    visits are kept, the search adds exactly its simulations, legal moves only."""
    env, root, _, _, _ = _search(kind, "connect_four")
    apply = _uniform(env.num_actions)
    config = SearchConfig(kind=kind, num_simulations=8, reuse_tree=True)
    policy, options = make_search(config), search.SearchOptions.of(config)
    states = root.embedding
    tree = search.empty_trees(states, 8, env.num_actions)

    @jax.jit
    def move(states, tree, key):
        k_search, k_step = jax.random.split(key)
        output = search.run_search(
            None, states, k_search, env, apply, policy, num_simulations=8, options=options,
            tree=tree,
        )  # fmt: skip
        grown = output.search_tree
        action = policy.greedy_action(output)
        nxt = jax.vmap(env.step)(states, action, jax.random.split(k_step, action.shape[0]))
        return nxt, search.carry_tree(grown, action, 8), grown, action

    reused = 0
    for t in range(12):
        before = tree.node_visits[:, 0]
        live = ~(states.terminated | states.truncated)
        states_before = states
        states, tree, grown, action = move(states, tree, jax.random.key(t))
        rows = jnp.arange(action.shape[0])
        assert bool(jnp.all(states_before.legal_action_mask[rows, action] | ~live))
        assert bool(jnp.all(grown.node_visits[:, 0] == jnp.maximum(before, 1) + 8))
        assert int((grown.node_visits > 0).sum(axis=1).max()) <= search.tree_capacity(8)
        reused += int(jnp.sum(before > 0))
    assert reused > 0


def test_a_carried_tree_whose_root_is_not_the_position_is_not_used():
    env, root, recurrent_fn, invalid, output = _search("puct")
    apply = _uniform(env.num_actions)
    config = SearchConfig(kind="puct", num_simulations=SIMULATIONS, reuse_tree=True)
    policy, options = make_search(config), search.SearchOptions.of(config)
    states = root.embedding
    action = policy.greedy_action(output)
    run = jax.jit(  # one compile for both searches (the same shapes)
        lambda key, tree: search.run_search(
            None, states, key, env, apply, policy, num_simulations=SIMULATIONS,
            options=options, tree=tree,
        )
    )  # fmt: skip
    grown = run(jax.random.key(0), search.empty_trees(states, SIMULATIONS, env.num_actions))
    carried = search.carry_tree(grown.search_tree, action, SIMULATIONS)
    # Searched from the position before the move, not the one the tree leads to: cleared.
    again = run(jax.random.key(1), carried)
    assert run._cache_size() == 1
    assert bool(jnp.all(again.search_tree.node_visits[:, 0] == SIMULATIONS + 1))


@pytest.mark.parametrize(
    "kind, playout_cap", [("puct", False), ("gumbel", False), ("gumbel", True)]
)
def test_selfplay_with_tree_reuse_compiles_once_and_carries_trees(trainers, kind, playout_cap):
    """The training iteration with ``search.reuse_tree``: one compilation, carried trees
    in the self-play state (some non-empty between moves), targets still distributions
    over legal moves (or zeros after a cheap search)."""
    cap = {"selfplay__full_search_share": 0.5, "selfplay__cheap_simulations": 2}
    config = tiny_config(
        "connect_four", search__kind=kind, search__reuse_tree=True, **(cap if playout_cap else {})
    )
    trainer = trainers(config)
    state = trainer.init(jax.random.key(0))
    carried = 0
    for _ in range(3):
        state, metrics, _ = trainer.iteration(state)
        tree = state.selfplay.tree
        assert tree.node_visits.shape[1] == search.tree_capacity(config.search.num_simulations)
        carried += int(jnp.sum(tree.node_visits[:, 0] > 0))
        assert all(np.isfinite(v) for v in jax.device_get(metrics).values())
    assert trainer.iteration._cache_size() == 1
    assert carried > 0
    n = int(state.replay.size.sum())
    policy, legal = (
        np.asarray(state.replay.policy[:n]),
        np.asarray(state.replay.legal_action_mask[:n]),
    )
    totals = policy.sum(-1)
    assert (np.isclose(totals, 1.0, rtol=1e-5) | (totals == 0)).all()
    assert not (policy > 0)[~legal].any()


@pytest.mark.parametrize("kind", ["puct", "gumbel"])
def test_matches_with_tree_reuse_play_legal_games_and_compile_once(trainers, kind):
    """A reusing search player against the uniform opponent (each side asked) and against
    itself (one shared search, each game from its mover's tree): every recorded move is
    legal, and each match compiles once."""
    config = tiny_config("connect_four", search__kind=kind, search__reuse_tree=True)
    trainer = trainers(config)
    params = trainer.init(jax.random.key(0)).params
    env = trainer.env
    options = search.SearchOptions.of(config.search)
    player = players.SearchPlayer(env, trainer.apply_fn, trainer.search, 8, options)
    assert player.reuses_tree
    for opponent, params_b in ((opponents.uniform_random(env), None), (player, params)):
        game = match.make_match(env, player, opponent, num_games=8, opening_plies=1)
        for k in range(2):
            _, _, actions, _ = game.recorded(params, params_b, jax.random.key(k))
            _assert_legal(env, np.asarray(actions), jax.random.key(k))
        assert game.play_recorded._cache_size() == 1


def _assert_legal(env, actions: np.ndarray, key) -> None:
    """Replays the recorded games [G, L] (-1 once over): every move was legal."""
    states = jax.vmap(env.init)(jax.random.split(key, actions.shape[0]))
    step = jax.jit(jax.vmap(env.step))
    for t in range(actions.shape[1]):
        column = actions[:, t]
        live = column >= 0
        if not live.any():
            break
        legal = np.asarray(states.legal_action_mask)[np.arange(len(column)), np.maximum(column, 0)]
        assert legal[live].all(), t
        states = step(
            states, jnp.maximum(jnp.asarray(column), 0), jax.random.split(key, len(column))
        )


def test_a_run_with_tree_reuse_saves_no_trees_and_resumes(tmp_path, trainers, train_run):
    """The carried trees are a cache: checkpoints leave them out, and a resumed run's games
    start their next searches from empty trees."""
    config = tiny_config("tic_tac_toe", search__reuse_tree=True)
    run = tmp_path / "run"
    assert train_run(run, config, iterations=2).iterations == 2
    abstract = jax.eval_shape(trainers(config).init, jax.random.key(0))
    with Checkpointer(run) as checkpointer:
        restored = checkpointer.restore(abstract, 2)[0]
    trees = restored.selfplay.tree
    assert trees.node_visits.shape[1] == search.tree_capacity(config.search.num_simulations)
    assert (
        not np.asarray(trees.node_visits).any() and (np.asarray(trees.children_index) == -1).all()
    )
    iteration = trainers(config).iteration
    compiled = iteration._cache_size()
    assert train_run(run, resume=True, iterations=4).iterations == 4
    # the empty trees placed as the restored fields: the same program as before the stop
    assert iteration._cache_size() == compiled
