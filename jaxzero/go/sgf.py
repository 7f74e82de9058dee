"""SGF (FF[4], GM[1]) game records for Go: write games, read them back for analysis.

Only the main line is read; setup stones (AB/AW) are supported so that positions from
other programs load. Coordinates: SGF's ``aa`` is the top-left point, which is action 0
in ``envs.go`` (row-major from the top-left); an empty move ``B[]`` (or ``tt`` on boards
up to 19x19) is a pass.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

import numpy as np

from envs.go import Go, GoState, action_to_gtp

LETTERS = "abcdefghijklmnopqrs"


class SgfError(ValueError):
    """The text is not an SGF Go record this module can read."""


@dataclasses.dataclass(frozen=True)
class GoRecord:
    size: int
    komi: float
    moves: list[int]  # actions in envs.go numbering, alternating from ``first``
    first: int = 0  # 0 Black, 1 White: who plays moves[0]
    black_setup: list[int] = dataclasses.field(default_factory=list)  # points
    white_setup: list[int] = dataclasses.field(default_factory=list)
    result: str = ""  # e.g. "B+3.5", "W+R"
    black: str = ""
    white: str = ""


def _point(action: int, size: int) -> str:
    if action == size * size:
        return ""
    row, col = divmod(action, size)
    return LETTERS[col] + LETTERS[row]


def write_sgf(record: GoRecord) -> str:
    """The record as SGF text."""
    n = record.size
    header = f"(;FF[4]GM[1]CA[UTF-8]AP[jaxzero]SZ[{n}]KM[{record.komi:g}]RU[Chinese]"
    if record.black:
        header += f"PB[{_escape(record.black)}]"
    if record.white:
        header += f"PW[{_escape(record.white)}]"
    if record.result:
        header += f"RE[{_escape(record.result)}]"
    if record.black_setup:
        header += "AB" + "".join(f"[{_point(p, n)}]" for p in record.black_setup)
    if record.white_setup:
        header += "AW" + "".join(f"[{_point(p, n)}]" for p in record.white_setup)
    colour = record.first
    nodes = []
    for action in record.moves:
        nodes.append(f";{'BW'[colour]}[{_point(action, n)}]")
        colour = 1 - colour
    return header + "".join(nodes) + ")\n"


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("]", "\\]")


_PROPERTY = re.compile(r"([A-Z]+)((?:\s*\[(?:\\.|[^\]\\])*\])+)", re.S)
_VALUE = re.compile(r"\[((?:\\.|[^\]\\])*)\]", re.S)


def read_sgf(text: str) -> GoRecord:
    """Parse the main line of a Go SGF record; SgfError with a reason when it is not one."""
    text = text.strip()
    if not text.startswith("(") or ";" not in text:
        raise SgfError("not an SGF record: it must start with '(;'")
    flat = _main_line(text[1:])
    nodes = [_properties(node) for node in flat.split(";")[1:]]
    if not nodes:
        raise SgfError("the SGF record has no nodes")
    root = nodes[0]
    if root.get("GM", ["1"])[0] != "1":
        raise SgfError(f"not a Go record (GM[{root['GM'][0]}])")
    try:
        size = int(root.get("SZ", ["19"])[0].split(":")[0])
        komi = float(root.get("KM", ["0"])[0] or 0)
    except ValueError as error:
        raise SgfError(f"bad SZ or KM property ({error})") from None

    def point(value: str, where: str) -> int:
        if value == "" or (value == "tt" and size <= 19):
            return size * size
        if len(value) != 2 or any(c not in LETTERS[:size] for c in value):
            raise SgfError(f"{where}: {value!r} is not a point on a {size}x{size} board")
        return LETTERS.index(value[1]) * size + LETTERS.index(value[0])

    moves, colours = [], []
    for i, node in enumerate(nodes):
        for colour, name in ((0, "B"), (1, "W")):
            if name in node:
                moves.append(point(node[name][0], f"move {len(moves) + 1}"))
                colours.append(colour)
        if i == 0 and moves:
            raise SgfError("moves in the root node are not supported")
    for k in range(1, len(colours)):
        if colours[k] == colours[k - 1]:
            raise SgfError(f"move {k + 1} repeats a colour; only alternating games load")
    return GoRecord(
        size=size,
        komi=komi,
        moves=moves,
        first=colours[0] if colours else int(root.get("PL", ["B"])[0].upper() == "W"),
        black_setup=[point(v, "AB") for v in root.get("AB", [])],
        white_setup=[point(v, "AW") for v in root.get("AW", [])],
        result=root.get("RE", [""])[0],
        black=root.get("PB", [""])[0],
        white=root.get("PW", [""])[0],
    )


def _main_line(body: str) -> str:
    """The node text of the main line. A game tree is ``( nodes {subtrees} )``, so the main
    line continues into the first subtree and ends where that subtree closes: drop each
    '(' and stop at the first ')' (bracketed values are copied verbatim)."""
    out, i = [], 0
    while i < len(body):
        char = body[i]
        if char == "[":
            end = i + 1
            while end < len(body) and body[end] != "]":
                end += 2 if body[end] == "\\" else 1
            out.append(body[i : end + 1])
            i = end + 1
            continue
        if char == ")":
            break
        if char != "(":
            out.append(char)
        i += 1
    return "".join(out)


def _properties(node: str) -> dict[str, list[str]]:
    props: dict[str, list[str]] = {}
    for name, values in _PROPERTY.findall(node):
        props[name] = [v.replace("\\]", "]").replace("\\\\", "\\") for v in _VALUE.findall(values)]
    return props


def record_from_moves(
    moves: Sequence[int],
    *,
    size: int,
    komi: float,
    result: str = "",
    black: str = "",
    white: str = "",
) -> GoRecord:
    return GoRecord(
        size=size, komi=komi, moves=list(moves), result=result, black=black, white=white
    )


def area_result(black: int, white: int, komi: float) -> str:
    """``RE`` of a game scored by area (each side's stones and territory; White adds
    ``komi``): ``B+3.5``, ``W+0.5``, or ``0`` for a draw."""
    margin = black - white - komi
    if margin > 0:
        return f"B+{margin:g}"
    if margin < 0:
        return f"W+{-margin:g}"
    return "0"


def to_state(env: Go, record: GoRecord) -> GoState:
    """The position at the end of ``record``'s main line, for analysis or play."""
    n = env.size
    if record.size != n:
        raise SgfError(f"the record is {record.size}x{record.size}; this env is {n}x{n}")
    board = np.zeros(n * n, np.int8)  # the empty board is env.init's position
    board[record.black_setup] = 1
    board[record.white_setup] = -1
    try:
        state = env.from_board(board.reshape(n, n), to_play=record.first)
    except ValueError as error:
        raise SgfError(f"setup stones: {error}") from None
    try:  # GTP coordinates, so that an illegal move is named as Go players name it
        return env.state_from_moves([action_to_gtp(m, n) for m in record.moves], state)
    except ValueError as error:
        raise SgfError(str(error)) from None
