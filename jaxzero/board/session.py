"""The web board's game: a human against an agent, the agent's analysis, a run's games.

    session = Session(agent, runs_games=read_games(run_dir))
    session.new(human=0)                # the human moves first; 1: the agent opens
    session.play(action)                # the human's move, then the agent's reply
    session.view()                      # what the page shows: board, moves, analysis, ...

A session is a line of positions and a cursor on it. Playing a move at the cursor cuts
the line there (the moves after it are gone) and the agent answers until it is the
human's turn again; stepping moves the cursor without playing (a loaded record, a run's
game, or the game so far). The human plays whichever side is to move where they play,
and :meth:`Session.agent_move` has the agent play the side to move, so a record stepped to
any position can be played on from there, by either. After every change the position at
the cursor is searched once (its :class:`~jaxzero.measure.roots.Analysis`, drawn on the
board), and the agent's move is that search's choice: what the page shows is what the
agent played from.

Every method takes the session's lock: the web server calls them from worker threads, so
two requests never interleave (a second waits for the first). Bad input raises
:class:`BoardError` with the sentence the page shows.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from envs.core import State, caption
from envs.go import Go
from envs.pictures import player_names
from jaxzero.analysis import line_from_moves, move_words
from jaxzero.core.single_game import SingleGame
from jaxzero.go import sgf
from jaxzero.measure.roots import (
    Analysis,
    analyze_position,
    principal_variation,
    root_board_svg,
    root_rows,
    value_graph_svg,
)
from jaxzero.run.agents.agent import Agent
from jaxzero.run.life.game_records import (
    RecordedGame,
    board_svg,
    first_player_values,
    game_states,
    last_cell,
)
from jaxzero.run.life.game_records import player_names as board_names


class BoardError(ValueError):
    """A request the board refuses; the message is for the person at the board."""


class Session:
    """One board: an agent, the line of positions, the cursor, the searches' roots.

    Args:
        agent: the agent that plays and analyses.
        simulations: its search's simulations (default: the agent's own).
        search: a ``search.kind`` name (default: the agent's own).
        human: the human's seat in the first game (0: first; ignored in a one-player
            game, where the human plays every move).
        seed: the seed of the games' chance and of the searches.
        games: a run's recorded games, to step through (:func:`read_games`).
    """

    def __init__(
        self,
        agent: Agent,
        *,
        simulations: int | None = None,
        search: str | None = None,
        human: int = 0,
        seed: int = 0,
        games: Sequence[RecordedGame] = (),
    ):
        self.agent = agent
        self.env = agent.env
        self.player = agent.search_player(simulations, search)
        self.games = list(games)
        self._longest_move = move_words(self.env)  # words: what a list of moves may hold
        self._lock = threading.Lock()
        self._step = SingleGame(self.env).step  # every line of this board shares it
        self._seed = seed
        self._key = jax.random.key(seed)
        self.states: list[State] = []
        self.moves: list[int] = []  # moves[k] leads from states[k] to states[k + 1]
        self.cursor = 0
        self.human = human
        self.title = ""
        self.versus = True  # a game against the agent (not a loaded line, a run's game)
        self._analyses: dict[int, Analysis] = {}  # cursor -> its search (this line only)
        self._recorded: dict[int, float] = {}  # a run's game: ply -> its search's value
        self._by: dict[int, str] = {}  # ply -> who played its move here ("you", "agent")
        self.new(human)

    # -- what the page asks for -------------------------------------------------------

    def new(self, human: Any) -> None:
        """A new game, the human in seat ``human`` (the agent opens when it is 1)."""
        seats = range(max(self.env.num_players, 1))
        if isinstance(human, bool) or not isinstance(human, int) or human not in seats:
            raise BoardError(f"the human's seat is 0 to {seats[-1]}, not {_shown(human)}")
        with self._lock:
            self._key, key = jax.random.split(self._key)
            self._start([self.env.init(key)], [], "new game")
            self.human, self.versus = human, True
            self._agent_turns()

    def play(self, action: Any) -> None:
        """The human's move at the cursor (an action index), then the agent's replies."""
        with self._lock:
            state = self.states[self.cursor]
            action = self._action(action, state)
            self._cut()
            self.human, self.versus = int(state.current_player), True
            self._advance(action)
            self._agent_turns()

    def agent_move(self) -> None:
        """The agent plays the side to move at the cursor, and then the human the other."""
        with self._lock:
            state = self.states[self.cursor]
            if bool(state.terminated | state.truncated):
                raise BoardError("the game is over: start a new game, undo, or step back")
            self._cut()
            self.versus = True
            if self._solo:
                self._advance(self._analyses[self.cursor].root.chosen, by_agent=True)
                return
            self.human = (int(state.current_player) + 1) % self.env.num_players
            self._agent_turns()

    def play_text(self, text: str) -> None:
        """The human's move in the game's notation (``"4"``, ``"C3"``, ``"pass"``)."""
        try:
            action = self.env.text_to_action(str(text).strip())
        except ValueError as error:
            refused = f"{_shown(text)} is not a move of {self.env.id}: {error}"
            raise BoardError(shortened(refused)) from None
        self.play(action)

    def undo(self) -> None:
        """Take back, from the position shown, the human's last move and what followed."""
        with self._lock:
            back = self.cursor
            while back > 0:
                back -= 1
                if self._solo or int(self.states[back].current_player) == self.human:
                    break
            else:  # no position before the cursor where the human was to move
                raise BoardError("there is no move of yours to take back")
            self.cursor = back
            self._cut()
            self._analyze()

    def goto(self, ply: Any) -> None:
        """Move the cursor to position ``ply`` of the line (0: its start), playing nothing."""
        with self._lock:
            if isinstance(ply, bool) or not isinstance(ply, int):
                raise BoardError(f"a position is a whole number, not {_shown(ply)}")
            if not 0 <= ply <= len(self.moves):
                raise BoardError(
                    f"the line has positions 0 to {len(self.moves)}, not {_shown(ply)}"
                )
            self.cursor = ply
            self._analyze()

    def load_moves(self, text: str) -> None:
        """The game after ``text``'s moves in the game's notation, the cursor at its end,
        the human to move there."""
        with self._lock:
            words = str(text).split()
            most = self.env.max_steps * self._longest_move
            if len(words) > most:
                raise BoardError(
                    f"{len(words)} words are more than a game of {self.env.id} holds "
                    f"(at most {self.env.max_steps} moves)"
                )
            self._key, key = jax.random.split(self._key)
            try:
                states, moves = line_from_moves(self.env, " ".join(words), key, self._step)
            except ValueError as error:
                raise BoardError(shortened(str(error))) from None
            self._loaded(states, moves, f"loaded: {len(moves)} moves")

    def load_sgf(self, text: str) -> None:
        """An SGF record's main line (Go): its setup, then its moves, the cursor at its end."""
        with self._lock:
            try:
                states, moves, title = self._sgf_line(str(text))
            except ValueError as error:
                raise BoardError(shortened(str(error))) from None
            self._loaded(states, moves, title)

    def _sgf_line(self, text: str) -> tuple[list[State], list[int], str]:
        env = self.env
        if not isinstance(env, Go):
            raise ValueError(f"SGF records are Go games; {env.id} is not Go (give its moves)")
        record = sgf.read_sgf(text)
        if record.size != env.size:
            raise ValueError(f"the record is {record.size}x{record.size}; {env.id} is not")
        states: list[State] = [sgf.to_state(env, dataclasses.replace(record, moves=[]))]  # setup
        for number, action in enumerate(record.moves, start=1):
            state = states[-1]
            if bool(state.terminated | state.truncated) or not state.legal_action_mask[action]:
                raise ValueError(
                    f"the record's move {number} ({env.action_to_text(action)}) is illegal"
                )
            self._key, key = jax.random.split(self._key)
            states.append(self._step(state, action, key))
        komi = f"komi {record.komi:g} in the record, {env.komi:g} in the agent's games"
        return (
            states,
            list(record.moves),
            f"loaded: an SGF record of {len(record.moves)} moves ({komi})",
        )

    def load_game(self, index: Any) -> None:
        """A run's recorded game ``index`` (of :attr:`games`), the cursor at its start."""
        with self._lock:
            if isinstance(index, bool) or not isinstance(index, int):
                raise BoardError(f"a game is a whole number, not {_shown(index)}")
            if not 0 <= index < len(self.games):
                raise BoardError(
                    f"the run has games 0 to {len(self.games) - 1}, not {_shown(index)}"
                )
            game = self.games[index]
            try:
                states = game_states(self.env, game.moves, self._step)
            except ValueError as error:
                raise BoardError(shortened(f"{game.label}: {error}")) from None
            self._start(states, list(game.moves), game.describe(self._names()), cursor=0)
            self.versus = False
            if self.env.num_players == 2:  # the run's own verdicts, for the value graph
                self._recorded = first_player_values(states, game.values)

    # -- the view ----------------------------------------------------------------------

    def view(self) -> dict[str, Any]:
        """What the page shows, as JSON-ready values."""
        with self._lock:
            return self._view()

    def _view(self) -> dict[str, Any]:
        env, state = self.env, self.states[self.cursor]
        over = bool(state.terminated | state.truncated)
        mask = np.asarray(state.legal_action_mask)
        legal: list[int] = [] if over else [int(a) for a in np.flatnonzero(mask)]
        highlight = (
            last_cell(env, self.states[self.cursor - 1], self.moves[self.cursor - 1])
            if self.cursor
            else None
        )
        analysis = self._analyses.get(self.cursor)
        before = self.cursor - 1  # the last move's position: the agent's reply from there
        reply = self._analyses.get(before) if self._by.get(before) == "agent" else None
        return {
            "game": env.id,
            "players": env.num_players,
            "human": self.human,
            "title": self.title,
            "cursor": self.cursor,
            "moves": [self._move_text(k) for k in range(len(self.moves))],
            "board": board_svg(
                env, state, highlight, self._caption(state), legal, cell=self._cell(state, 40, 100)
            ),
            "legal": [{"action": a, "text": env.action_to_text(a)} for a in legal],
            "to_move": int(state.current_player),
            "over": over,
            "status": self._status(state, over),
            "analysis": self._analysis_view(analysis) if analysis is not None else None,
            "reply": self._analysis_view(reply) if reply is not None else None,
            "value_graph": self._value_graph(),
            "games": len(self.games),  # their labels: game_labels()
            "versus": self.versus,
            "sgf": isinstance(env, Go),  # positions load from SGF records
        }

    def _caption(self, state: State) -> str:
        """Under a grid game's board, whose move it is, by the colour or mark a person
        sees (``Red to move``); other pictures say it themselves."""
        grid = self.env.grid(state)
        return caption(self.env, state, player_names(grid)) if grid is not None else ""

    def _cell(self, state: State, least: int, most: int) -> int:
        """A grid cell's side in pixels: a board about 360 px across, cells within
        [least, most] (a 19x19 board is wider; tic-tac-toe's no giant)."""
        grid = self.env.grid(state)
        n = max(len(grid.cells), len(grid.cells[0])) if grid is not None else 1
        return max(least, min(most, 360 // n))

    def _analysis_view(self, analysis: Analysis) -> dict[str, Any]:
        """The board at the size its labels are read (cells of 48 px or more: text of
        12.5 px at least), and the table as rows the page draws as text of its own."""
        root, env, state = analysis.root, self.env, analysis.state
        return {
            "svg": root_board_svg(
                env, state, root, cell=self._cell(state, 48, 96), heading=self._caption(state)
            ),
            "chosen": env.action_to_text(root.chosen),
            "chosen_value": round(root.chosen_value, 4),
            "network_value": round(root.network_value, 4),
            "search_value": round(root.search_value, 4),
            "simulations": int(root.visits.sum()),
            "main_line": principal_variation(root, env),
            "policy_name": root.policy_name,
            "rows": root_rows(root, env),
            "table": analysis.table(),
        }

    def game_labels(self, limit: int = 500) -> list[dict[str, Any]]:
        """The run's last ``limit`` recorded games, newest first: ``{"index", "label"}``."""
        with self._lock:
            first = max(len(self.games) - limit, 0)
            found = range(len(self.games) - 1, first - 1, -1)
            names = self._names()
            return [{"index": k, "label": self.games[k].describe(names)} for k in found]

    def _status(self, state: State, over: bool) -> str:
        if not over:
            if self._solo or int(state.current_player) == self.human:
                return "your move"
            return "the agent's turn here: 'Agent moves' plays it, or play its move yourself"
        rewards = self._returns()
        if self._solo:
            return f"game over: score {rewards[0]:g}"
        best = max(rewards)
        if all(r == best for r in rewards):
            return "game over: a draw"
        winner = int(np.argmax(rewards))
        if not self.versus:  # a loaded line or a run's game: nobody here played it
            return f"game over: {self._name(winner)} won"
        return "game over: you won" if winner == self.human else "game over: the agent won"

    def _value_graph(self) -> str | None:
        """The line's values for the first player, ply by ply, where the agent searched
        (two-player games: a mover's value is the other's negated) or, for a run's game,
        where its self-play search did; None before any."""
        if self.env.num_players != 2 or not (self._analyses or self._recorded):
            return None
        values = dict(self._recorded)  # the board's own searches drawn over them
        for ply, analysis in self._analyses.items():
            mover = int(analysis.state.current_player)
            values[ply] = analysis.root.chosen_value * (1 if mover == 0 else -1)
        return value_graph_svg(values, len(self.moves), self.cursor, self._name(0))

    def _names(self) -> tuple[str, ...]:
        """Every player as :meth:`_name` calls them."""
        return tuple(self._name(k) for k in range(self.env.num_players))

    def _name(self, player: int) -> str:
        """``Red``, ``Black``, ``X``: the player as the board draws them, else
        ``player N`` (0-based, as the library counts)."""
        names = board_names(self.env, self.states[0])
        return names[player] if player < len(names) else f"player {player}"

    def _returns(self) -> np.ndarray:
        """Each player's total reward over the line up to the cursor."""
        total = np.zeros(self.env.num_players)
        for state in self.states[1 : self.cursor + 1]:
            total += np.asarray(state.rewards, np.float64)
        return total

    def _move_text(self, k: int) -> str:
        """``"3. 7 (you)"``: the move's number, the move, who played it on this board."""
        who = f" ({self._by[k]})" if k in self._by else ""
        return f"{k + 1}. {self.env.action_to_text(self.moves[k])}{who}"

    # -- inside ------------------------------------------------------------------------

    @property
    def _solo(self) -> bool:
        return self.env.num_players == 1

    def _action(self, action: Any, state: State) -> int:
        """``action`` checked to be a legal move of ``state`` (BoardError otherwise)."""
        if bool(state.terminated | state.truncated):
            raise BoardError("the game is over: start a new game, undo, or step back")
        if isinstance(action, bool) or not isinstance(action, int):
            raise BoardError(f"a move is an action number, not {_shown(action)}")
        if not 0 <= action < self.env.num_actions:
            raise BoardError(
                f"{self.env.id} has actions 0 to {self.env.num_actions - 1}, not {_shown(action)}"
            )
        if not bool(state.legal_action_mask[action]):
            raise BoardError(f"illegal move: {self.env.action_to_text(action)} is not legal here")
        return action

    def _start(self, states: list[State], moves: list[int], title: str, cursor: int = -1) -> None:
        self.states, self.moves, self.title = states, moves, title
        self.cursor = len(moves) if cursor < 0 else cursor
        self._analyses, self._by, self._recorded = {}, {}, {}
        self._analyze()

    def _loaded(self, states: list[State], moves: list[int], title: str) -> None:
        """A loaded line, the cursor at its end and the human to move there."""
        self._start(states, moves, title)
        self.human, self.versus = int(states[-1].current_player), False

    def _cut(self) -> None:
        """Forget the line after the cursor (a move played there starts a new one)."""
        del self.states[self.cursor + 1 :], self.moves[self.cursor :]
        self._analyses = {k: a for k, a in self._analyses.items() if k <= self.cursor}
        self._recorded = {k: v for k, v in self._recorded.items() if k <= self.cursor}
        self._by = {k: who for k, who in self._by.items() if k < self.cursor}

    def _advance(self, action: int, by_agent: bool = False) -> None:
        self._key, key = jax.random.split(self._key)
        self.states.append(self._step(self.states[self.cursor], action, key))
        self.moves.append(action)
        self._by[self.cursor] = "agent" if by_agent else "you"
        self.cursor += 1
        self._analyze()

    def _agent_turns(self) -> None:
        """The agent moves until the game is over or the human is to move."""
        while not self._solo:
            state = self.states[self.cursor]
            if bool(state.terminated | state.truncated) or int(state.current_player) == self.human:
                return
            self._advance(self._analyses[self.cursor].root.chosen, by_agent=True)

    def _analyze(self) -> None:
        """The search of the position at the cursor (kept; none once the game is over)."""
        state = self.states[self.cursor]
        if self.cursor in self._analyses or bool(state.terminated | state.truncated):
            return
        key = jax.random.fold_in(jax.random.key(self._seed), self.cursor)
        root = analyze_position(self.player, self.agent.params, state, key)
        self._analyses[self.cursor] = Analysis(self.env, state, root)


def shortened(text: str, limit: int = 300) -> str:
    """``text`` cut to ``limit`` characters: a message never echoes a whole request back."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _shown(value: Any) -> str:
    """A value of the request as a message shows it: its ``repr``, cut to 80 characters."""
    return shortened(repr(value), 80)
