"""Go Text Protocol (version 2): a trained agent as a Go engine, and a small GTP referee.

``jaxzero gtp --checkpoint RUN`` speaks GTP on stdin/stdout, so GoGui, Sabaki, GNU Go's
twogtp or gomill can use the agent. Supported commands: protocol_version, name, version,
known_command, list_commands, boardsize, clear_board, komi, play, genmove, undo,
showboard, final_score, quit, and Leela Zero's ``lz-analyze`` (below). A malformed or
illegal command gets a GTP error (``? message``) and the engine keeps running; so does a
line longer than :data:`LINE_LIMIT` bytes, read past in pieces of that size (memory never
holds it).

Our Go env alternates colours strictly. GTP controllers may ask for two moves of one
colour in a row (e.g. after a handicap); the engine then inserts a pass for the other
colour, unless that pass would end the game, in which case the command is refused.

``lz-analyze [colour] [interval]`` is how Sabaki, Lizzie and LizGoban read an engine's
analysis. The reply opens with ``=`` on a line of its own, then one line of
``info move M visits N winrate W prior P order K pv M ...`` entries, one per move the
search visited (the chosen move first, ``order 0``; win rate and prior in ten-thousandths,
for the side to move), and stays open until the next command arrives, which ends it with
a blank line and is then answered, as Leela Zero does. Our search has a fixed number of
simulations, so its one line is the whole analysis: the interval (centiseconds between
Leela Zero's lines) is read and changes nothing.

The referee side (two GTP engines driven through a game, e.g. against GNU Go) is
a tool outside the package: ``tools/gtp_referee.py``.
"""

from __future__ import annotations

import io
import math
import re
import typing
from collections.abc import Callable, Iterator, Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import BinaryIO, TextIO

import jax
import jax.numpy as jnp
import numpy as np

