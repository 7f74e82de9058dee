"""A run's games, move by move: ``RUN/games.jsonl``, for reports and the web board.

    recorder = GameRecorder(run_dir / GAMES_FILE, every=config.train.log_every)  # a hook
    games = read_games(run_dir)            # [RecordedGame], oldest first

Every game the first self-play slot plays is written whole (slot 0 of the B games played
side by side; a game cut by the start of a resumed run is left out), and, at each
periodic evaluation that plays its matches (those that fit ``evaluation.max_share`` of
the run's time), two games against each fixed opponent: the network first and second.
A population's members write theirs in ``RUN/members/K/games.jsonl`` (self-play only: a
population plays no matches). A line is one game:

    {"iteration": 40, "kind": "self-play", "players": ["jaxzero", "jaxzero"],
     "moves": [4, 0, 8, ...], "returns": [1.0, -1.0], "values": [0.12, -0.08, ...]}

``moves`` are action indices from the game's start (an evaluation game's random opening
plies included), ``returns`` each player's total reward, and ``values`` (self-play only)
the search's verdict on each position before its move: the Q of the move the search
chose, from the view of the player to move, in [-1, 1] (the report and the board draw
them as the game's value graph). The moves are pulled to the host
on logging iterations only, when the driver already waits for the device, so recording
adds no wait of its own. A resumed run drops the lines after its checkpoint first (they
are played again), as ``metrics.jsonl`` does.
"""

from __future__ import annotations

import dataclasses
import heapq
import json
import math
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from envs import pictures
from envs.core import Env, State
from jaxzero.core.single_game import SingleGame
from jaxzero.measure.roots import value_graph_svg
from jaxzero.run.folder.files import os_reason
from jaxzero.run.folder.layout import GAMES_FILE
from jaxzero.run.folder.reads import FileRefused, read_lines
from jaxzero.run.life.hooks import JsonlWriter

SELF_PLAY = "self-play"
GAMES_MEMORY = 256 << 20  # read_games keeps the newest games that fit: all of a long run's
NAME_LIMIT = 200  # characters of a kind or a player's name ("eval vs NAME")
_ITERATION_LIMIT = 1 << 63
_MOVE_LIMIT = 1 << 31  # an action index, whatever the game


@dataclasses.dataclass(frozen=True)
class RecordedGame:
    """One game of a run.

    Attributes:
        iteration: the training iteration it finished in (or was evaluated at).
        kind: ``"self-play"`` or ``"eval vs NAME"``.
        players: each seat's name, seat 0 first.
        moves: action indices from the start.
        returns: each player's total reward.
        values: per move, the search's verdict on the position before it, from its
            mover's view (self-play games; empty where not recorded).
    """

    iteration: int
    kind: str
    players: tuple[str, ...]
    moves: tuple[int, ...]
    returns: tuple[float, ...]
    values: tuple[float, ...] = ()

    @property
    def result(self) -> str:
        """``"player 0 won"`` (self-play), ``"random won"``, ``"draw"``, ``"score 12"``."""
        return self.outcome()

    def outcome(self, names: Sequence[str] = ()) -> str:
        """:attr:`result`, a self-play winner called by ``names`` (the board's: ``X``,
        ``Red``) where given."""
        if len(self.returns) == 1:
            return f"score {self.returns[0]:g}"
        best = max(self.returns)
        if all(r == best for r in self.returns):
            return "draw"
        winner = self.returns.index(best)
        if self.kind != SELF_PLAY:
            return f"{self.players[winner]} won"
        return f"{names[winner] if winner < len(names) else f'player {winner}'} won"

    @property
    def label(self) -> str:
        """``"self-play, iteration 40: 9 moves, player 0 won"`` and the like."""
        return self.describe()

    def describe(self, names: Sequence[str] = ()) -> str:
        """:attr:`label`, a self-play winner called by ``names`` where given."""
        seats = "" if self.kind == SELF_PLAY else f" ({' v '.join(self.players)})"
        moves = f"{len(self.moves)} moves"
        return f"{self.kind}{seats}, iteration {self.iteration}: {moves}, {self.outcome(names)}"


