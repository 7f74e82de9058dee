"""A strong Connect Four solver: negamax over bitboards, compiled with numba.

Positions are given as the columns played from the empty board (0..6, left to right).

Scores follow the usual convention for 7x6 Connect Four (Pascal Pons' solver uses the same):
from the point of view of the player to move, a position is worth

* ``(43 - n) // 2`` if the mover wins with their stone played when ``n`` stones are on the
  board (the sooner the win, the larger the score; an immediate win at ``n`` stones scores
  ``(43 - n) // 2``),
* ``0`` for a draw,
* minus the opponent's win score if the mover loses.

So the sign is the game-theoretic result and the magnitude counts the distance: ``+1`` is a
win with the mover's last stone (the 41st or 42nd), ``18`` a win at the mover's 4th stone.

The search: bitboards (a 7-bit column, one guard bit above the 6 cells), alpha-beta negamax
that only looks at moves which do not hand the opponent an immediate win, moves ordered
by the number of threats they create (centre first on ties), a transposition table of
lower and upper bounds, and an iterative null-window search on the score. A node budget
lets callers give up on positions that are too deep to solve in the time they have.
"""

from __future__ import annotations

from collections.abc import Sequence

import numba
import numpy as np

WIDTH = 7
HEIGHT = 6
CELLS = WIDTH * HEIGHT
ILLEGAL = np.int8(-100)  # score entry of a full column in move_scores

_H1 = HEIGHT + 1
_BOTTOM = sum(1 << (c * _H1) for c in range(WIDTH))
_BOARD = _BOTTOM * ((1 << HEIGHT) - 1)
_COLUMN = np.array([((1 << HEIGHT) - 1) << (c * _H1) for c in range(WIDTH)], np.int64)
_TOP = np.array([1 << (HEIGHT - 1 + c * _H1) for c in range(WIDTH)], np.int64)
_ORDER = np.array([3, 2, 4, 1, 5, 0, 6], np.int64)  # centre first
_TT_SIZE = 4_194_301  # a prime, about 4M entries: 38 MB


@numba.njit(cache=True)
def _popcount(x):
    n = 0
    while x:
        x &= x - 1
        n += 1
    return n


@numba.njit(cache=True)
def _half(x):
    """x / 2 rounded towards zero."""
    return x // 2 if x >= 0 else -((-x) // 2)


@numba.njit(cache=True)
def _winning_cells(position, mask):
    """Empty cells that would complete four for the owner of ``position``."""
    r = (position << 1) & (position << 2) & (position << 3)  # vertical
    for d in (_H1, _H1 - 1, _H1 + 1):  # horizontal and both diagonals
        p = (position << d) & (position << (2 * d))
        r |= p & (position << (3 * d))
        r |= p & (position >> d)
        p = (position >> d) & (position >> (2 * d))
        r |= p & (position << d)
        r |= p & (position >> (3 * d))
    return r & (_BOARD ^ mask)


@numba.njit(cache=True)
def _has_four(stones):
    for d in (1, _H1, _H1 - 1, _H1 + 1):
        pairs = stones & (stones >> d)
        if pairs & (pairs >> (2 * d)):
            return True
    return False


def is_over(stones: int, mask: int) -> bool:
    """Whether ``stones`` (one player's bitboard) hold four in a row, or the board is full."""
    return bool(_has_four(stones)) or _popcount(mask) == CELLS


@numba.njit(cache=True)
def _playable(mask):
    return (mask + _BOTTOM) & _BOARD


@numba.njit(cache=True)
def _can_win_next(position, mask):
    return (_winning_cells(position, mask) & _playable(mask)) != 0


@numba.njit(cache=True)
def _safe_moves(position, mask):
    """Playable cells after which the opponent cannot win at once (0: every move loses)."""
    playable = _playable(mask)
    threats = _winning_cells(position ^ mask, mask)
    forced = playable & threats
    if forced:
        if forced & (forced - 1):
            return 0  # two threats to block: lost
        playable = forced
    return playable & ~(threats >> 1)  # never play just below an opponent threat


@numba.njit(cache=True)
def _order_moves(position, mask, safe, row):
    """Write the safe moves into ``row`` ordered by the threats they create, centre
    columns first on ties (``(value << 48) | move``); returns how many there are."""
    count = 0
    for i in range(WIDTH):
        move = safe & _COLUMN[_ORDER[i]]
        if move:
            value = _popcount(_winning_cells(position | move, mask)) * 16 + (WIDTH - i)
            j = count
            while j > 0 and row[j - 1] >> 48 < value:
                row[j] = row[j - 1]
                j -= 1
            row[j] = (value << 48) | move  # moves are below bit 48
            count += 1
    return count