from envs.go import Go, GoState, action_to_gtp, gtp_to_action, score
from jaxzero.core.single_game import SingleGame, batch_of_one
from jaxzero.measure.roots import (
    RootAnalysis,
    analyze_position,
    most_visited_first,
    principal_variation,
)
from jaxzero.run.agents.agent import Agent

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
    "lz-analyze",
)
ANALYSIS = "lz-analyze"  # a reply left open until the next command (module doc)
PV_DEPTH = 10  # moves of each move's line in an analysis
COLOURS = {"b": 0, "black": 0, "w": 1, "white": 1}
# GTP 2 preprocessing drops the ASCII control characters but HT (LF ends the line).
CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f]")
LINE_LIMIT = 1 << 16  # bytes of a command line: a few words, a comment


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
        self.game = SingleGame(agent.env)  # init and step compiled once (op by op: seconds)
        self.history: list[GoState] = []
        self.inserted: list[bool] = []  # per history entry: a pass the engine inserted
        self.clear_board()

    @property
    def env(self) -> Go:
        return typing.cast(Go, self.agent.env)  # a Go env: checked in __init__, kept by komi

    @property
    def state(self) -> GoState:
        return self.history[-1]

    # ------------------------------------------------------------------ commands
    def clear_board(self) -> str:
        self.history = [typing.cast(GoState, self.game.init(jax.random.key(0)))]
        self.inserted = [False]
        self._forget_trees()
        return ""

    def _forget_trees(self) -> None:
        """Empty search trees (with ``reuse_tree``): a new game, or new rules (komi)."""
        batch = batch_of_one(self.state)
        reuse = self.player.reuses_tree
        self.trees = self.player.empty_trees(batch, self.agent.params) if reuse else None

    def boardsize(self, text: str) -> str:
        if not _is_int(text):
            raise GtpError("boardsize not an integer")
        if text.lstrip("0") != str(self.env.size):  # no int(): it refuses 5000 digits
            raise GtpError("unacceptable size")
        return self.clear_board()

    def komi(self, text: str) -> str:
        try:
            if not text.isascii() or "_" in text:  # float() takes "\u0663.\u0665", "3_5"
                raise ValueError(text)
            komi = float(text)
        except ValueError:
            raise GtpError("komi not a float") from None
        if not math.isfinite(komi):
            raise GtpError("komi must be a finite number")
        points = self.env.size**2  # a margin beyond it cannot change a result, and 1e308
        if abs(komi) > points:  # would be inf in the float32 score
            raise GtpError(f"komi must be between -{points} and {points} (the board's points)")
        if komi != self.env.komi:
            env = Go(self.env.size, komi=komi, history=self.env.history)
            self.agent = self.agent.with_env(env)
            self.player = self.player.replace(env=env)
            self.game = SingleGame(env)
            self._forget_trees()
        return ""

    def _step(self, action: int, inserted: bool = False) -> None:
        self.history.append(typing.cast(GoState, self.game.step(self.state, action)))
        self.inserted.append(inserted)
        if self.trees is not None:  # a tree whose root is not the next position is not used
            self.trees = self.player.jitted_carry(self.trees, jnp.full((1,), action, jnp.int32))

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
            if not vertex.isascii():  # gtp_to_action reads Unicode digits as a row
                raise ValueError(vertex)
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
        batch = batch_of_one(self.state)
        _, value = self.agent.evaluate(batch)
        if float(value[0]) < self.resign_threshold:
            return "resign"
        self.key, k_act = jax.random.split(self.key)
        if self.trees is None:
            action = int(self.player.jitted(self.agent.params, batch, k_act)[0])
        else:  # the search goes on from the tree of the moves so far (reuse_tree)
            actions, self.trees = self.player.jitted_act(
                self.agent.params, batch, self.trees, k_act
            )
            action = int(actions[0])
        self._step(action)
        return action_to_gtp(action, self.env.size)

    def lz_analyze(self, args: Sequence[str]) -> str:
        """One search from the position (for ``colour`` to move, a pass inserted for the
        other if needed, nothing played) as Leela Zero's ``info`` line: what follows the
        open reply's ``=`` line (module doc); empty when the game is over."""
        colour = _analyze_tags(args)
        state = self.state
        if bool(state.terminated | state.truncated):
            return ""
        if colour is not None and int(state.current_player) != colour:
            if int(state.passes) > 0:
                raise GtpError("out of turn: a pass for the other colour would end the game")
            state = typing.cast(GoState, self.game.step(state, self.env.size**2))
        self.key, key = jax.random.split(self.key)
        root = analyze_position(self.player, self.agent.params, state, key)
        return " ".join(self._info(root, move, order) for order, move in enumerate(_order(root)))

    def _info(self, root: RootAnalysis, move: int, order: int) -> str:
        """One move's ``info`` entry: win rate and prior in ten-thousandths, for the side to
        move (Q in [-1, 1] read as a win rate), and the line the search expects after it."""
        winrate = round(float(np.clip((1 + root.q[move]) / 2, 0, 1)) * 10000)
        pv = principal_variation(root, self.env, PV_DEPTH, first=move)
        return (
            f"info move {action_to_gtp(move, self.env.size)} visits {int(root.visits[move])} "
            f"winrate {winrate} prior {round(float(root.prior[move]) * 10000)} "
            f"order {order} pv {' '.join(pv)}"
        )

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
        with_args: dict[str, tuple[int, Callable[..., str]]] = {
            "known_command": (1, lambda a: "true" if a in COMMANDS else "false"),
            "boardsize": (1, self.boardsize),
            "komi": (1, self.komi),
            "play": (2, self.play),
            "genmove": (1, self.genmove),
        }
        if name == ANALYSIS:
            return self.lz_analyze(args)
        if name in simple:
            return simple[name]()
        if name in with_args:
            count, handler = with_args[name]
            if len(args) < count:
                raise GtpError(f"syntax error: {name} needs {count} argument(s)")
            return handler(*args[:count])
        raise GtpError("unknown command")

    def respond(self, line: str) -> tuple[str | None, bool]:
        """(response text or None for a blank line, whether the session ends). The line
        is preprocessed as GTP 2 says: control characters but HT dropped, a ``#`` comment
        cut, HT read as a space; words are separated by spaces; an id is ASCII digits.
        An analysis's text ends with one newline, not two: the reply is still open
        (:meth:`serve` ends it when the next command comes)."""
        line = CONTROL.sub("", line).split("#", 1)[0].replace("\t", " ")
        words = [word for word in line.split(" ") if word]
        if not words:
            return None, False
        ident = ""
        if _is_int(words[0]):
            ident, words = words[0], words[1:]
        if not words:
            return f"?{ident} empty command\n\n", False
        name, args = _ascii_lower(words[0]), words[1:]
        try:
            result = self.execute(name, args)
        except GtpError as error:
            return f"?{ident} {error}\n\n", False
        if name == ANALYSIS:
            return f"={ident}\n{result}\n" if result else f"={ident}\n", False
        sep = "" if not result or result.startswith("\n") else " "
        return f"={ident}{sep}{result}\n\n", name == "quit"

    def serve(self, stdin: TextIO | BinaryIO, stdout: TextIO | BinaryIO) -> None:
        """Answer the commands on ``stdin`` until ``quit`` or the end of input. The engine
        reads bytes (``stdin.buffer`` when ``stdin`` is a text stream over one, as
        ``sys.stdin`` is, which would decode strictly) and decodes each line itself, an
        undecodable byte becoming U+FFFD (so garbage is an unknown command); replies go
        out ASCII, to a text or a binary ``stdout``. A line longer than
        :data:`LINE_LIMIT` is answered with an error, not read whole."""
        open_reply = False  # an analysis, ended by the next command (module doc)
        for line, whole in _lines(stdin):
            if open_reply:
                _write(stdout, "\n")
                open_reply = False
            response, done = self.respond(line) if whole else (_too_long(line), False)
            if response is not None:
                _write(stdout, response)
                open_reply = not response.endswith("\n\n")
            if done:
                return
        if open_reply:  # the input ended: so does the analysis
            _write(stdout, "\n")


