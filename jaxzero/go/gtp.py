"""Go Text Protocol (version 2): a trained agent as a Go engine, and a small GTP referee.

``jaxzero gtp --checkpoint RUN`` speaks GTP on stdin/stdout, so GoGui, Sabaki, GNU Go's
twogtp or gomill can use the agent. Supported commands: protocol_version, name, version,
known_command, list_commands, boardsize, clear_board, komi, play, genmove, undo,
showboard, final_score, quit. A malformed or illegal command gets a GTP error
(``? message``) and the engine keeps running.

Our Go env alternates colours strictly. GTP controllers may ask for two moves of one
colour in a row (e.g. after a handicap); the engine then inserts a pass for the other
colour, unless that pass would end the game, in which case the command is refused.

The referee side (two GTP engines driven through a game, e.g. against GNU Go) is
benchmark code: ``benchmarks/gtp_referee.py``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import TextIO

import jax
import jax.numpy as jnp

from envs.go import Go, GoState, action_to_gtp, gtp_to_action, score
from jaxzero.run.agent import Agent

COMMANDS = (
    "protocol_version",
    "name",
    "version",
    "known_command",
    "list_commands",
    "boardsize",
    "clear_board",
    "komi",
    "play",
    "genmove",
    "undo",
    "showboard",
    "final_score",
    "quit",
)
COLOURS = {"b": 0, "black": 0, "w": 1, "white": 1}


class GtpError(Exception):
    """A command that cannot be carried out; its message is the GTP error text."""


def _package_version() -> str:
    try:
        return version("jaxzero")
    except PackageNotFoundError:
        return "0+unknown"


class GtpEngine:
    """The agent behind a GTP session: the game so far, komi, and the search settings."""

    def __init__(
        self,
        agent: Agent,
        *,
        num_simulations: int | None = None,
        search: str | None = None,
        resign_threshold: float = -0.95,
        seed: int = 0,
    ):
        if not isinstance(agent.env, Go):
            raise ValueError(f"GTP needs a Go agent; this checkpoint plays {agent.config.game}")
        self.agent = agent
        self.player = agent.search_player(num_simulations, search)  # a bad setting fails now
        self.resign_threshold = resign_threshold
        self.key = jax.random.key(seed)
        self.history: list[GoState] = []
        self.inserted: list[bool] = []  # per history entry: a pass the engine inserted
        self.clear_board()

    @property
    def env(self) -> Go:
        return self.agent.env

    @property
    def state(self) -> GoState:
        return self.history[-1]

    # ------------------------------------------------------------------ commands
    def clear_board(self) -> str:
        self.history = [self.env.init(jax.random.key(0))]
        self.inserted = [False]
        return ""

    def boardsize(self, text: str) -> str:
        try:
            size = int(text)
        except ValueError:
            raise GtpError("boardsize not an integer") from None
        if size != self.env.size:
            raise GtpError("unacceptable size")
        return self.clear_board()

    def komi(self, text: str) -> str:
        try:
            komi = float(text)
        except ValueError:
            raise GtpError("komi not a float") from None
        if not math.isfinite(komi):
            raise GtpError("komi must be a finite number")
        if komi != self.env.komi:
            env = Go(self.env.size, komi=komi, history=self.env.history)
            self.agent = self.agent.with_env(env)
            self.player = self.player.replace(env=env)
        return ""

    def _step(self, action: int, inserted: bool = False) -> None:
        self.history.append(self.env.step(self.state, jnp.int32(action)))
        self.inserted.append(inserted)

    def _to_move(self, colour: int) -> None:
        """Make ``colour`` the player to move, passing for the other colour if needed."""
        if bool(self.state.terminated | self.state.truncated):
            raise GtpError("the game is over")
        if int(self.state.current_player) != colour:
            if int(self.state.passes) > 0:
                raise GtpError("out of turn: a pass for the other colour would end the game")
            self._step(self.env.size**2, inserted=True)

    def play(self, colour_text: str, vertex: str) -> str:
        colour = _colour(colour_text)
        try:
            action = gtp_to_action(vertex, self.env.size)
        except ValueError:
            raise GtpError("invalid coordinate") from None
        before = len(self.history)
        self._to_move(colour)
        if not bool(self.state.legal_action_mask[action]):
            del self.history[before:], self.inserted[before:]
            raise GtpError("illegal move")
        self._step(action)
        return ""

    def genmove(self, colour_text: str) -> str:
        colour = _colour(colour_text)
        if bool(self.state.terminated | self.state.truncated):
            return "pass"
        self._to_move(colour)
        batch = jax.tree.map(lambda x: x[None], self.state)
        _, value = self.agent.evaluate(batch)
        if float(value[0]) < self.resign_threshold:
            return "resign"
        self.key, k_act = jax.random.split(self.key)
        action = int(self.player.jitted(self.agent.params, batch, k_act)[0])
        self._step(action)
        return action_to_gtp(action, self.env.size)

    def undo(self) -> str:
        """Take back the last move, and the pass the engine inserted before it, if any
        (so that the same colour is to move again)."""
        if len(self.history) == 1:
            raise GtpError("cannot undo")
        self.history.pop(), self.inserted.pop()
        if self.inserted[-1]:
            self.history.pop(), self.inserted.pop()
        return ""

    def showboard(self) -> str:
        return "\n" + self.env.render(self.state)

    def final_score(self) -> str:
        black, white = (float(x) for x in score(self.state))
        margin = black - white - self.env.komi
        if margin == 0:
            return "0"
        return f"B+{margin:g}" if margin > 0 else f"W+{-margin:g}"

    # ------------------------------------------------------------------ protocol
    def execute(self, name: str, args: Sequence[str]) -> str:
        """Run one command; returns the result text or raises GtpError."""
        simple = {
            "protocol_version": lambda: "2",
            "name": lambda: "jaxzero",
            "version": _package_version,
            "list_commands": lambda: "\n".join(COMMANDS),
            "clear_board": self.clear_board,
            "undo": self.undo,
            "showboard": self.showboard,
            "final_score": self.final_score,
            "quit": lambda: "",
        }
        with_args = {
            "known_command": (1, lambda a: "true" if a in COMMANDS else "false"),
            "boardsize": (1, self.boardsize),
            "komi": (1, self.komi),
            "play": (2, self.play),
            "genmove": (1, self.genmove),
        }
        if name in simple:
            return simple[name]()
        if name in with_args:
            count, handler = with_args[name]
            if len(args) < count:
                raise GtpError(f"syntax error: {name} needs {count} argument(s)")
            return handler(*args[:count])
        raise GtpError("unknown command")

    def respond(self, line: str) -> tuple[str | None, bool]:
        """(response text or None for a blank line, whether the session ends)."""
        line = line.split("#", 1)[0].replace("\t", " ").strip()
        if not line:
            return None, False
        words = line.split()
        ident = ""
        if words[0].isdigit():
            ident, words = words[0], words[1:]
        if not words:
            return f"?{ident} empty command\n\n", False
        name, args = words[0].lower(), words[1:]
        try:
            result = self.execute(name, args)
        except GtpError as error:
            return f"?{ident} {error}\n\n", False
        sep = "" if not result or result.startswith("\n") else " "
        return f"={ident}{sep}{result}\n\n", name == "quit"

    def serve(self, stdin: TextIO, stdout: TextIO) -> None:
        for line in stdin:
            response, done = self.respond(line)
            if response is not None:
                stdout.write(response)
                stdout.flush()
            if done:
                return


def _colour(text: str) -> int:
    colour = COLOURS.get(text.lower())
    if colour is None:
        raise GtpError("invalid color")
    return colour


# ---------------------------------------------------------------------- referee
