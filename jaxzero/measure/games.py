"""What each game brings to measurement beyond its rules, found in one registry.

    extras = game_extras("connect_four")
    extras.positions()        # its solved position set (PositionSet), or None
    extras.perfect            # the opponent name of its perfect player, or None
    extras.heuristic          # the opponent name of its own heuristic player, or None
    extras.preset             # the name of its preset (jaxzero.core.presets), or None
    extras.opening_plies      # random plies that vary a study's openings
    extras.score_summary      # single-player games: a line about a SoloResult, or None

The registry is keyed by env id; a game without an entry gets :class:`GameExtras`'s
defaults (no solved set, no perfect or heuristic player, 2 opening plies). Adding a game's
extras means adding one entry here, not a branch anywhere else: the opponents "perfect"
and "greedy" (:mod:`jaxzero.measure.opponents`) play the players its entry names.

An entry names its players and its preset, registered elsewhere, rather than holding
them: the players are opponents (registered by name, as ``jaxzero.register_opponent``
adds them), and the presets live in :mod:`jaxzero.core.presets`, below this package.
"""

from __future__ import annotations

import dataclasses
import importlib.resources
from collections.abc import Callable

import numpy as np

from envs.pgx import MINATAR

CONNECT_FOUR_POSITIONS = "connect_four_positions.npz"


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


def _tic_tac_toe_positions() -> PositionSet:
    """All 4,520 decision states of tic-tac-toe, from the exhaustive solver."""
    from jaxzero.measure.solvers import tic_tac_toe

    table = tic_tac_toe.solve()
    index = np.flatnonzero(table.decision)
    scores = table.move_scores[index]
    legal = scores != tic_tac_toe.ILLEGAL
    return PositionSet(table.decision_moves, table.decision_lengths, scores, legal)


def _connect_four_positions() -> PositionSet:
    """The shipped solver-labelled set (tools/make_connect_four_positions.py)."""
    from jaxzero.measure.solvers.connect_four import ILLEGAL

    path = importlib.resources.files("jaxzero") / "data" / CONNECT_FOUR_POSITIONS
    with path.open("rb") as f, np.load(f) as data:
        scores = data["scores"]
        return PositionSet(data["moves"], data["lengths"], scores, scores != ILLEGAL)


@dataclasses.dataclass(frozen=True)
class GameExtras:
    positions: Callable[[], PositionSet] | None = None  # loads the solved position set
    perfect: str | None = None  # opponent name of the game's perfect player
    heuristic: str | None = None  # opponent name of the game's own heuristic player
    preset: str | None = None  # the name of the game's preset in jaxzero.core.presets
    opening_plies: int = 2  # uniformly random plies before a study's matches
    score_summary: Callable[[object], str] | None = None  # SoloResult -> one line


def _largest_tiles(result) -> str:
    """2048: how often each largest tile was reached, from the final observations (plane
    k set: the tile 2^k), e.g. "largest tile 256: 12%, 512: 61%, 1024: 27%"."""
    exponents = np.asarray(result.final.observation).argmax(-1).reshape(result.games, -1)
    tiles, counts = np.unique(2 ** exponents.max(-1), return_counts=True)
    shares = ", ".join(f"{t}: {c / result.games:.0%}" for t, c in zip(tiles, counts, strict=True))
    return f"largest tile {shares}"


EXTRAS: dict[str, GameExtras] = {
    "tic_tac_toe": GameExtras(
        _tic_tac_toe_positions, "tic_tac_toe_minimax", preset="tic_tac_toe", opening_plies=1
    ),
    "connect_four": GameExtras(
        _connect_four_positions, "connect_four_solver", preset="connect_four", opening_plies=2
    ),
    "go_6x6": GameExtras(preset="go_6x6", opening_plies=4),
    "go_9x9": GameExtras(preset="go_9x9", opening_plies=6),
    "star_duel": GameExtras(heuristic="star_duel_greedy"),
    "star_duel_short": GameExtras(heuristic="star_duel_greedy", preset="star_duel_short"),
    "pgx/othello": GameExtras(heuristic="othello_greedy", preset="pgx/othello"),
    "pgx/hex": GameExtras(preset="pgx/hex"),
    "pgx/animal_shogi": GameExtras(preset="pgx/animal_shogi"),
    "pgx/backgammon": GameExtras(preset="pgx/backgammon"),
    "pgx/2048": GameExtras(
        heuristic="largest_reward", preset="pgx/2048", score_summary=_largest_tiles
    ),
    **{f"pgx/minatar-{game}": GameExtras(preset=f"pgx/minatar-{game}") for game in MINATAR},
}


def game_extras(game: str) -> GameExtras:
    """The extras of the game with env id ``game`` (defaults if it has none)."""
    return EXTRAS.get(game, GameExtras())


def solved_games() -> list[str]:
    """The env ids that have a solved position set."""
    return [game for game, extras in EXTRAS.items() if extras.positions is not None]


def position_set(game: str) -> PositionSet:
    """The solved positions of ``game``; ValueError naming the games that have one."""
    load = game_extras(game).positions
    if load is None:
        raise ValueError(f"no solved positions for {game!r}; choose {' or '.join(solved_games())}")
    return load()
