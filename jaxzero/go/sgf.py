"""SGF (FF[4], GM[1]) game records for Go: write games, read them back for analysis.

Reading is done by sgfmill (``sgfmill.sgf``), so property values may hold any text
(``;``, ``(``, ``)``, escaped ``]``) and a file cut short is refused, not read as its
readable prefix. Only the main line is read, and only what a Go position needs: board
size (square boards only), komi, setup stones in the root node (AB/AW, compressed point
lists included; overlapping stones are refused), and then alternating B/W moves. Moves in
the root node, setup stones after it and two moves in one node are refused with a reason.

Coordinates: SGF's ``aa`` is the top-left point, which is action 0 in ``envs.go``
(row-major from the top-left); an empty move ``B[]`` (or ``tt`` on boards up to 19x19) is
a pass. Text values (PB, PW, RE) are SGF SimpleText: a line break or tab in a name is read
back as a space.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

import numpy as np
from sgfmill import sgf, sgf_grammar, sgf_properties

from envs.go import Go, GoState, action_to_gtp

LETTERS = "abcdefghijklmnopqrstuvwxyz"  # SGF point letters; sgfmill reads boards up to 26


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
    """The record as SGF text (``read_sgf`` reads it back as the same record)."""
    n = record.size
    komi = repr(float(record.komi)).removesuffix(".0")  # exact, and "7" rather than "7.0"
    header = f"(;FF[4]GM[1]CA[UTF-8]AP[jaxzero]SZ[{n}]KM[{komi}]RU[Chinese]"
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
    if record.first == 1:
        header += "PL[W]"  # White to play, even when there are no moves to say so
    colour = record.first
    nodes = []
    for action in record.moves:
        nodes.append(f";{'BW'[colour]}[{_point(action, n)}]")
        colour = 1 - colour
    return header + "".join(nodes) + ")\n"


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("]", "\\]")


_START = re.compile(r"\ufeff?\s*\(\s*;")  # a byte-order mark may come first


def read_sgf(text: str) -> GoRecord:
    """Parse the main line of a Go SGF record; SgfError with a one-line reason when it is
    not one this module can read (see the module docstring)."""
    if not _START.match(text):
        raise SgfError("not an SGF record: it must start with '(;'")
    try:
        game = sgf.Sgf_game.from_string(text)
    except ValueError as error:  # UnicodeEncodeError (a lone surrogate) included
        raise SgfError(_parse_failure(text, error)) from None
    root, *nodes = game.get_main_sequence()
    size = game.get_size()
    gm = _property(root, "GM", 1, "not a Go record")
    if gm != 1:
        raise SgfError(f"not a Go record (GM[{gm}])")
    if root.get_raw_move()[0] is not None:
        raise SgfError("moves in the root node are not supported")
    moves, colours = _moves(nodes, size)
    black_setup, white_setup = _setup(root, size)
    empty_komi = root.has_property("KM") and root.get_raw("KM").strip() == b""
    komi = 0.0 if empty_komi else _property(root, "KM", 0.0)  # KM[] as no komi
    to_play = _property(root, "PL", "b")
    return GoRecord(
        size=size,
        komi=komi,
        moves=moves,
        first=colours[0] if colours else int(to_play == "w"),
        black_setup=black_setup,
        white_setup=white_setup,
        result=_property(root, "RE", ""),
        black=_property(root, "PB", ""),
        white=_property(root, "PW", ""),
    )


def _property(node: sgf.Node, name: str, default, reason: str = ""):
    """``name``'s value as sgfmill interprets it, ``default`` when the node lacks it."""
    if not node.has_property(name):
        return default
    try:
        return node.get(name)
    except ValueError:
        given = name + "".join(f"[{_show(raw)}]" for raw in node.get_raw_list(name)[:3])
        raise SgfError(f"{reason or 'bad ' + name + ' property'} ({given})") from None


def _show(raw: bytes) -> str:
    """A raw value for a one-line message: short, control characters escaped."""
    text = raw.decode("utf-8", "replace")
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return text if len(text) <= 20 else text[:17] + "..."


def _action(point: tuple[int, int] | None, size: int) -> int:
    """sgfmill's (row, col), row 0 at the BOTTOM (GTP's), or None (a pass) -> action."""
    if point is None:
        return size * size
    row, col = point
    return (size - 1 - row) * size + col


def _moves(nodes: Sequence[sgf.Node], size: int) -> tuple[list[int], list[int]]:
    """The moves of the main line after the root and who played each (0 Black, 1 White)."""
    moves: list[int] = []
    colours: list[int] = []
    for node in nodes:
        if node.has_setup_stones():
            raise SgfError(
                f"setup stones (AB/AW/AE) after move {len(moves)} are not supported; "
                "only the root node may have them"
            )
        if node.has_property("B") and node.has_property("W"):
            raise SgfError(f"move {len(moves) + 1}: a node with both a B and a W move")
        colour, raw = node.get_raw_move()
        if colour is None:
            continue
        try:
            point = node.get_move()[1]
        except ValueError:
            where = f"move {len(moves) + 1}: {_show(raw)!r}"
            raise SgfError(f"{where} is not a point on a {size}x{size} board") from None
        moves.append(_action(point, size))
        colours.append(int(colour == "w"))
    for k in range(1, len(colours)):
        if colours[k] == colours[k - 1]:
            raise SgfError(f"move {k + 1} repeats a colour; only alternating games load")
    return moves, colours


def _setup(root: sgf.Node, size: int) -> tuple[list[int], list[int]]:
    """The root's AB and AW points in file order (a rectangle ``aa:bb`` row by row).
    SgfError naming the first point given twice (in one list, or in two of AB/AW/AE)."""
    stones: dict[str, list[int]] = {"AB": [], "AW": [], "AE": []}
    seen = set()
    for name, points in stones.items():
        values = root.get_raw_list(name) if root.has_property(name) else []
        if values == [b""]:
            continue  # an empty list, AB[]
        for raw in values:
            try:
                square = sgf_properties.interpret_point_list([raw], root.get_presenter())
            except ValueError:
                reason = f"{name}: {_show(raw)!r} is not a point or a rectangle of points"
                raise SgfError(f"{reason} on a {size}x{size} board") from None
            for action in sorted(_action(p, size) for p in square):
                if action in seen:
                    where = _point(action, size)
                    raise SgfError(f"setup stones overlap at {where} (given twice in AB/AW/AE)")
                seen.add(action)
                points.append(action)
    return stones["AB"], stones["AW"]


def _parse_failure(text: str, error: ValueError) -> str:
    """A one-line reason for sgfmill's ``error`` on ``text``."""
    if isinstance(error, UnicodeDecodeError | UnicodeEncodeError):
        return f"the text is not valid Unicode ({error.reason})"
    message = str(error)
    data = text.encode("utf-8")
    if message.startswith(("bad SZ property", "size out of range")):
        size = _show(sgf_grammar.parse_sgf_game(data).sequence[0]["SZ"][0])
        if ":" in size:
            return f"SZ[{size}]: non-square boards are not supported"
        return f"SZ[{size}]: the board size must be a number from 1 to 26"
    if message == "unexpected end of SGF data":
        _, end = sgf_grammar.tokenise(data)
        rest = data[end:].strip()
        if rest.startswith(b"["):
            return "the SGF record is truncated: it ends inside a property value"
        if not rest:
            return "the SGF record is truncated: it ends before its game tree is closed"
        line = data.count(b"\n", 0, end) + 1
        return f"malformed SGF: cannot read {_show(rest)!r} (line {line})"
    return f"malformed SGF: {message}"


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
