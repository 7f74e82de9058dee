"""Tic-tac-toe: the contract, every reachable position, the dihedral symmetries."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from envs import symmetry
from envs.testing import check_env, check_symmetries
from envs.tic_tac_toe import TicTacToe


@pytest.fixture(scope="module")
def env():
    return envs.make("tic_tac_toe")


def test_contract(env):
    check_env(env)


def test_dihedral_symmetries_commute_with_the_rules(env):
    check_symmetries(env)


@pytest.fixture(scope="module")
def game_tree(env):
    """Every position reachable from the empty board, found breadth-first with our rules.

    Returns {board: (terminated, rewards, current player, child boards)}, boards as tuples.
    """
    width = 2048  # parents per call, padded, so that one compiled step serves every ply
    step = jax.jit(jax.vmap(env.step))
    root = env.init(jax.random.key(0))
    tree = {}
    frontier = jax.tree.map(lambda x: np.asarray(x)[None], root)
    tree[tuple(root.board.tolist())] = (False, (0.0, 0.0), 0, [])
    while len(frontier.board):
        n = len(frontier.board)
        parents = jax.tree.map(functools.partial(_pad_and_repeat, size=width), frontier)
        actions = np.tile(np.arange(9, dtype=np.int32), width)
        children = jax.device_get(step(parents, actions))
        legal = parents.legal_action_mask[np.arange(width * 9), actions]
        legal[n * 9 :] = False
        keep = []
        for i in np.flatnonzero(legal):
            parent, child = tuple(parents.board[i].tolist()), tuple(children.board[i].tolist())
            tree[parent][3].append(child)
            if child not in tree:
                tree[child] = (
                    bool(children.terminated[i]),
                    tuple(children.rewards[i].tolist()),
                    int(children.current_player[i]),
                    [],
                )
                if not children.terminated[i]:
                    keep.append(i)
        frontier = jax.tree.map(lambda x, keep=keep: x[keep], children)
    return tree


def _pad_and_repeat(x: np.ndarray, size: int) -> np.ndarray:
    """Pad the leading axis to ``size``, then repeat each row 9 times (once per action)."""
    padded = np.pad(x, [(0, size - len(x))] + [(0, 0)] * (x.ndim - 1))
    return np.repeat(padded, 9, axis=0)


def test_every_reachable_position(game_tree):
    assert len(game_tree) == 5478
    assert sum(not terminated for terminated, *_ in game_tree.values()) == 4520
    # a live position has a child for each empty cell; a finished one has none
    for board, (terminated, _, _, children) in game_tree.items():
        assert len(children) == (0 if terminated else board.count(-1))


def test_perfect_play_is_a_draw(game_tree):
    @functools.cache
    def value(board):
        """The result for the player to move at ``board`` under perfect play by both."""
        _, _, mover, children = game_tree[board]
        outcomes = []
        for child in children:
            terminated, rewards, _, _ = game_tree[child]
            outcomes.append(rewards[mover] if terminated else -value(child))
        return max(outcomes)

    assert value((-1,) * 9) == 0.0
    assert value((0, -1, -1, -1, -1, -1, -1, -1, -1)) == 0.0  # after X in a corner: O draws
    assert value((0, -1, -1, 1, -1, -1, -1, -1, -1)) == 1.0  # O's reply below the corner loses


@pytest.mark.parametrize("element", range(8))
def test_transformed_game_has_transformed_masks_and_the_same_outcome(env, element):
    sym = env.symmetries
    actions = [0, 4, 8, 2, 6, 3, 7]  # X completes the bottom row 6 7 8 on move 7
    image = np.argsort(sym.action_index[element])  # where each cell goes under the element
    step = jax.jit(env.step)
    state = transformed = env.init(jax.random.key(0))
    for action in actions:
        state = step(state, jnp.int32(action))
        transformed = step(transformed, jnp.int32(image[action]))
        np.testing.assert_array_equal(
            transformed.legal_action_mask, sym.transform_actions(state.legal_action_mask, element)
        )
        np.testing.assert_array_equal(
            transformed.observation, sym.transform_observation(state.observation, element)
        )
        assert transformed.rewards.tolist() == state.rewards.tolist()
        assert transformed.terminated == state.terminated
    assert state.terminated and state.rewards.tolist() == [1.0, -1.0]


def test_render_and_cell_notation(env):
    state = env.init(jax.random.key(0))
    for action in [4, 0, 8]:
        state = jax.jit(env.step)(state, action)
    assert env.render(state) == "O . .\n. X .\n. . X"
    assert env.action_to_text(0) == "1" and env.text_to_action("9") == 8


class _CoinFlipTurns(TicTacToe):
    """A legal variant: a coin flip (the step key) decides whether the mover goes again,
    so players do not alternate and ``step`` is stochastic."""

    def _step(self, state, action, key):
        nxt = super()._step(state, action, key)
        again = jax.random.bernoulli(key)
        player = jnp.where(again, state.current_player, nxt.current_player)
        return nxt.replace(current_player=player, observation=self.observe(nxt, player))


def test_checker_accepts_repeated_turns_and_random_steps():
    check_env(_CoinFlipTurns(), num_games=8)


class _NotZeroSum(TicTacToe):
    """A broken rule: the loser is not charged."""

    def _step(self, state, action, key):
        nxt = super()._step(state, action, key)
        return nxt.replace(rewards=jnp.maximum(nxt.rewards, 0.0))


class _WrongShape(TicTacToe):
    observation_shape = (9, 2)


class _Shifted(TicTacToe):
    """Claims a symmetry the rules lack: shifting every cell by one."""

    symmetries = symmetry.Symmetries(
        observation_index=np.stack([np.arange(9), np.roll(np.arange(9), 1)]).astype(np.int32),
        action_index=np.stack([np.arange(9), np.roll(np.arange(9), 1)]).astype(np.int32),
    )


@pytest.mark.parametrize(
    "broken, check, message",
    [
        (_NotZeroSum, check_env, "not zero-sum"),
        (_WrongShape, check_env, "observation shape"),
        (_Shifted, check_symmetries, "symmetry 1"),
    ],
)
def test_checkers_catch_broken_games(broken, check, message):
    with pytest.raises(AssertionError, match=message):
        check(broken(), num_games=4)
