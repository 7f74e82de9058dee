"""Connect Four on the standard 6 x 7 board.

Rules: two players drop discs into the 7 columns; a disc falls to the lowest empty
cell of its column. Player 0 (X) moves first. The first player with four of their own
discs in a row (horizontally, vertically or diagonally) wins; a full board without a
line of four is a draw. A full column is illegal.

Actions 0..6 are the columns, left to right. The board is 6 rows x 7 columns with row 0
at the top (pgx's layout): cell ``7 * row + column``. The observation is (6, 7, 2) bool
from the mover's point of view: plane 0 the mover's discs, plane 1 the opponent's.

Speed (XLA on CPU): each player's discs are also kept as a 49-bit bitboard, column-major
with 7 bits a column (the 6 cells bottom-up and an always-empty guard bit), split into
two uint32 words. Four in a row is then the classic shift test: for a direction of
``d`` bits (1 vertical, 7 horizontal, 6 and 8 diagonal), ``m = b & (b >> d)`` and a line
exists iff ``m & (m >> 2d)`` is non-zero; the guard bits stop lines wrapping around
columns. That is a few dozen integer operations per step on per-game scalars, against
pgx's gather of all 69 lines. Column heights live in the state, so the landing cell
and the legal mask are one lookup each. Values that many outputs read end in a lookup
(the landing height) or a reduction (the win), which XLA computes once instead of
fusing a copy of the work into every output element.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from envs import symmetry
from envs.core import Env, State, state_dataclass
from envs.pictures import Grid

Array = jax.Array

ROWS, COLUMNS = 6, 7
NUM_CELLS = ROWS * COLUMNS
_EMPTY = -1
_GUARDED_COLUMN = ROWS + 1  # bits a column takes in a bitboard
_DIRECTIONS = (1, _GUARDED_COLUMN, _GUARDED_COLUMN - 1, _GUARDED_COLUMN + 1)


def _shift_right(lo: Array, hi: Array, bits: int) -> tuple[Array, Array]:
    """(hi:lo) >> bits for a 64-bit value held as two uint32 words, 0 < bits < 32."""
    return (lo >> bits) | (hi << (32 - bits)), hi >> bits


def _has_four(bitboard: Array) -> Array:
    """Whether a bitboard (uint32 [2]: low word, high word) holds four in a row."""
    lo, hi = bitboard[0], bitboard[1]
    lines = []
    for d in _DIRECTIONS:
        pair_lo, pair_hi = _shift_right(lo, hi, d)
        pair_lo, pair_hi = lo & pair_lo, hi & pair_hi  # bits that start two in a row
        quad_lo, quad_hi = _shift_right(pair_lo, pair_hi, 2 * d)
        lines.append((pair_lo & quad_lo) | (pair_hi & quad_hi))  # starts of four in a row
    return (jnp.stack(lines) != 0).any()


@state_dataclass
class ConnectFourState(State):
    board: Array  # int32 [42]    -1 empty, else the player (0 or 1) whose disc it is
    heights: Array  # int32 [7]     discs in each column
    bitboards: Array  # uint32 [2, 2] per player: (low, high) words of the 49-bit bitboard


class ConnectFour(Env[ConnectFourState]):
    id = "connect_four"
    num_actions = COLUMNS
    observation_shape = (ROWS, COLUMNS, 2)
    max_steps = NUM_CELLS
    symmetries = symmetry.left_right(ROWS, COLUMNS)

    def _init(self, key: Array) -> ConnectFourState:
        del key
        board = jnp.full(NUM_CELLS, _EMPTY, jnp.int32)
        player = jnp.int32(0)
        return ConnectFourState(
            current_player=player,
            observation=_observe(board, player),
            legal_action_mask=jnp.ones(COLUMNS, jnp.bool_),
            rewards=jnp.zeros(2, jnp.float32),
            terminated=jnp.bool_(False),
            truncated=jnp.bool_(False),
            step_count=jnp.int32(0),
            board=board,
            heights=jnp.zeros(COLUMNS, jnp.int32),
            bitboards=jnp.zeros((2, 2), jnp.uint32),
        )

    def _step(self, state: ConnectFourState, action: Array, key: Array) -> ConnectFourState:
        del key
        mover = state.current_player
        column = jnp.arange(COLUMNS) == action  # bool [7]
        height = state.heights[action]  # int32 [] discs already in the column
        cell = (ROWS - 1 - height) * COLUMNS + action  # the disc lands on the lowest empty row
        board = jnp.where(jnp.arange(NUM_CELLS) == cell, mover, state.board)  # int32 [42]
        heights = state.heights + column  # int32 [7]

        bit = (action * _GUARDED_COLUMN + height).astype(jnp.uint32)  # 0..47
        disc = jnp.where(jnp.arange(2) == bit // 32, jnp.uint32(1) << (bit % 32), 0)  # [2]
        mine = jnp.where(mover == 0, state.bitboards[0], state.bitboards[1]) | disc  # [2]
        bitboards = jnp.where((jnp.arange(2) == mover)[:, None], mine, state.bitboards)
        won = _has_four(mine)

        legal = heights < ROWS  # bool [7]
        rewards = jnp.where(won, jnp.where(jnp.arange(2) == mover, 1.0, -1.0), 0.0)
        nxt = 1 - mover
        return state.replace(
            current_player=nxt,
            observation=_observe(board, nxt),
            legal_action_mask=legal,
            rewards=rewards.astype(jnp.float32),
            terminated=won | (state.step_count == NUM_CELLS - 1),  # this disc fills the board
            board=board,
            heights=heights,
            bitboards=bitboards,
        )

    def _observe(self, state: ConnectFourState, player: Array) -> Array:
        return _observe(state.board, player)

    def action_to_text(self, action: int) -> str:
        return str(int(action) + 1)

    def text_to_action(self, text: str) -> int:
        """Columns are numbered 1-7 from the left, as printed under the board."""
        text = text.strip()
        if not (text.isdigit() and 1 <= int(text) <= COLUMNS):
            raise ValueError(f"{text!r} is not a column: type a number from 1 to {COLUMNS}")
        return int(text) - 1

    def grid(self, state: ConnectFourState) -> Grid:
        """Player 0's red and player 1's yellow discs, top row first, columns numbered."""
        cells = np.asarray(state.board).reshape(ROWS, COLUMNS) + 1
        empty = (cells == 0).sum(axis=0)  # [COLUMNS]: a column's disc lands on row empty - 1
        lands = np.stack([empty - 1, np.arange(COLUMNS)], axis=1)
        lands[empty == 0] = -1  # a full column
        labels = [str(c + 1) for c in range(COLUMNS)]
        return Grid(cells, style="discs", column_labels=labels, action_cells=lands)

    def render(self, state: ConnectFourState) -> str:
        """The board, top row first, X for player 0 and O for player 1, columns numbered."""
        marks = {_EMPTY: ".", 0: "X", 1: "O"}
        board = np.asarray(state.board).reshape(ROWS, COLUMNS)
        rows = [" ".join(marks[int(v)] for v in row) for row in board]
        rows.append(" ".join(str(c + 1) for c in range(COLUMNS)))
        return "\n".join(rows)


def _observe(board: Array, player: Array) -> Array:
    planes = jnp.stack([board == player, board == 1 - player], axis=-1)  # bool [42, 2]
    return planes.reshape(ROWS, COLUMNS, 2)
