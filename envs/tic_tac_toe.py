"""Tic-tac-toe: the correctness gate.

Actions 0..8 are cells, row-major from the top-left. Player 0 (X) moves first. The
observation is (3, 3, 2) bool: plane 0 the mover's marks, plane 1 the opponent's.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from envs import symmetry
from envs.core import Env, State, state_dataclass
from envs.pictures import Grid

Array = jax.Array

# The 8 lines of three, and for every set of cells (as 9 bits, bit i = cell i) whether it
# holds one: the win test is a single lookup, which XLA computes once per step (a
# chain of comparisons would be fused into, and repeated by, every output that reads it).
_LINES = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))
_HAS_LINE = np.array(
    [any(all(cells >> c & 1 for c in line) for line in _LINES) for cells in range(1 << 9)]
)  # bool [512]


@state_dataclass
class TicTacToeState(State):
    board: Array  # int32 [9]   -1 empty, else the player (0 or 1) who marked it


class TicTacToe(Env[TicTacToeState]):
    id = "tic_tac_toe"
    num_actions = 9
    observation_shape = (3, 3, 2)
    max_steps = 9
    symmetries = symmetry.dihedral(3)

    def _init(self, key: Array) -> TicTacToeState:
        del key
        board = jnp.full(9, -1, jnp.int32)
        player = jnp.int32(0)
        return TicTacToeState(
            current_player=player,
            observation=_observe(board, player),
            legal_action_mask=jnp.ones(9, jnp.bool_),
            rewards=jnp.zeros(2, jnp.float32),
            terminated=jnp.bool_(False),
            truncated=jnp.bool_(False),
            step_count=jnp.int32(0),
            board=board,
        )

    def _step(self, state: TicTacToeState, action: Array, key: Array) -> TicTacToeState:
        del key
        mover = state.current_player
        board = state.board.at[action].set(mover)  # int32 [9]
        mine = jnp.int32(0)  # the mover's cells as bits
        for cell in range(9):
            mine = mine | jnp.where(board[cell] == mover, 1 << cell, 0)
        won = jnp.asarray(_HAS_LINE)[mine]
        full = (board >= 0).all()
        rewards = jnp.where(won, jnp.where(jnp.arange(2) == mover, 1.0, -1.0), 0.0)
        nxt = 1 - mover
        return state.replace(
            current_player=nxt,
            observation=_observe(board, nxt),
            legal_action_mask=board < 0,
            rewards=rewards.astype(jnp.float32),
            terminated=won | full,
            board=board,
        )

    def _observe(self, state: TicTacToeState, player: Array) -> Array:
        return _observe(state.board, player)

    def action_to_text(self, action: int) -> str:
        return str(int(action) + 1)

    def text_to_action(self, text: str) -> int:
        """Cells are numbered 1-9, row-major from the top-left (like a phone keypad)."""
        text = text.strip()
        if not (text.isdigit() and 1 <= int(text) <= 9):
            raise ValueError(f"{text!r} is not a cell: type a number from 1 to 9")
        return int(text) - 1

    def grid(self, state: TicTacToeState) -> Grid:
        """X (player 0) and O marks in the 3 x 3 squares."""
        cells = np.stack(np.divmod(np.arange(9), 3), axis=1)  # action i: row i // 3, column i % 3
        board = np.asarray(state.board).reshape(3, 3) + 1
        return Grid(board, style="marks", action_cells=cells)

    def render(self, state: TicTacToeState) -> str:
        marks = {-1: ".", 0: "X", 1: "O"}
        board = np.asarray(state.board).reshape(3, 3)
        rows = [" ".join(marks[int(v)] for v in row) for row in board]
        return "\n".join(rows)


def _observe(board: Array, player: Array) -> Array:
    planes = jnp.stack([board == player, board == 1 - player], axis=-1)  # [9, 2]
    return planes.reshape(3, 3, 2)