@dataclasses.dataclass
class GameRecorder:
    """Driver hook: writes the run's games to ``path`` (see the module docstring).

    Attributes:
        path: ``RUN/games.jsonl``.
        every: pull the self-play moves to the host every ``every`` iterations (the
            metrics row's ``train.log_every``) and when the run stops.
    """

    path: Path
    every: int
    member: int | None = None  # a population's member k: its games of the moves [P, T, B]
    _writer: JsonlWriter = dataclasses.field(init=False)
    _pending: list[tuple[int, Any]] = dataclasses.field(default_factory=list)
    _moves: list[int] | None = None  # slot 0's current game; None: it started before us
    _values: list[float] = dataclasses.field(default_factory=list)  # its search verdicts
    _returns: Any = 0.0  # float [players]: that game's rewards so far

    def __post_init__(self) -> None:
        self._writer = JsonlWriter(self.path)

    def start(self, state: Any) -> None:
        """Hook: drop the lines after the restored checkpoint; a fresh run records its
        first game, a resumed one waits for slot 0's game under way to end."""
        iteration = int(np.max(state.iteration))  # a population's: its members' latest
        self._writer.start(SimpleNamespace(iteration=iteration))
        self._moves = [] if iteration == 0 else None

    def __call__(self, step: Any) -> None:
        """Hook: keep slot 0's moves of this iteration (device arrays, no wait)."""
        at = (slice(None), 0) if self.member is None else (self.member, slice(None), 0)
        slot = tuple(step.moves[name][at] for name in ("action", "done", "reward", "value"))
        self._pending.append((step.iteration, slot))
        if step.iteration % self.every == 0:
            self._flush()

    def close(self, step: Any) -> None:
        """Hook: write what the last iterations finished, and close the file."""
        try:
            if step is not None:
                self._flush()
        finally:
            self._writer.close(step)

    def add_match(
        self, iteration: int, opponent: str, actions: np.ndarray, outcome: np.ndarray, seat: Any
    ) -> None:
        """Write an evaluation's first game with the network first and its first game
        with it second, against ``opponent``.

        Args:
            iteration: the evaluation's iteration.
            opponent: the fixed opponent's name.
            actions: int [G, L], each game's actions, -1 after its end.
            outcome: int [G] in {-1, 0, 1}, from the network's view.
            seat: int [G], the network's seat (0: it moved first).
        """
        seat = np.asarray(seat)
        for mine in (0, 1):
            found = np.flatnonzero(seat == mine)
            if not len(found):
                continue
            g = int(found[0])
            players = ["jaxzero", opponent] if mine == 0 else [opponent, "jaxzero"]
            won = float(outcome[g])
            returns = [won, -won] if mine == 0 else [-won, won]
            moves = [int(a) for a in actions[g] if a >= 0]
            self._write(iteration, f"eval vs {opponent}", players, moves, returns)

    def _flush(self) -> None:
        pulled = jax.device_get(self._pending)
        self._pending = []
        for iteration, (action, done, reward, value) in pulled:
            for t in range(len(action)):
                if self._moves is not None:
                    if not self._moves:
                        self._returns, self._values = np.zeros(len(reward[t])), []
                    self._moves.append(int(action[t]))
                    self._values.append(round(float(value[t]), 3) + 0.0)  # no -0.0
                    self._returns = self._returns + np.asarray(reward[t], np.float64)
                if done[t]:
                    if self._moves:
                        players = ["jaxzero"] * len(self._returns)
                        self._write(
                            iteration, SELF_PLAY, players, self._moves, self._returns, self._values
                        )
                    self._moves = []

    def _write(
        self,
        iteration: int,
        kind: str,
        players: list[str],
        moves: list[int],
        returns: Any,
        values: list[float] | None = None,
    ) -> None:
        row: dict[str, Any] = {
            "iteration": int(iteration),
            "kind": kind,
            "players": players,
            "moves": moves,
            "returns": [round(float(r), 6) + 0.0 for r in returns],  # no -0.0
        }
        if values is not None and all(map(math.isfinite, values)):  # a diverged net's: none
            row["values"] = values
        self._writer.append(row)