@numba.njit(cache=True)
def _negamax(position, mask, moves, alpha, beta, tt_keys, tt_bounds, order, counter):
    """Score of a position whose mover has no immediate win, clipped to [alpha, beta].

    Fail-soft: a result <= alpha is an upper bound, >= beta a lower bound. ``counter`` is
    ``[nodes, budget]``; past the budget the search unwinds with meaningless values.
    """
    counter[0] += 1
    if counter[0] > counter[1]:
        return 0
    safe = _safe_moves(position, mask)
    if safe == 0:
        return -((CELLS - moves) // 2)
    if moves >= CELLS - 2:
        return 0
    low = -((CELLS - 2 - moves) // 2)  # the opponent cannot win with their next stone
    high = (CELLS - 1 - moves) // 2  # we cannot win with this stone
    key = position + mask  # unique: each column's value stays below its guard bit
    slot = key % _TT_SIZE
    if tt_keys[slot] == key:
        low = max(low, tt_bounds[slot, 0])
        high = min(high, tt_bounds[slot, 1])
    if alpha < low:
        alpha = low
        if alpha >= beta:
            return alpha
    if beta > high:
        beta = high
        if alpha >= beta:
            return beta

    count = _order_moves(position, mask, safe, order[moves])

    start_alpha = alpha
    for i in range(count):
        move = order[moves, i] & ((1 << 48) - 1)
        score = -_negamax(
            position ^ mask,
            mask | move,
            moves + 1,
            -beta,
            -alpha,
            tt_keys,
            tt_bounds,
            order,
            counter,
        )
        if counter[0] > counter[1]:
            return 0  # out of budget: store nothing, the values are meaningless
        if score >= beta:
            _store(tt_keys, tt_bounds, slot, key, score, 127)
            return score
        if score > alpha:
            alpha = score
    if alpha > start_alpha:
        _store(tt_keys, tt_bounds, slot, key, alpha, alpha)  # exact
    else:
        _store(tt_keys, tt_bounds, slot, key, -127, alpha)
    return alpha


@numba.njit(cache=True)
def _store(tt_keys, tt_bounds, slot, key, low, high):
    if tt_keys[slot] != key:
        tt_keys[slot] = key
        tt_bounds[slot, 0] = -127
        tt_bounds[slot, 1] = 127
    tt_bounds[slot, 0] = max(tt_bounds[slot, 0], low)
    tt_bounds[slot, 1] = min(tt_bounds[slot, 1], high)


@numba.njit(cache=True)
def _solve(position, mask, moves, weak, tt_keys, tt_bounds, order, counter):
    """The exact score (``weak``: only its sign) of a live position, by null-window search."""
    if _can_win_next(position, mask):
        return (CELLS + 1 - moves) // 2
    low = -((CELLS - moves) // 2)
    high = (CELLS + 1 - moves) // 2
    if weak:
        low, high = -1, 1
    while low < high:
        probe = low + (high - low) // 2
        if probe <= 0 and _half(low) < probe:
            probe = _half(low)
        elif probe >= 0 and _half(high) > probe:
            probe = _half(high)
        r = _negamax(position, mask, moves, probe, probe + 1, tt_keys, tt_bounds, order, counter)
        if counter[0] > counter[1]:
            return 0
        if r <= probe:
            high = r
        else:
            low = r
    return low


@numba.njit(cache=True)
def _move_scores(position, mask, moves, weak, tt_keys, tt_bounds, order, counter, out):
    """Fill ``out[c]`` with the score, for the mover, of playing column ``c``."""
    winning = _winning_cells(position, mask)
    for c in range(WIDTH):
        if mask & _TOP[c]:
            out[c] = ILLEGAL
            continue
        move = (mask + (np.int64(1) << (c * _H1))) & _COLUMN[c]
        if winning & move:
            out[c] = (CELLS + 1 - moves) // 2
        elif moves + 1 == CELLS:
            out[c] = 0
        else:
            child = _solve(
                position ^ mask, mask | move, moves + 1, weak, tt_keys, tt_bounds, order, counter
            )
            out[c] = -child
        if counter[0] > counter[1]:
            return False
    return True


def _bitboards(columns: Sequence[int]) -> tuple[int, int, int]:
    """(mover's stones, all stones, stone count) after playing ``columns``; raises if invalid."""
    heights = [0] * WIDTH
    stones = [0, 0]
    for ply, c in enumerate(columns):
        c = int(c)
        if not 0 <= c < WIDTH or heights[c] == HEIGHT:
            raise ValueError(f"illegal move {c} at ply {ply} in {list(columns)}")
        bit = 1 << (c * _H1 + heights[c])
        if _winning_cells(stones[ply % 2], stones[0] | stones[1]) & bit:
            raise ValueError(f"the game is already over after ply {ply} of {list(columns)}")
        stones[ply % 2] |= bit
        heights[c] += 1
    n = len(columns)
    return stones[n % 2], stones[0] | stones[1], n


def bitboards_from_board(board: np.ndarray, mover: int) -> tuple[int, int, int]:
    """Bitboards of a ``[6, 7]`` board (row 0 the top; -1 empty, else the player 0/1)."""
    board = np.asarray(board)
    position = mask = 0
    for c in range(WIDTH):
        for r in range(HEIGHT):
            v = int(board[HEIGHT - 1 - r, c])
            if v >= 0:
                bit = 1 << (c * _H1 + r)
                mask |= bit
                if v == mover:
                    position |= bit
    return position, mask, _popcount(mask)


class Solver:
    """A Connect Four solver with its transposition table (reused across positions)."""

    def __init__(self) -> None:
        self._tt_keys = np.full(_TT_SIZE, -1, np.int64)
        self._tt_bounds = np.zeros((_TT_SIZE, 2), np.int8)
        self._order = np.zeros((CELLS + 1, WIDTH), np.int64)
        self._counter = np.zeros(2, np.int64)
        self.nodes = 0  # nodes searched by the last call

    def reset(self) -> None:
        """Forget the transposition table."""
        self._tt_keys[:] = -1

    def _budget(self, max_nodes: int | None) -> None:
        self._counter[0] = 0
        self._counter[1] = np.iinfo(np.int64).max if max_nodes is None else max_nodes

    def _done(self) -> bool:
        self.nodes = int(self._counter[0])
        return self._counter[0] <= self._counter[1]

    def solve(
        self, columns: Sequence[int], *, weak: bool = False, max_nodes: int | None = None
    ) -> int | None:
        """Score of the position after ``columns`` for its mover (``weak``: -1, 0 or 1).

        None when the search needed more than ``max_nodes`` nodes. The position must be a
        live game (no four yet, not full).
        """
        position, mask, n = _bitboards(columns)
        if n == CELLS:
            raise ValueError("the board is full")
        self._budget(max_nodes)
        score = _solve(
            position, mask, n, weak, self._tt_keys, self._tt_bounds, self._order, self._counter
        )
        if not self._done():
            return None
        return int(np.sign(score)) if weak else int(score)

    def move_scores(
        self, columns: Sequence[int], *, weak: bool = False, max_nodes: int | None = None
    ) -> np.ndarray | None:
        """int8 [7]: for each column, the mover's score after playing it (ILLEGAL if full).

        None when the search needed more than ``max_nodes`` nodes in all.
        """
        return self.move_scores_bitboards(*_bitboards(columns), weak=weak, max_nodes=max_nodes)

    def move_scores_bitboards(
        self,
        position: int,
        mask: int,
        moves: int,
        *,
        weak: bool = False,
        max_nodes: int | None = None,
    ) -> np.ndarray | None:
        """:meth:`move_scores` for a position given as bitboards (see bitboards_from_board)."""
        out = np.zeros(WIDTH, np.int8)
        self._budget(max_nodes)
        ok = _move_scores(
            position,
            mask,
            moves,
            weak,
            self._tt_keys,
            self._tt_bounds,
            self._order,
            self._counter,
            out,
        )
        if not (ok and self._done()):
            self.nodes = int(self._counter[0])
            return None
        if weak:
            out = np.where(out == ILLEGAL, ILLEGAL, np.sign(out)).astype(np.int8)
        return out


def score_to_result(scores: np.ndarray) -> np.ndarray:
    """Win (1), draw (0) or loss (-1) of each score; ILLEGAL entries stay ILLEGAL."""
    scores = np.asarray(scores)
    return np.where(scores == ILLEGAL, ILLEGAL, np.sign(scores)).astype(np.int8)
