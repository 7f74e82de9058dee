"""Go: the Env contract, GTP coordinates and every rule on hand-built positions.

Boards are written top row first (``X`` Black, ``O`` White); moves are GTP vertices, so
``A9`` is the top-left point of a 9 x 9 board. The OpenSpiel oracle is tests/envs/test_go_oracle.py.
"""

import numpy as np
import pytest

import envs
from envs.go import Go, _jit_step, action_to_gtp, gtp_to_action, score
from envs.testing import check_env, check_symmetries


@pytest.fixture(scope="module")
def go9():
    return envs.make("go_9x9")


@pytest.fixture(scope="module")
def go6():
    return envs.make("go_6x6")


def legal(env, state, vertex: str) -> bool:
    return bool(state.legal_action_mask[gtp_to_action(vertex, env.size)])


def rows(env, state) -> list[str]:
    colour = np.asarray(state.colour).reshape(env.size, env.size)
    return ["".join(".XO"[int(v)] for v in row) for row in colour]


# ------------------------------------------------------------------ API surface
def test_registry_ids_sizes_and_default_komi():
    assert (envs.make("go_6x6").size, envs.make("go_6x6").komi) == (6, 3.5)
    assert (envs.make("go_9x9").size, envs.make("go_9x9").komi) == (9, 7.5)
    assert envs.make("go", size=7).komi == 3.5 and envs.make("go", size=13).komi == 7.5
    env = envs.make("go", size=19, komi=6.5, history=2)
    assert (env.num_actions, env.observation_shape, env.max_steps) == (362, (19, 19, 5), 722)
    assert env.komi == 6.5 and env.id == "go_19x19"
    assert env.symmetries.size == 8 and env.symmetries.action_index[:, 361].tolist() == [361] * 8


@pytest.mark.parametrize("size", [4, 20, 9.0, "9"])
def test_unsupported_sizes_are_clear_errors(size):
    with pytest.raises(ValueError, match="board size must be an integer from 5 to 19"):
        envs.make("go", size=size)


def test_gtp_coordinates_round_trip_and_reject_garbage():
    assert action_to_gtp(0, 9) == "A9" and action_to_gtp(80, 9) == "J1"
    assert action_to_gtp(81, 9) == "pass" and action_to_gtp(8, 19) == "J19"
    assert gtp_to_action("d4", 9) == 5 * 9 + 3 and gtp_to_action(" PASS ", 9) == 81
    assert gtp_to_action("T1", 19) == 360
    for size in (5, 6, 9, 13, 19):
        for action in range(size * size + 1):
            assert gtp_to_action(action_to_gtp(action, size), size) == action
    for bad in ["I5", "Z9", "", "A", "44", "pass5", "A-1"]:
        with pytest.raises(ValueError, match="is not a move on 9x9"):
            gtp_to_action(bad, 9)
    for bad in ["A10", "A0"]:
        with pytest.raises(ValueError, match="off the 9x9 board"):
            gtp_to_action(bad, 9)
    with pytest.raises(ValueError, match="outside"):
        action_to_gtp(82, 9)
    env = envs.make("go_9x9")
    assert env.text_to_action("e5") == 40 and env.action_to_text(40) == "E5"


def test_render_uses_go_coordinates(go9):
    state = go9.state_from_moves(["D4", "E5"])
    picture = go9.render(state)
    lines = picture.splitlines()
    assert lines[0].split() == list("ABCDEFGHJ")
    assert lines[5].split() == ["5", ".", ".", ".", ".", "O", ".", ".", ".", ".", "5"]
    assert lines[6].split()[4] == "X" and lines[-1] == "Black (X) to play"


def test_from_board_rejects_impossible_positions(go9):
    with pytest.raises(ValueError, match="unknown board characters"):
        go9.from_board(["?" * 9] * 9)
    with pytest.raises(ValueError, match="expected 9 rows of 9 points"):
        go9.from_board(["." * 9] * 8)
    with pytest.raises(ValueError, match="the chain at A9 has no liberties"):
        go9.from_board(["OX......."] + ["X........"] + ["." * 9] * 7)


# -------------------------------------------------------------------- contract
def test_contract(go6):
    check_env(go6, num_games=6)  # 9 x 9 runs under jit(vmap) in the oracle test


def test_symmetries_commute_with_the_rules(go6):
    check_symmetries(go6, num_games=4)


