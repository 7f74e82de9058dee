"""Connect Four: the contract, hand-built positions for every rule, the mirror symmetry."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from envs.testing import check_env, check_symmetries

# Whole games as the columns played, numbered 1-7 as on the rendered board.
DRAW = "474627236666437711526523313232741145175545"  # 42 discs, no line of four
LAST_CELL_WIN = "146755222445457123546774511122367766163333"  # O's 42nd disc makes four


@pytest.fixture(scope="module")
def env():
    return envs.make("connect_four")


@pytest.fixture(scope="module")
def play(env):
    """Columns "1".."7" -> the state after each disc, stacked: a State with leading [T]."""
    step = jax.jit(env.step)

    def run(columns: str):
        state = env.init(jax.random.key(0))
        states = []
        for column in columns:
            state = step(state, jnp.int32(env.text_to_action(column)))
            states.append(state)
        return jax.tree.map(lambda *xs: np.stack(xs), *states)

    return run


def test_contract(env):
    check_env(env)


def test_mirror_symmetry_commutes_with_the_rules(env):
    check_symmetries(env)


def test_mirrored_game_has_mirrored_masks_and_the_same_outcome(env, play):
    mirror = "".join(str(8 - int(c)) for c in LAST_CELL_WIN)
    original, mirrored = play(LAST_CELL_WIN), play(mirror)
    np.testing.assert_array_equal(mirrored.legal_action_mask, original.legal_action_mask[:, ::-1])
    np.testing.assert_array_equal(mirrored.observation, original.observation[:, :, ::-1])
    np.testing.assert_array_equal(mirrored.rewards, original.rewards)
    np.testing.assert_array_equal(mirrored.terminated, original.terminated)


@pytest.mark.parametrize(
    "columns, ply, rewards",
    [
        ("1122334", 7, [1.0, -1.0]),  # X across the bottom row, columns 1-4
        ("1122443", 7, [1.0, -1.0]),  # the same row completed in its middle, column 3
        ("12131465", 8, [-1.0, 1.0]),  # O across the bottom, columns 2-5
        ("1213141", 7, [1.0, -1.0]),  # X up column 1
        ("12233434464", 11, [1.0, -1.0]),  # X rising to the right: 1a 2b 3c 4d
        ("76655454424", 11, [1.0, -1.0]),  # X rising to the left: 7a 6b 5c 4d
        ("12333444462", 11, [1.0, -1.0]),  # 1a 3c 4d, then 2b fills the middle
        (DRAW, 42, [0.0, 0.0]),  # the board fills without a line: a draw
        (LAST_CELL_WIN, 42, [-1.0, 1.0]),  # the last empty cell completes O's line
    ],
)
def test_game_ends_on_the_right_disc_with_the_right_result(play, columns, ply, rewards):
    """Rows count from the bottom in these comments (a = bottom row); cross-checked with
    OpenSpiel when they were written."""
    states = play(columns)
    assert not states.terminated[: ply - 1].any()
    assert (states.rewards[: ply - 1] == 0).all()
    assert states.terminated[ply - 1] and not states.truncated[ply - 1]
    assert states.rewards[ply - 1].tolist() == rewards
    assert states.step_count[ply - 1] == ply


def test_full_column_is_masked_and_playing_it_loses(env, play):
    states = play("111111")  # X O X O X O: no line, column 1 full
    last = jax.tree.map(lambda x: x[-1], states)
    assert not last.terminated
    assert last.legal_action_mask.tolist() == [False] + [True] * 6
    assert (last.heights == [6, 0, 0, 0, 0, 0, 0]).all()
    after = jax.jit(env.step)(last, jnp.int32(0))  # X drops into the full column
    assert after.terminated and after.rewards.tolist() == [-1.0, 1.0]


def test_discs_fall_to_the_bottom_and_observation_is_from_the_movers_side(env, play):
    states = play("44")  # X then O in column 4
    last = jax.tree.map(lambda x: x[-1], states)
    board = last.board.reshape(6, 7)
    assert board[5, 3] == 0 and board[4, 3] == 1  # row 0 is the top
    assert (board >= 0).sum() == 2
    assert last.current_player == 0
    obs = last.observation  # X to move: plane 0 holds X's disc, plane 1 O's
    assert obs[5, 3].tolist() == [True, False] and obs[4, 3].tolist() == [False, True]
    assert obs.sum() == 2
    o_view = env.observe(last, 1)
    assert o_view[5, 3].tolist() == [False, True] and o_view[4, 3].tolist() == [True, False]


def test_render_and_column_notation(env, play):
    last = jax.tree.map(lambda x: x[-1], play("4435"))
    assert env.render(last) == "\n".join(
        [
            ". . . . . . .",
            ". . . . . . .",
            ". . . . . . .",
            ". . . . . . .",
            ". . . O . . .",
            ". . X X O . .",
            "1 2 3 4 5 6 7",
        ]
    )
    assert env.action_to_text(0) == "1" and env.text_to_action(" 7 ") == 6
    for bad in ["0", "8", "x", ""]:
        with pytest.raises(ValueError, match="not a column"):
            env.text_to_action(bad)


def test_bitboards_hold_the_same_discs_as_the_board(play):
    states = play(DRAW)
    for board, bitboards in zip(states.board, states.bitboards, strict=True):
        for player in range(2):
            bits = int(bitboards[player, 0]) | int(bitboards[player, 1]) << 32
            for cell in range(42):
                row, column = divmod(cell, 7)
                bit = column * 7 + (5 - row)  # column-major, bottom-up, a guard bit a column
                assert (bits >> bit & 1) == (board[cell] == player)
            assert bits >> 49 == 0 and all(bits >> (7 * c + 6) & 1 == 0 for c in range(7))