def _lines(stream: TextIO | BinaryIO) -> Iterator[tuple[str, bool]]:
    """(line, whether it is whole) for each line of ``stream``, read :data:`LINE_LIMIT`
    at a time: a longer line gives its first piece and False, the rest read past."""
    source = getattr(stream, "buffer", stream)
    while line := source.readline(LINE_LIMIT + 1):
        whole = len(line) <= LINE_LIMIT or line[-1:] in (b"\n", "\n")
        if not whole:
            while (rest := source.readline(LINE_LIMIT)) and rest[-1:] not in (b"\n", "\n"):
                pass  # the rest of the line, a piece at a time
        yield line.decode("utf-8", errors="replace") if isinstance(line, bytes) else line, whole


def _too_long(start: str) -> str:
    """The error for a command line longer than :data:`LINE_LIMIT` that starts with
    ``start`` (its id, if it has one, answered)."""
    words = CONTROL.sub("", start).replace("\t", " ").split(" ", 1)
    ident = words[0] if _is_int(words[0]) else ""
    return f"?{ident} command line longer than {LINE_LIMIT} bytes\n\n"


def _write(stream: TextIO | BinaryIO, text: str) -> None:
    data = text.encode("ascii", errors="replace")
    if isinstance(stream, io.RawIOBase | io.BufferedIOBase):
        stream.write(data)
    else:  # not a binary stream: a text one
        typing.cast(TextIO, stream).write(data.decode("ascii"))
    stream.flush()


def _is_int(word: str) -> bool:
    """An unsigned integer in ASCII digits (str.isdigit alone also takes "\u0661", "\u00b2")."""
    return word.isascii() and word.isdigit()


def _ascii_lower(word: str) -> str:
    """``word`` lowercased if it is ASCII (Unicode lowercases the Kelvin sign to k)."""
    return word.lower() if word.isascii() else word


def _order(root: RootAnalysis) -> list[int]:
    """The moves the search visited, the chosen one first, then as the analysis table
    lists them: an analysis's ``order``."""
    rest = [a for a in most_visited_first(root) if a != root.chosen and root.visits[a] > 0]
    return [root.chosen, *rest]


def _analyze_tags(args: Sequence[str]) -> int | None:
    """The colour of ``lz-analyze [colour] [interval] [interval N]`` (None: the side to
    move); the interval is checked and read past (module doc). Leela Zero's other tags
    (avoid, allow, minmoves...) ask for what this engine cannot do: refused."""
    words = list(args)
    colour = _colour(words.pop(0)) if words and _ascii_lower(words[0]) in COLOURS else None
    if words and words[0] == "interval":
        words.pop(0)
    if words and _is_int(words[0]):
        words.pop(0)
    if words:
        raise GtpError(f"cannot parse analyze tags: {words[0][:40]} is not a colour or interval")
    return colour


def _colour(text: str) -> int:
    colour = COLOURS.get(_ascii_lower(text))
    if colour is None:
        raise GtpError("invalid color")
    return colour


# ---------------------------------------------------------------------- referee
