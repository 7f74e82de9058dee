"""Connect Four on the standard 6 x 7 board.

Rules: two players drop discs into the 7 columns; a disc falls to the lowest empty
cell of its column. Player 0 (X) moves first. The first player with four of their own
discs in a row (horizontally, vertically or diagonally) wins; a full board without a
line of four is a draw. A full column is illegal.

Actions 0..6 are the columns, left to right. The board is 6 rows x 7 columns with row 0
at the top (pgx's layout): cell ``7 * row + column``. The observation is (6, 7, 2) bool
from the mover's point of view: plane 0 the mover's discs, plane 1 the opponent's.

Speed: a new disc can only complete lines through its own cell, so a step reads the
7-cell segment through that cell in each of the 4 directions (precomputed tables) and
never scans the whole board; column heights live in the state so the landing cell and
the legal mask are one lookup each.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from envs import symmetry
from envs.core import Env, State, state_dataclass

Array = jax.Array

ROWS, COLUMNS = 6, 7
NUM_CELLS = ROWS * COLUMNS
_EMPTY = -1
_OFF_BOARD = NUM_CELLS  # index of a padding cell that is never anyone's disc


def _segments() -> np.ndarray:
    """int32 [42, 4, 7]: for each cell and direction, the cells at offsets -3..3 from it.

    Directions: horizontal, vertical, diagonal down-right, diagonal down-left. Offsets
    that leave the board read the padding cell. Any four consecutive entries of a segment
    that are all the mover's discs form a line of four through the cell.
    """
    table = np.full((NUM_CELLS, 4, 7), _OFF_BOARD, dtype=np.int32)
    for row in range(ROWS):
        for col in range(COLUMNS):
            for d, (dr, dc) in enumerate([(0, 1), (1, 0), (1, 1), (1, -1)]):
                for k in range(-3, 4):
                    r, c = row + k * dr, col + k * dc
                    if 0 <= r < ROWS and 0 <= c < COLUMNS:
                        table[row * COLUMNS + col, d, k + 3] = r * COLUMNS + c
    return table


_SEGMENTS = _segments()


@state_dataclass
class ConnectFourState(State):
    board: Array  # int32 [42]  -1 empty, else the player (0 or 1) whose disc it is
    heights: Array  # int32 [7]   discs in each column


class ConnectFour(Env):
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
        )

    def _step(self, state: ConnectFourState, action: Array, key: Array) -> ConnectFourState:
        del key
        mover = state.current_player
        column = jnp.arange(COLUMNS) == action  # bool [7]
        height = jnp.where(column, state.heights, 0).sum()  # int32 []
        cell = (ROWS - 1 - height) * COLUMNS + action  # the disc lands on the lowest empty row
        board = jnp.where(jnp.arange(NUM_CELLS) == cell, mover, state.board)  # int32 [42]
        heights = state.heights + column  # int32 [7]

        mine = jnp.append(board == mover, False)  # bool [43], the last is the padding cell
        segments = mine[jnp.asarray(_SEGMENTS)[cell]]  # bool [4, 7]
        fours = segments[:, 0:4] & segments[:, 1:5] & segments[:, 2:6] & segments[:, 3:7]
        won = fours.any()
        legal = heights < ROWS  # bool [7]
        rewards = jnp.where(won, jnp.where(jnp.arange(2) == mover, 1.0, -1.0), 0.0)
        nxt = 1 - mover
        return state.replace(
            current_player=nxt,
            observation=_observe(board, nxt),
            legal_action_mask=legal,
            rewards=rewards.astype(jnp.float32),
            terminated=won | ~legal.any(),
            board=board,
            heights=heights,
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
