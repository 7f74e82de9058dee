"""Exact solvers: Connect Four against published scores and brute force; tic-tac-toe facts."""

import functools

import numpy as np
import pytest

from jaxzero.games.connect_four import solver as c4
from jaxzero.games.tic_tac_toe import solver as ttt


@pytest.fixture(scope="module")
def solver():
    return c4.Solver()


def cols(text: str) -> list[int]:
    """Pons' notation: the columns played, numbered 1-7."""
    return [int(ch) - 1 for ch in text]


# Positions with their published scores (Pascal Pons' benchmark sets: end, middle and
# beginning of the game), in the same convention as the solver.
KNOWN = [
    ("2252576253462244111563365343671351441", -1),
    ("74425337641465475671176741236615215533", 0),
    ("23163416124767223154467471272416755633", 0),
    ("43745416472735", -13),
    ("427631264721", 10),
    ("265756512", -12),
    ("243335424257", 12),
    ("4737", 18),
    ("335662333565", -2),
    ("157564142155", -5),
]


@pytest.mark.parametrize("moves, score", KNOWN)
def test_published_scores(solver, moves, score):
    assert solver.solve(cols(moves)) == score
    assert solver.solve(cols(moves), weak=True) == np.sign(score)


def test_move_scores_agree_with_the_position_score(solver):
    for moves, score in KNOWN:
        if len(moves) < 9:
            continue  # the other moves of "4737" take seconds to solve
        scores = solver.move_scores(cols(moves))
        assert scores.max() == score
        position, mask, _ = c4._bitboards(cols(moves))
        for c in range(c4.WIDTH):
            assert (scores[c] == c4.ILLEGAL) == bool(mask & int(c4._TOP[c]))


def brute_force(columns: list[int]) -> np.ndarray:
    """Scores of every column by plain memoised negamax on a list-of-lists board."""
    board = [[] for _ in range(c4.WIDTH)]  # each column, bottom first
    for ply, c in enumerate(columns):
        board[c].append(ply % 2)

    def four(b, c, r, p):
        def at(cc, rr):
            return 0 <= cc < 7 and 0 <= rr < len(b[cc]) and b[cc][rr] == p

        for dc, dr in ((1, 0), (0, 1), (1, 1), (1, -1)):
            run = 1
            for sign in (1, -1):
                k = 1
                while at(c + sign * k * dc, r + sign * k * dr):
                    run += 1
                    k += 1
            if run >= 4:
                return True
        return False

    @functools.cache
    def value(key):
        b = [list(col) for col in key]
        n = sum(len(col) for col in b)
        return max(move_score(b, c, n) for c in range(7) if len(b[c]) < 6)

    def move_score(b, c, n):
        p = n % 2
        b[c].append(p)
        try:
            if four(b, c, len(b[c]) - 1, p):
                return (43 - n) // 2
            if n + 1 == 42:
                return 0
            return -value(tuple(tuple(col) for col in b))
        finally:
            b[c].pop()

    n = len(columns)
    return np.array(
        [move_score(board, c, n) if len(board[c]) < 6 else c4.ILLEGAL for c in range(7)]
    )


def random_late_position(rng, empties):
    """A live position with ``empties`` empty cells from a random game, or None."""
    while True:
        columns, position, mask = [], 0, 0
        for _ in range(42 - empties):
            playable = c4._playable(mask)
            legal = [c for c in range(7) if playable & int(c4._COLUMN[c])]
            c = int(rng.choice(legal))
            move = playable & int(c4._COLUMN[c])
            if c4._winning_cells(position, mask) & move:
                break
            position, mask = position ^ mask, mask | move
            columns.append(c)
        else:
            return columns


def test_agrees_with_brute_force_near_the_end(solver):
    rng = np.random.default_rng(0)
    for empties in [2, 3, 5, 7, 9, 9, 10, 10, 11, 11]:
        columns = random_late_position(rng, empties)
        np.testing.assert_array_equal(solver.move_scores(columns), brute_force(columns))


def test_node_budget_gives_up_and_leaves_the_table_sound(solver):
    assert solver.move_scores(cols("44"), max_nodes=10_000) is None
    assert solver.nodes > 10_000
    assert solver.solve(cols("427631264721")) == 10


def test_invalid_sequences_are_rejected(solver):
    with pytest.raises(ValueError, match="illegal"):
        solver.solve(cols("1111111"))
    with pytest.raises(ValueError, match="over"):
        solver.solve(cols("12121212"))


def test_bitboards_from_an_env_board_match_the_move_sequence():
    columns = cols("4455661")  # 7 discs: O to move
    board = np.full((6, 7), -1)
    heights = [0] * 7
    for ply, c in enumerate(columns):
        board[5 - heights[c], c] = ply % 2
        heights[c] += 1
    assert c4.bitboards_from_board(board, 1) == c4._bitboards(columns)


def test_tic_tac_toe_table_facts():
    table = ttt.solve()
    assert table.decision.sum() == 4520 and table.reachable.sum() == 5478
    empty = ttt.board_index(np.full(9, -1))
    np.testing.assert_array_equal(table.move_results[empty], np.zeros(9))  # all draw
    # After X takes a corner, O's only drawing reply is the centre.
    corner = np.full(9, -1)
    corner[0] = 0
    results = table.move_results[ttt.board_index(corner)]
    assert results[4] == 0 and (np.delete(results, [0, 4]) == -1).all()
    # After X takes the centre, corners draw and edges lose for O.
    centre = np.full(9, -1)
    centre[4] = 0
    results = table.move_results[ttt.board_index(centre)]
    assert (results[[0, 2, 6, 8]] == 0).all() and (results[[1, 3, 5, 7]] == -1).all()
    # X with two in a row and the move: wins now, with the 5th mark (score 10 - 5).
    board = np.array([0, 0, -1, 1, 1, -1, -1, -1, -1])
    assert table.move_scores[ttt.board_index(board), 2] == 5
