"""A GTP referee: two Go engines (subprocesses) driven through whole games and scored.

    ours, gnu = GtpClient(["jaxzero", "gtp", "--checkpoint", "runs/go_6x6"]), GtpClient(gnugo)
    result = play_match(ours, gnu, size=6, komi=3.5)

A tool of ``experiments/gnugo_match.py`` and the GTP test, not part of the package:
the engine side is ``jaxzero.go.gtp``.
"""

from __future__ import annotations

import dataclasses
import subprocess
from collections.abc import Sequence

from jaxzero.go.gtp import GtpError

# GNU Go's flags for our rules (envs.go): area scoring and positional superko (suicide is
# forbidden by default). Without them GNU Go plays and scores by Japanese rules, where
# moves inside one's own territory and captured stones change the score.
GNUGO_RULES = ("--chinese-rules", "--positional-superko")


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