def read_games(run_dir: Path | str, num_actions: int | None = None) -> list[RecordedGame]:
    """The games of a run's ``games.jsonl``, by iteration ([] without one): all of them,
    or, when they would take more than about :data:`GAMES_MEMORY` bytes, the newest that
    fit (the file is read a line at a time; memory holds one line and the games kept).

    A line that is not a whole game is skipped: the file is data, never trusted further.
    A game is a JSON object whose ``iteration`` is a whole number from 0, ``kind`` a
    string, ``moves`` action indices (below ``num_actions``, when given), ``returns`` one
    finite number or more, ``players`` as many strings as ``returns``, and ``values``, if
    there, one finite number per move; a name or kind longer than :data:`NAME_LIMIT`
    characters is no game of ours.

    Args:
        run_dir: the run directory.
        num_actions: the game's action count, to check the moves against.

    Returns:
        The games, as :class:`RecordedGame`; one iteration's in file order.

    Raises:
        ValueError: the file is not a regular file inside the run, or too large.
    """
    run_dir = Path(run_dir)
    path = run_dir / GAMES_FILE
    if not path.exists():
        return []
    moves_limit = _MOVE_LIMIT if num_actions is None else num_actions
    kept: list[tuple[int, int, RecordedGame]] = []  # a heap: the oldest game first
    held = 0  # about the bytes the kept games take
    try:
        for number, line in read_lines(path, run_dir):
            game = _game(line, moves_limit) if line is not None else None
            if game is None:
                continue
            heapq.heappush(kept, (game.iteration, number, game))
            held += _size(game)
            while held > GAMES_MEMORY and len(kept) > 1:
                held -= _size(heapq.heappop(kept)[2])
    except FileRefused:
        raise
    except OSError as error:
        raise ValueError(f"cannot read {path}: {os_reason(error)}") from None
    return [game for _, _, game in sorted(kept)]


def _game(line: bytes, moves_limit: int) -> RecordedGame | None:
    """The game on ``line``, or None when it is not a whole one (see :func:`read_games`)."""
    try:
        row = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(row, dict):
        return None
    iteration: Any = row.get("iteration")
    kind: Any = row.get("kind")
    moves, players, returns = row.get("moves"), row.get("players"), row.get("returns")
    if not (_whole(iteration, _ITERATION_LIMIT) and _name(kind)):
        return None
    if not (isinstance(moves, list) and _actions(moves, moves_limit)):
        return None
    if not (isinstance(returns, list) and returns and all(map(_finite, returns))):
        return None
    if not (isinstance(players, list) and len(players) == len(returns)):
        return None
    if not all(map(_name, players)):
        return None
    values = row.get("values", [])
    if not (isinstance(values, list) and len(values) in (0, len(moves))):
        return None
    if not all(map(_finite, values)):
        return None
    return RecordedGame(
        iteration=iteration,
        kind=kind,
        players=tuple(players),
        moves=tuple(moves),
        returns=tuple(float(r) for r in returns),
        values=tuple(float(v) for v in values),
    )


def _whole(value: Any, limit: int) -> bool:
    """A whole number in [0, ``limit``) (JSON's ``true`` is not one)."""
    return type(value) is int and 0 <= value < limit


def _actions(moves: list[Any], limit: int) -> bool:
    """Whether every move is a whole number in [0, ``limit``) (type and range checked in
    C loops: a long file has millions of moves)."""
    return not moves or (set(map(type, moves)) == {int} and 0 <= min(moves) <= max(moves) < limit)


def _finite(value: Any) -> bool:
    """A number a float holds, not inf or NaN (nor an integer of 400 digits)."""
    try:
        return type(value) in (int, float) and math.isfinite(float(value))
    except OverflowError:
        return False


def _name(value: Any) -> bool:
    return isinstance(value, str) and len(value) <= NAME_LIMIT


def _size(game: RecordedGame) -> int:
    """About the bytes ``game`` takes: its tuples' slots, the moves Python does not share
    (above 256), its numbers and strings, and the objects around them."""
    text = len(game.kind) + sum(len(name) for name in game.players)
    numbers = 8 * len(game.moves) + 32 * sum(move > 256 for move in game.moves)
    numbers += 32 * len(game.values)  # a float each
    return numbers + 64 * (len(game.players) + len(game.returns)) + text + 512


def game_states(env: Env, moves: Sequence[int], step: Any = None) -> list[State]:
    """The states of a recorded game, from its start to after its last move.

    Args:
        env: the game.
        moves: action indices from the start.
        step: a compiled step to share between calls, ``SingleGame(env).step`` (default:
            one made here).

    Returns:
        ``len(moves) + 1`` unbatched states.

    Raises:
        ValueError: the game cannot be replayed from its moves: its start or a step draws
            chance (a shuffled deck, a dice roll), which the record does not hold, or a
            move is illegal where it is played.
    """
    step = SingleGame(env).step if step is None else step
    keys = jax.random.split(jax.random.key(0), 2)
    state, other = env.init(keys[0]), env.init(keys[1])
    if not _same(state, other):
        raise ValueError(f"{env.id} starts by chance; its games cannot be replayed from moves")
    states = [state]
    for number, action in enumerate(moves, start=1):
        if bool(state.terminated | state.truncated) or not bool(state.legal_action_mask[action]):
            raise ValueError(f"move {number} ({env.action_to_text(int(action))}) is not legal")
        state, other = (step(state, jnp.int32(action), k) for k in keys)
        if not _same(state, other):
            raise ValueError(f"{env.id}'s move {number} draws chance; it cannot be replayed")
        states.append(state)
    return states


