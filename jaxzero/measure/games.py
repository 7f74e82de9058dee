"""Solved positions: the position sets that games' kits (:mod:`jaxzero.core.games`) load.

    solved_games()                 # ["tic_tac_toe", "connect_four"]
    position_set("connect_four")   # its PositionSet

A game has a solved set when its kit names a loader (``GameKit.positions``): tic-tac-toe's
from its exhaustive solver, Connect Four's shipped file (:mod:`jaxzero.games`).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from jaxzero.core.games import game_kit, game_kits


@dataclasses.dataclass(frozen=True)
class PositionSet:
    """Solved positions of one game, each reached by a move sequence from the start."""

    moves: np.ndarray  # int [N, L]  actions from the initial state, -1 padded
    lengths: np.ndarray  # int32 [N]
    scores: np.ndarray  # int8 [N, A]  mover's score after each action (sign = result)
    legal: np.ndarray  # bool [N, A]

    @property
    def results(self) -> np.ndarray:
        """int8 [N, A]: win 1 / draw 0 / loss -1 after each legal action (-2 if illegal)."""
        return np.where(self.legal, np.sign(self.scores), -2).astype(np.int8)


def solved_games() -> list[str]:
    """The env ids that have a solved position set."""
    return [game for game, kit in game_kits().items() if kit.positions is not None]


def position_set(game: str) -> PositionSet:
    """The solved positions of ``game``; ValueError naming the games that have one."""
    load = game_kit(game).positions
    if load is None:
        raise ValueError(f"no solved positions for {game!r}; choose {' or '.join(solved_games())}")
    positions: PositionSet = load()
    return positions
