"""The web board's game: a human against an agent, the agent's analysis, a run's games.

    session = Session(agent, runs_games=read_games(run_dir))
    session.new(human=0)                # the human moves first; 1: the agent opens
    session.play(action)                # the human's move, then the agent's reply
    session.view()                      # what the page shows: board, moves, analysis, ...

A session is a line of positions and a cursor on it. Playing a move at the cursor cuts
the line there (the moves after it are gone) and the agent answers until it is the
human's turn again; stepping moves the cursor without playing (a loaded record, a run's
game, or the game so far). The human plays whichever side is to move where they play, so
a record stepped to any position can be played on from there. After every change the
position at the cursor is searched once (its :class:`~jaxzero.measure.roots.Analysis`,
drawn on the board), and the agent's move is that search's choice: what the page shows
is what the agent played from.

Every method takes the session's lock: the web server calls them from worker threads, so
two requests never interleave (a double click waits for the first). Bad input raises
:class:`BoardError` with the sentence the page shows.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from envs.core import State, caption
from envs.go import Go
from jaxzero.analysis import line_from_moves, sgf_position
from jaxzero.measure.roots import Analysis, analyze_position, principal_variation
from jaxzero.run.agent import Agent
from jaxzero.run.game_records import RecordedGame, board_svg, game_states, last_cell


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
        self._lock = threading.Lock()
        self._step = jax.jit(self.env.step)
        self._seed = seed
        self._key = jax.random.key(seed)
        self.states: list[State] = []
        self.moves: list[int] = []  # moves[k] leads from states[k] to states[k + 1]
        self.cursor = 0
        self.human = human
        self.title = ""
        self._analyses: dict[int, Analysis] = {}  # cursor -> its search (this line only)
        self._replies: dict[int, Analysis] = {}  # ply of an agent's move -> its search
        self.new(human)

    # -- what the page asks for -------------------------------------------------------

    def new(self, human: int) -> None:
        """A new game, the human in seat ``human`` (the agent opens when it is 1)."""
        if self.env.num_players > 1 and human not in range(self.env.num_players):
            raise BoardError(f"the human's seat is 0 to {self.env.num_players - 1}, not {human}")
        with self._lock:
            self._key, key = jax.random.split(self._key)
            self._start([self.env.init(key)], [], "new game")
            self.human = human
            self._agent_turns()

    def play(self, action: Any) -> None:
        """The human's move at the cursor (an action index), then the agent's replies."""
        with self._lock:
            state = self.states[self.cursor]
            action = self._action(action, state)
            self._cut()
            self.human = int(state.current_player)
            self._advance(action)
            self._agent_turns()

    def play_text(self, text: str) -> None:
        """The human's move in the game's notation (``"4"``, ``"C3"``, ``"pass"``)."""
        try:
            action = self.env.text_to_action(str(text).strip())
        except ValueError as error:
            raise BoardError(f"{text!r} is not a move of {self.env.id}: {error}") from None
        self.play(action)

    def undo(self) -> None:
        """Take back the human's last move and the agent's replies to it."""
        with self._lock:
            self.cursor = self.cursor if self.cursor < len(self.moves) else len(self.moves)
            back = self.cursor
            while back > 0:
                back -= 1
                if int(self.states[back].current_player) == self.human or self._solo:
                    break
            if back == self.cursor:
                raise BoardError("there is no move of yours to take back")
            self.cursor = back
            self._cut()
            self._analyze()

    def goto(self, ply: Any) -> None:
        """Move the cursor to position ``ply`` of the line (0: its start), playing nothing."""
        with self._lock:
            if isinstance(ply, bool) or not isinstance(ply, int):
                raise BoardError(f"a position is a whole number, not {ply!r}")
            if not 0 <= ply <= len(self.moves):
                raise BoardError(f"the line has positions 0 to {len(self.moves)}, not {ply}")
            self.cursor = ply
            self._analyze()

    def load_moves(self, text: str) -> None:
        """The game after ``text``'s moves in the game's notation, the cursor at its end."""
        with self._lock:
            self._key, key = jax.random.split(self._key)
            try:
                states, moves = line_from_moves(self.env, str(text), key, self._step)
            except ValueError as error:
                raise BoardError(str(error)) from None
            self._start(states, moves, f"loaded: {len(moves)} moves")

    def load_sgf(self, text: str) -> None:
        """The position at the end of an SGF record's main line (Go), as a line's start."""
        with self._lock:
            try:
                state, record = sgf_position(self.env, str(text), "the SGF record")
            except ValueError as error:
                raise BoardError(str(error)) from None
            self._start([state], [], f"loaded: the SGF record's {len(record.moves)} moves")

    def load_game(self, index: Any) -> None:
        """A run's recorded game ``index`` (of :attr:`games`), the cursor at its start."""
        with self._lock:
            if isinstance(index, bool) or not isinstance(index, int):
                raise BoardError(f"a game is a whole number, not {index!r}")
            if not 0 <= index < len(self.games):
                raise BoardError(f"the run has games 0 to {len(self.games) - 1}, not {index}")
            game = self.games[index]
            try:
                states = game_states(self.env, game.moves, self._step)
            except ValueError as error:
                raise BoardError(f"{game.label}: {error}") from None
            self._start(states, list(game.moves), game.label, cursor=0)

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
        reply = self._replies.get(self.cursor - 1) if self.cursor else None
        return {
            "game": env.id,
            "players": env.num_players,
            "human": self.human,
            "title": self.title,
            "cursor": self.cursor,
            "moves": [self._move_text(k) for k in range(len(self.moves))],
            "board": board_svg(env, state, highlight, self._caption(state), targets=legal),
            "legal": [{"action": a, "text": env.action_to_text(a)} for a in legal],
            "to_move": int(state.current_player),
            "over": over,
            "status": self._status(state, over),
            "analysis": self._analysis_view(analysis) if analysis is not None else None,
            "reply": self._analysis_view(reply) if reply is not None else None,
            "games": [game.label for game in self.games],
            "sgf": isinstance(env, Go),  # positions load from SGF records
        }

    def _caption(self, state: State) -> str:
        """Under a grid game's board, whose move it is; other pictures say it themselves."""
        return caption(self.env, state) if self.env.grid(state) is not None else ""

    def _analysis_view(self, analysis: Analysis) -> dict[str, Any]:
        root, env = analysis.root, self.env
        return {
            "svg": analysis.svg,
            "chosen": env.action_to_text(root.chosen),
            "network_value": round(root.network_value, 4),
            "search_value": round(root.search_value, 4),
            "simulations": int(root.visits.sum()),
            "main_line": principal_variation(root, env),
            "table": analysis.table(),
        }

    def _status(self, state: State, over: bool) -> str:
        if not over:
            if self._solo or int(state.current_player) == self.human:
                return "your move"
            return "the agent's move (step to the end to play on)"
        rewards = self._returns()
        if self._solo:
            return f"game over: score {rewards[0]:g}"
        mine, best = rewards[self.human], max(rewards)
        if all(r == best for r in rewards):
            return "game over: a draw"
        return "game over: you won" if mine == best else "game over: the agent won"

    def _returns(self) -> np.ndarray:
        """Each player's total reward over the line up to the cursor."""
        total = np.zeros(self.env.num_players)
        for state in self.states[1 : self.cursor + 1]:
            total += np.asarray(state.rewards, np.float64)
        return total

    def _move_text(self, k: int) -> str:
        who = "" if self._solo else f"{int(self.states[k].current_player)}: "
        return f"{k + 1}. {who}{self.env.action_to_text(self.moves[k])}"

    # -- inside ------------------------------------------------------------------------

    @property
    def _solo(self) -> bool:
        return self.env.num_players == 1

    def _action(self, action: Any, state: State) -> int:
        """``action`` checked to be a legal move of ``state`` (BoardError otherwise)."""
        if bool(state.terminated | state.truncated):
            raise BoardError("the game is over: start a new game, undo, or step back")
        if isinstance(action, bool) or not isinstance(action, int):
            raise BoardError(f"a move is an action number, not {action!r}")
        if not 0 <= action < self.env.num_actions:
            raise BoardError(
                f"{self.env.id} has actions 0 to {self.env.num_actions - 1}, not {action}"
            )
        if not bool(state.legal_action_mask[action]):
            raise BoardError(f"illegal move: {self.env.action_to_text(action)} is not legal here")
        return action

    def _start(self, states: list[State], moves: list[int], title: str, cursor: int = -1) -> None:
        self.states, self.moves, self.title = states, moves, title
        self.cursor = len(moves) if cursor < 0 else cursor
        self._analyses, self._replies = {}, {}
        self._analyze()

    def _cut(self) -> None:
        """Forget the line after the cursor (a move played there starts a new one)."""
        del self.states[self.cursor + 1 :], self.moves[self.cursor :]
        self._analyses = {k: a for k, a in self._analyses.items() if k <= self.cursor}
        self._replies = {k: a for k, a in self._replies.items() if k < self.cursor}

    def _advance(self, action: int) -> None:
        self._key, key = jax.random.split(self._key)
        self.states.append(self._step(self.states[self.cursor], jnp.int32(action), key))
        self.moves.append(action)
        self.cursor += 1
        self._analyze()

    def _agent_turns(self) -> None:
        """The agent moves until the game is over or the human is to move."""
        while not self._solo:
            state = self.states[self.cursor]
            if bool(state.terminated | state.truncated) or int(state.current_player) == self.human:
                return
            analysis = self._analyses[self.cursor]
            self._replies[self.cursor] = analysis
            self._advance(analysis.root.chosen)

    def _analyze(self) -> None:
        """The search of the position at the cursor (kept; none once the game is over)."""
        state = self.states[self.cursor]
        if self.cursor in self._analyses or bool(state.terminated | state.truncated):
            return
        key = jax.random.fold_in(jax.random.key(self._seed), self.cursor)
        root = analyze_position(self.player, self.agent.params, state, key)
        self._analyses[self.cursor] = Analysis(self.env, state, root)
