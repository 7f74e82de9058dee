"""Search over Envs: hand-checked positions and a hand-computed backup with a double move."""

import functools

import jax
import jax.numpy as jnp
import mctx
import numpy as np
import pytest
from double_move import DoubleMove

import envs
from envs.core import Env, State
from jaxzero.core import search
from jaxzero.core.config import SearchConfig
from jaxzero.core.policies import make_search

TTT = envs.make("tic_tac_toe")
KINDS = ("puct", "gumbel")
_LINES = [(0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6)]


@functools.cache
def _minimax(board: tuple[int, ...], player: int) -> int:
    """Game value for ``player`` to move on ``board`` (-1 empty, else the owner)."""
    best = -1 if -1 in board else 0
    for cell in (c for c in range(9) if board[c] == -1):
        nxt = board[:cell] + (player,) + board[cell + 1 :]
        if any(all(nxt[i] == player for i in line) for line in _LINES):
            return 1
        best = max(best, -_minimax(nxt, 1 - player) if -1 in nxt else 0)
    return best


def optimal_moves(moves: list[int]) -> set[int]:
    board, player = [-1] * 9, 0
    for m in moves:
        board[m], player = player, 1 - player
    values = {}
    for cell in (c for c in range(9) if board[c] == -1):
        nxt = tuple(board[:cell] + [player] + board[cell + 1 :])
        won = any(all(nxt[i] == player for i in line) for line in _LINES)
        values[cell] = 1 if won else (-_minimax(nxt, 1 - player) if -1 in nxt else 0)
    best = max(values.values())
    return {c for c, v in values.items() if v == best}


def play(env: Env, moves: list[int]) -> State:
    state = env.init(jax.random.key(0))
    for m in moves:
        state = env.step(state, m)
    return state


def stack(states: list[State]) -> State:
    return jax.tree.map(lambda *xs: jnp.stack(xs), *states)


def bias_net(params, observation):
    """A fixed 'network': logits = params (broadcast), value 0."""
    b = observation.shape[0]
    return jnp.broadcast_to(params, (b, params.shape[-1])), jnp.zeros((b,), jnp.float32)


@functools.cache
def ttt_search(kind: str, noise: bool = False):
    cfg = SearchConfig(kind=kind, num_simulations=256, max_num_considered_actions=9)
    return jax.jit(
        functools.partial(
            search.run_search,
            env=TTT,
            apply_fn=bias_net,
            policy=make_search(cfg),
            num_simulations=cfg.num_simulations,
            noise=noise,
        )  # fmt: skip
    )


# X to move in each; the first has an immediate win, the second a fork (win in 3 plies),
# the third a single empty cell (one legal action).
POSITIONS = [[0, 3, 1, 4], [4, 1, 0, 8], [0, 1, 2, 4, 3, 5, 7, 6]]
PUCT = make_search(SearchConfig(kind="puct"))


@pytest.mark.parametrize("kind", KINDS)
def test_forced_wins_are_found_and_a_single_legal_move_is_finite(kind):
    states = stack([play(TTT, m) for m in POSITIONS])
    out = ttt_search(kind)(jnp.zeros(9), states, jax.random.key(1))
    actions = np.asarray(make_search(SearchConfig(kind=kind)).greedy_action(out))
    assert actions[0] == 2
    assert optimal_moves(POSITIONS[1]) == {3, 6}  # the forks
    assert actions[1] in {3, 6}
    assert actions[2] == 8
    weights = np.asarray(out.action_weights)
    assert np.isfinite(weights).all()
    np.testing.assert_allclose(weights[2], np.eye(9)[8], atol=1e-6)
    # The root's value estimate of the immediate win converges towards +1.
    q = np.asarray(out.search_tree.qvalues(jnp.zeros(3, jnp.int32)))
    assert q[0, 2] == pytest.approx(1.0)


@pytest.mark.parametrize("kind", KINDS)
def test_illegal_actions_get_no_visits_even_with_the_highest_prior(kind):
    states = stack([play(TTT, m) for m in POSITIONS])
    logits = jnp.zeros(9).at[0].set(10.0).at[4].set(8.0)  # both cells are taken
    out = ttt_search(kind)(logits, states, jax.random.key(2))
    tree = out.search_tree
    visits = np.asarray(tree.children_visits)  # [B, N, A]
    legal = np.asarray(tree.embeddings.legal_action_mask)  # [B, N, A]
    expanded = visits.sum(-1) > 0
    assert expanded[:, 0].all()
    assert (visits[~legal & expanded[..., None]] == 0).all()
    assert np.asarray(out.action_weights)[:, [0, 4]].max() == 0.0
    # Inside the tree illegal priors are the smallest finite logit, not -inf.
    priors = np.asarray(tree.children_prior_logits)
    assert np.isfinite(priors).all()
    assert (priors[~legal & expanded[..., None]] == np.finfo(np.float32).min).all()