def _same(a: State, b: State) -> bool:
    return all(
        np.array_equal(x, y) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True)
    )


STRIP_GAP = 12  # pixels between a strip's boards


def strip_svg(env: Env, game: RecordedGame, columns: int = 10, step: Any = None) -> str:
    """A recorded game move by move: its start and the position after each move, the
    move played under each (a grid game's last move ringed), and under them the search's
    value ply by ply (a two-player game whose record holds them), each value under its
    board when the boards fit one row.

    Args:
        env: the game.
        game: the record.
        columns: pictures a row.
        step: a compiled step to share, ``SingleGame(env).step``.

    Returns:
        One SVG document.

    Raises:
        ValueError: the game cannot be replayed (:func:`game_states`).
    """
    states = game_states(env, game.moves, step)
    svgs = [board_svg(env, states[0], None, "start")]
    for ply, (before, after, action) in enumerate(
        zip(states[:-1], states[1:], game.moves, strict=True), 1
    ):
        who = game.players[int(before.current_player)] if env.num_players > 1 else ""
        text = f"{ply}. {who} {env.action_to_text(action)}".replace("  ", " ")
        svgs.append(board_svg(env, after, last_cell(env, before, action), text))
    names = player_names(env, states[0])
    boards = pictures.tile(svgs, columns=columns, gap=STRIP_GAP)
    parts = [pictures.text_svg(game.describe(names)), boards]
    if game.values and env.num_players == 2:  # the search's verdicts, for the first player
        values = first_player_values(states, game.values)
        who = names[0] if names else "player 0"
        under = None
        if len(svgs) <= columns:  # one row: each ply's value under its board
            widths = [pictures.svg_size(svg)[0] for svg in svgs]
            cell = max(widths) + STRIP_GAP  # tile's cells: the widest + the gap
            under = [k * cell + w / 2 for k, w in enumerate(widths)]
        width = pictures.svg_size(boards)[0]
        parts.append(value_graph_svg(values, len(game.moves), who=who, width=width, xs=under))
    return pictures.tile(parts, columns=1, gap=0)


def first_player_values(states: Sequence[State], values: Sequence[float]) -> dict[int, float]:
    """ply -> the value of the position after ``ply`` moves for the first player, from
    values for each position's mover (a two-player game's: the other's is its negation)."""
    return {
        ply: float(v) if int(state.current_player) == 0 else -float(v)
        for ply, (state, v) in enumerate(zip(states, values, strict=False))
    }


def player_names(env: Env, state: State) -> tuple[str, ...]:
    """The players as the board draws them (``Red``, ``Black``, ``X``), the first first;
    () for a game without a grid."""
    grid = env.grid(state)
    return pictures.player_names(grid) if grid is not None else ()


def last_cell(env: Env, before: State, action: int) -> tuple[int, int] | None:
    """The (row, column) ``action`` played in ``before``, on a grid game's board (None
    for other games and for moves without a cell)."""
    grid = env.grid(before)
    if grid is None or grid.action_cells is None or min(grid.action_cells[action]) < 0:
        return None
    row, col = (int(v) for v in grid.action_cells[action])
    return row, col


def board_svg(
    env: Env,
    state: State,
    highlight: tuple[int, int] | None = None,
    caption: str = "",
    targets: Sequence[int] = (),
    cell: int = 40,
) -> str:
    """``state``'s picture with ``caption`` under it; on a grid game's board the cell
    ``highlight`` ringed and the ``targets`` clickable (:func:`envs.pictures.grid_svg`).

    Args:
        env: the game.
        state: one state.
        highlight: a cell to ring (the last move).
        caption: the line under the picture.
        targets: actions to make clickable.
        cell: a grid cell's side in pixels.

    Returns:
        One SVG document.
    """
    grid = env.grid(state)
    if grid is None:
        svg = env.to_svg(state)
        return pictures.tile([svg, pictures.text_svg(caption)], columns=1) if caption else svg
    if highlight is not None:
        grid = dataclasses.replace(grid, highlight=(*grid.highlight, highlight))
    return pictures.grid_svg(grid, caption, cell=cell, targets=targets)
