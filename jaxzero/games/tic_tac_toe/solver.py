"""Exact tic-tac-toe: the value of every move in every reachable position.

A board is 9 cells, row-major from the top-left, each -1 (empty), 0 (X, who moves first)
or 1 (O) as in ``envs.tic_tac_toe``. Its index is the base-3 number whose digit ``i`` is
``board[i] + 1``: ``index = sum((board[i] + 1) * 3**i)``, so every board of ``3**9 = 19683``
has a slot and a jitted policy looks its position up with one dot product.

Scores are from the mover's point of view and count the distance: a win completed with
the ``n``-th mark on the board scores ``10 - n``, a draw 0, a loss minus the opponent's win
score. The result (win 1, draw 0, loss -1) is the sign of the score.

There are 5,478 reachable positions, 4,520 of them decisions (the game is not over).
Computed once per process in about 0.1 s.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import numpy.typing as npt

NUM_BOARDS = 3**9
ILLEGAL = np.int8(-100)  # move entry of an occupied cell, or of any cell once the game is over
POWERS = 3 ** np.arange(9, dtype=np.int32)  # int32 [9]
_LINES = [(0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6)]


@dataclasses.dataclass(frozen=True)
class Table:
    """Exact values, indexed by :func:`board_index`."""

    move_scores: np.ndarray  # int8 [19683, 9]  mover's score after each move (ILLEGAL if none)
    reachable: np.ndarray  # bool [19683]
    decision: np.ndarray  # bool [19683]     reachable and not over
    # The decision positions, in increasing index, each with one move sequence reaching it.
    decision_moves: np.ndarray  # int8 [4520, 8]  cells in play order, -1 padded
    decision_lengths: np.ndarray  # int32 [4520]

    @property
    def move_results(self) -> np.ndarray:
        """int8 [19683, 9]: win 1 / draw 0 / loss -1 for the mover after each move."""
        s = self.move_scores
        return np.where(s == ILLEGAL, ILLEGAL, np.sign(s)).astype(np.int8)


def board_index(board: npt.ArrayLike) -> np.ndarray:
    """The table index of ``board`` (int [..., 9] with -1/0/1 cells)."""
    return ((np.asarray(board) + 1) * POWERS).sum(-1)


def _won(board: tuple[int, ...], player: int) -> bool:
    return any(all(board[i] == player for i in line) for line in _LINES)


@functools.cache
def solve() -> Table:
    """Solve tic-tac-toe exhaustively (memoised negamax over the reachable positions)."""
    move_scores = np.full((NUM_BOARDS, 9), ILLEGAL, np.int8)
    reachable = np.zeros(NUM_BOARDS, bool)
    decision = np.zeros(NUM_BOARDS, bool)
    paths: dict[int, tuple[int, ...]] = {}
    memo: dict[tuple[int, ...], int] = {}

    def value(board: tuple[int, ...], path: tuple[int, ...]) -> int:
        """Score of a live position for its mover; records every position on the way."""
        if board in memo:
            return memo[board]
        index = int(board_index(board))
        reachable[index] = decision[index] = True
        paths[index] = path
        marks = 9 - board.count(-1)
        mover = marks % 2
        for cell in range(9):
            if board[cell] != -1:
                continue
            child = board[:cell] + (mover,) + board[cell + 1 :]
            if _won(child, mover):
                score = 10 - (marks + 1)
                reachable[int(board_index(child))] = True
            elif marks + 1 == 9:
                score = 0
                reachable[int(board_index(child))] = True
            else:
                score = -value(child, path + (cell,))
            move_scores[index, cell] = score
        memo[board] = best = int(move_scores[index][move_scores[index] != ILLEGAL].max())
        return best

    value((-1,) * 9, ())
    order = np.flatnonzero(decision)
    moves = np.full((len(order), 8), -1, np.int8)
    lengths = np.zeros(len(order), np.int32)
    for row, index in enumerate(order):
        path = paths[int(index)]
        moves[row, : len(path)] = path
        lengths[row] = len(path)
    return Table(move_scores, reachable, decision, moves, lengths)