def test_incremental_chains_match_a_rebuild_from_the_board(go9):
    """After every move of a random game the chain ids, pseudo-liberties, chain hashes
    and board hash kept incrementally equal those computed from scratch from the board."""
    rng = np.random.default_rng(3)
    state = go9.state_from_moves([])
    captures = 0
    for _ in range(140):
        moves = np.flatnonzero(np.asarray(state.legal_action_mask)[:-1])
        if bool(state.terminated | state.truncated) or len(moves) == 0:
            break
        before = int((np.asarray(state.colour) != 0).sum())
        state = go9.state_from_moves([int(rng.choice(moves))], state)
        captures += int((np.asarray(state.colour) != 0).sum()) < before + 1
        fresh = go9.from_board(rows(go9, state), int(state.current_player))
        stones = np.flatnonzero(np.asarray(state.colour))
        chain, fresh_chain = np.asarray(state.chain)[stones], np.asarray(fresh.chain)[stones]
        same = chain[:, None] == chain[None, :]
        np.testing.assert_array_equal(same, fresh_chain[:, None] == fresh_chain[None, :])
        np.testing.assert_array_equal(
            np.asarray(state.liberties)[:, chain], np.asarray(fresh.liberties)[:, fresh_chain]
        )
        np.testing.assert_array_equal(
            np.asarray(state.chain_hash)[:, chain], np.asarray(fresh.chain_hash)[:, fresh_chain]
        )
        np.testing.assert_array_equal(state.board_hash, fresh.board_hash)
        # Without the history only superko can differ: the rebuild allows at least as much.
        assert (np.asarray(fresh.legal_action_mask) >= np.asarray(state.legal_action_mask)).all()
    assert captures >= 3


# ----------------------------------------------------------------------- rules
def test_single_capture_restores_liberties(go9):
    position = ["." * 9] * 2 + ["...X.....", "..XO.....", "...X....."] + ["." * 9] * 4
    state = go9.state_from_moves(["E6"], go9.from_board(position))
    assert rows(go9, state)[3] == "..X.X...."
    # The hole is an eye of four Black stones that keep other liberties: suicide for White.
    assert not legal(go9, state, "D6") and legal(go9, state, "E7")
    assert int(state.current_player) == 1


def test_multi_stone_and_double_capture(go9):
    position = ["XO.OX....", ".X.X....."] + ["." * 9] * 4 + [".XXX.....", "XOOO.....", ".XXX....."]
    state = go9.from_board(position)
    one = go9.state_from_moves(["C9"], state)  # takes two single stones at once
    assert rows(go9, one)[0] == "X.X.X...."
    assert legal(go9, one, "B9") is False  # White back in: suicide (no ko, Black C9 is safe)
    three = go9.state_from_moves(["E2"], state)  # takes a chain of three
    assert rows(go9, three)[7] == "X...X...."
    np.testing.assert_array_equal(three.board_hash, go9.from_board(rows(go9, three), 1).board_hash)


def test_suicide_is_illegal_single_and_multi_stone(go9):
    position = ["O.X......", "XX......."] + ["." * 9] * 7
    state = go9.from_board(position, to_play=1)
    assert not legal(go9, state, "B9")  # White O + B9 would have no liberty left
    black = go9.from_board([".X.......", "X........"] + ["." * 9] * 7, to_play=1)
    assert not legal(go9, black, "A9")  # single-stone suicide in Black's eye
    assert legal(go9, go9.from_board(position, to_play=0), "B9")  # Black B9 captures A9


def test_simple_ko_masked_until_a_move_elsewhere(go9):
    position = ["." * 9, ".XO......", "XO.O.....", ".XO......"] + ["." * 9] * 5
    state = go9.state_from_moves(["C7"], go9.from_board(position))  # Black takes the ko
    assert rows(go9, state)[2] == "X.XO....."
    assert not legal(go9, state, "B7")  # immediate retake recreates the last position
    state = go9.state_from_moves(["J1", "J9"], state)  # a threat and an answer elsewhere
    assert legal(go9, state, "B7")
    assert rows(go9, go9.state_from_moves(["B7"], state))[2] == "XO.O....."


TRIPLE_KO = [
    ".XO...OX.",
    "XO.O.OX.X",
    ".XO...OX.",
    ".........",
    ".XO......",
    "XO.O.....",
    ".XO......",
    ".........",
    ".........",
]


