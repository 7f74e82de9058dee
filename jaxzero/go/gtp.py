"""Go Text Protocol (version 2): a trained agent as a Go engine, and a small GTP referee.

``jaxzero gtp --checkpoint RUN`` speaks GTP on stdin/stdout, so GoGui, Sabaki, GNU Go's
twogtp or gomill can use the agent. Supported commands: protocol_version, name, version,
known_command, list_commands, boardsize, clear_board, komi, play, genmove, undo,
showboard, final_score, quit. A malformed or illegal command gets a GTP error
(``? message``) and the engine keeps running.

Our Go env alternates colours strictly. GTP controllers may ask for two moves of one
colour in a row (e.g. after a handicap); the engine then inserts a pass for the other
colour, unless that pass would end the game, in which case the command is refused.

:func:`play_match` is the referee side: it drives two GTP engines (subprocesses) through
a whole game and scores it with both.
"""

from __future__ import annotations

import dataclasses
import subprocess
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
# GNU Go's flags for our rules (envs.go): area scoring and positional superko (suicide is
# forbidden by default). Without them GNU Go plays and scores by Japanese rules, where
# moves inside one's own territory and captured stones change the score.
GNUGO_RULES = ("--chinese-rules", "--positional-superko")


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
        self.num_simulations = num_simulations
        self.search = search
        self.resign_threshold = resign_threshold
        self.key = jax.random.key(seed)
        self.history: list[GoState] = []
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
        if komi != self.env.komi:
            env = Go(self.env.size, komi=komi, history=self.env.history)
            self.agent = dataclasses.replace(self.agent, env=env)
        return ""

    def _step(self, action: int) -> None:
        self.history.append(self.env.step(self.state, jnp.int32(action)))

    def _to_move(self, colour: int) -> None:
        """Make ``colour`` the player to move, passing for the other colour if needed."""
        if bool(self.state.terminated | self.state.truncated):
            raise GtpError("the game is over")
        if int(self.state.current_player) != colour:
            if int(self.state.passes) > 0:
                raise GtpError("out of turn: a pass for the other colour would end the game")
            self._step(self.env.size**2)

    def play(self, colour_text: str, vertex: str) -> str:
        colour = _colour(colour_text)
        try:
            action = gtp_to_action(vertex, self.env.size)
        except ValueError:
            raise GtpError("invalid coordinate") from None
        before = len(self.history)
        self._to_move(colour)
        if not bool(self.state.legal_action_mask[action]):
            del self.history[before:]
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
        action = int(self.agent.act(batch, k_act, self.num_simulations, self.search)[0])
        self._step(action)
        return action_to_gtp(action, self.env.size)

    def undo(self) -> str:
        if len(self.history) == 1:
            raise GtpError("cannot undo")
        self.history.pop()
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
class GtpClient:
    """A GTP engine in a subprocess."""

    def __init__(self, command: Sequence[str]):
        self.command = list(command)
        self.process = subprocess.Popen(
            self.command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )

    def send(self, command: str) -> str:
        """Send one command; return the result or raise GtpError with the engine's message."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        lines = []
        while True:
            line = self.process.stdout.readline()
            if not line:
                raise GtpError(f"{self.command[0]} exited during {command!r}")
            if line.strip() == "" and lines:
                break
            if line.strip() or lines:
                lines.append(line.rstrip("\n"))
        head, rest = lines[0], "\n".join(lines[1:])
        text = (head[1:].lstrip("0123456789").strip() + ("\n" + rest if rest else "")).strip()
        if head.startswith("?"):
            raise GtpError(f"{self.command[0]} refused {command!r}: {text}")
        if not head.startswith("="):
            raise GtpError(f"{self.command[0]} answered {command!r} with {head!r}")
        return text

    def close(self) -> None:
        try:
            self.send("quit")
        except (GtpError, OSError):
            pass
        self.process.wait(timeout=30)


@dataclasses.dataclass(frozen=True)
class MatchResult:
    winner: str  # "black", "white" or "draw"
    moves: list[str]
    reason: str  # "score" or "resign" or "move cap"
    scores: dict[str, str]  # each engine's final_score


def play_match(
    black: GtpClient,
    white: GtpClient,
    *,
    size: int,
    komi: float,
    max_moves: int,
    judge: str = "black",
    opening: Sequence[str] = (),
) -> MatchResult:
    """Play one game between two GTP engines; both must accept every move.

    ``opening`` (GTP vertices, black first) is played on both boards before the engines
    take over. The winner of a scored game is read from the ``judge`` engine's
    ``final_score`` ("black" or "white": e.g. GNU Go, which also judges dead stones)."""
    for engine in (black, white):
        engine.send(f"boardsize {size}")
        engine.send("clear_board")
        engine.send(f"komi {komi}")
    moves: list[str] = []
    colour = "black"
    for move in opening:
        for engine in (black, white):
            engine.send(f"play {colour} {move}")
        moves.append(move.lower())
        colour = "white" if colour == "black" else "black"
    players = {"black": (black, white), "white": (white, black)}
    passes = 0
    while len(moves) < max_moves:
        mover, other = players[colour]
        move = mover.send(f"genmove {colour}").lower()
        if move == "resign":
            winner = "white" if colour == "black" else "black"
            return MatchResult(winner, moves, "resign", {})
        other.send(f"play {colour} {move}")
        moves.append(move)
        passes = passes + 1 if move == "pass" else 0
        if passes == 2:
            break
        colour = "white" if colour == "black" else "black"
    scores = {"black": black.send("final_score"), "white": white.send("final_score")}
    result = scores[judge]
    winner = "black" if result.startswith("B+") else "white" if result.startswith("W+") else "draw"
    reason = "score" if passes == 2 else "move cap"
    return MatchResult(winner, moves, reason, scores)