@pytest.mark.parametrize("kind", KINDS)
def test_single_legal_action_with_root_noise_has_no_nans(kind):
    states = stack([play(TTT, m) for m in POSITIONS])
    out = ttt_search(kind, noise=True)(jnp.zeros(9), states, jax.random.key(3))
    assert np.isfinite(np.asarray(out.action_weights)).all()
    assert np.isfinite(np.asarray(out.search_tree.node_values)).all()
    assert int(out.action[2]) == 8


def oracle_net(params, observation):
    """The exact value for the player to move: after first == 0 player 0 wins, so the
    value is +1 for player 0 (to move at step 1) and -1 for player 1 (step 2)."""
    del params
    b = observation.shape[0]
    p0_wins = jnp.where(observation[:, 3] > 0, 1.0, -1.0)
    value = jnp.where(observation[:, 1] > 0, p0_wins, jnp.where(observation[:, 2] > 0, -p0_wins, 0))
    return jnp.zeros((b, 2)), value


@pytest.mark.parametrize("kind", KINDS)
def test_double_move_backs_up_values_with_the_right_signs(kind):
    env = DoubleMove()
    root_state = stack([env.init(jax.random.key(0))])
    run = functools.partial(
        search.run_search,
        policy=make_search(SearchConfig(kind=kind)),
        num_simulations=24,
        env=env,
        apply_fn=oracle_net,
        noise=False,
    )
    out = jax.jit(run)(None, root_state, jax.random.key(4))
    tree = out.search_tree
    # Player 0's first move: action 0 wins (+1), action 1 loses (-1), through a second
    # move by the same player (discount +1) and a reply by the opponent (discount -1).
    q_root = np.asarray(tree.qvalues(jnp.zeros(1, jnp.int32)))[0]
    root_visits = np.asarray(tree.children_visits)[0, 0]
    assert root_visits[0] > 0
    assert q_root[0] == pytest.approx(1.0)
    assert root_visits[1] == 0 or q_root[1] == pytest.approx(-1.0)
    # At the node after action 0 (player 0 to move again), every continuation is worth +1
    # to player 0; at the node after 0, 0 (player 1 to move), -1 to player 1.
    node = int(tree.children_index[0, 0, 0])
    np.testing.assert_allclose(np.asarray(tree.node_values)[0, node], 1.0, atol=1e-6)
    visited = np.asarray(tree.children_visits)[0, node] > 0
    q_node = np.asarray(tree.qvalues(jnp.full(1, node, jnp.int32)))[0]
    np.testing.assert_allclose(q_node[visited], 1.0, atol=1e-6)
    grandchild = int(tree.children_index[0, node, 0])
    if grandchild >= 0:
        np.testing.assert_allclose(np.asarray(tree.node_values)[0, grandchild], -1.0, atol=1e-6)
    # Transition signs read straight off the recurrent function.
    rec = search.make_recurrent_fn(env, oracle_net)
    after_first = env.step(env.init(jax.random.key(0)), 0)
    s1 = stack([after_first])
    s2 = stack([env.step(after_first, 1)])
    o0, _ = rec(None, jax.random.key(0), jnp.array([0]), root_state)
    o1, _ = rec(None, jax.random.key(0), jnp.array([1]), s1)
    o2, _ = rec(None, jax.random.key(0), jnp.array([0]), s2)
    assert (float(o0.discount[0]), float(o1.discount[0]), float(o2.discount[0])) == (1, -1, 0)
    assert (float(o0.reward[0]), float(o1.reward[0]), float(o2.reward[0])) == (0, 0, -1)
    assert float(o2.value[0]) == 0.0


def test_select_action_samples_visited_moves_early_and_is_greedy_later():
    states = stack([play(TTT, m) for m in POSITIONS])
    out = ttt_search("puct")(jnp.zeros(9), states, jax.random.key(5))
    out = jax.tree.map(lambda x: jnp.repeat(x[1:2], 64, axis=0), out)  # the fork, 64 times
    counts = np.asarray(search.visit_counts(out))
    early = search.select_action(
        out, jnp.zeros(64, jnp.int32), jax.random.key(6), policy=PUCT, temperature_moves=2
    )
    late = search.select_action(
        out, jnp.full(64, 2, jnp.int32), jax.random.key(6), policy=PUCT, temperature_moves=2
    )
    early, late = np.asarray(early), np.asarray(late)
    assert (counts[np.arange(64), early] > 0).all()
    assert len(set(early.tolist())) > 1
    np.testing.assert_array_equal(late, counts.argmax(-1))
    assert isinstance(out, mctx.PolicyOutput)