def test_triple_ko_cycle_is_stopped_by_positional_superko(go9):
    """Three kos; each side takes one in turn. No move retakes the ko just taken, so
    simple ko allows all six, but the sixth recreates the starting position."""
    start = go9.from_board(TRIPLE_KO)
    state = go9.state_from_moves(["C8", "H8", "C4", "B8", "G8"], start)
    assert not legal(go9, state, "B4")
    # The same board without the history: B4 is an ordinary legal capture.
    assert legal(go9, go9.from_board(rows(go9, state), to_play=1), "B4")
    fresh = go9.from_board(rows(go9, state), to_play=1)
    masked = np.flatnonzero(np.asarray(fresh.legal_action_mask) & ~state.legal_action_mask)
    assert {action_to_gtp(a, 9) for a in masked} == {"B4", "H8"}  # H8: the simple ko
    with pytest.raises(ValueError, match="move 6 .* is illegal"):
        go9.state_from_moves(["C8", "H8", "C4", "B8", "G8", "B4"], start)
    # Stepping the illegal move anyway ends the game as a loss for White.
    lost = _jit_step(go9, state, gtp_to_action("B4", 9))
    assert bool(lost.terminated) and lost.rewards.tolist() == [1.0, -1.0]


SEKI = ["XXXXX.", "OOOOX.", ".X.OX.", "OOOOX.", "XXXXX.", "......"]


def test_seki_liberties_count_for_nobody(go6):
    state = go6.from_board(SEKI)
    assert legal(go6, state, "A4") and legal(go6, state, "C4")  # self-atari, not suicide
    assert [int(x) for x in score(state)] == [25, 9]  # A4 and C4 are shared, no one's
    end = go6.state_from_moves(["pass", "pass"], state)
    assert bool(end.terminated) and end.rewards.tolist() == [1.0, -1.0]


def test_seki_free_area_scoring(go9):
    position = ["..XO....."] * 9
    state = go9.from_board(position)
    assert [int(x) for x in score(state)] == [27, 54]
    position[4] = "..XO..X.."  # a Black stone inside White's area: that region is shared
    assert [int(x) for x in score(go9.from_board(position))] == [28, 9]


def test_komi_breaks_equal_areas_and_integer_komi_can_draw(go6):
    position = ["..XO.."] * 6  # 18 points each
    assert [int(x) for x in score(go6.from_board(position))] == [18, 18]
    end = go6.state_from_moves(["pass", "pass"], go6.from_board(position))
    assert bool(end.terminated) and end.rewards.tolist() == [-1.0, 1.0]  # komi 3.5
    even = Go(6, komi=0)
    end = even.state_from_moves(["pass", "pass"], even.from_board(position))
    assert bool(end.terminated) and end.rewards.tolist() == [0.0, 0.0]


def test_two_passes_end_the_game_one_does_not(go6):
    state = go6.state_from_moves(["C3", "pass"])
    assert not bool(state.terminated) and int(state.passes) == 1
    state = go6.state_from_moves(["D4", "pass"], state)  # a move resets the count
    assert not bool(state.terminated)
    state = go6.state_from_moves(["pass"], state)
    assert bool(state.terminated) and not bool(state.truncated)
    assert state.rewards.tolist() == [1.0, -1.0]  # Black's 36 points vs White's komi
    with pytest.raises(ValueError, match="after the end of the game"):
        go6.state_from_moves(["A1"], state)


def test_move_cap_truncates_with_zero_rewards(go6):
    rng = np.random.default_rng(0)
    state = go6.state_from_moves([])
    for _ in range(go6.max_steps):
        mask = np.asarray(state.legal_action_mask)
        moves = np.flatnonzero(mask[:-1])
        state = go6.state_from_moves([int(rng.choice(moves)) if len(moves) else 36], state)
    assert int(state.step_count) == go6.max_steps == 72
    assert bool(state.truncated) and not bool(state.terminated)
    assert state.rewards.tolist() == [0.0, 0.0] and bool(state.legal_action_mask.all())
    after = _jit_step(go6, state, 36)
    assert after.rewards.tolist() == [0.0, 0.0] and int(after.step_count) == 72


def test_observation_history_planes_from_each_side(go9):
    state = go9.state_from_moves(["E5", "D4"])
    obs = np.asarray(state.observation)
    assert obs.dtype == np.bool_ and obs.shape == (9, 9, 9)
    e5, d4 = (4, 4), (5, 3)
    assert obs[e5][0] and obs[d4][1] and obs[..., :2].sum() == 2  # now: mine, theirs
    assert obs[e5][2] and obs[..., 2:4].sum() == 1  # one position ago: only E5
    assert obs[..., 4:8].sum() == 0 and obs[..., 8].all()  # empty before; Black to move
    white = np.asarray(go9.observe(state, 1))
    np.testing.assert_array_equal(white[..., 0::2][..., :4], obs[..., 1::2][..., :4])
    assert not white[..., 8].any()
