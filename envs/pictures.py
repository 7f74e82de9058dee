"""States as pictures: SVG drawings of boards, for notebooks, reports and the web.

    env.to_svg(state)            # one state: an SVG document (str)
    env.picture(states)          # one state or a batch, displayed by Jupyter; .save(path)

A game gets its picture in one of three ways (:meth:`envs.Env.to_svg`):

* a grid game declares its board (:meth:`envs.Env.grid` returning a :class:`Grid`: who
  holds each cell, and how pieces look) and is drawn by :func:`grid_svg`;
* a game draws itself (it overrides ``to_svg``: star_duel's hands and trade row, pgx's
  games through pgx's own drawings);
* any other game is its text picture (``render``) as an SVG of monospace lines.

Every picture is a standalone SVG document (no scripts, no external references), which
:func:`check_svg` (and ``envs.check_env``) parses.
"""

from __future__ import annotations

import dataclasses
import html
import re
import xml.etree.ElementTree as ElementTree
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

import numpy as np

SVG_NS = "http://www.w3.org/2000/svg"
INK = "#222"
PLAYERS = ("#1a1a1a", "#f4f4f4")  # player 0's pieces, player 1's (black, white)
DISCS = ("#d33c3c", "#e8c31c")  # Connect Four's red and yellow
BOARD = {"marks": "#fafafa", "discs": "#2a5db0", "stones": "#dcb35c"}


@dataclasses.dataclass(frozen=True)
class Grid:
    """A board of rows × columns cells, as a grid game declares it for its picture.

    Attributes:
        cells: int [rows, cols], row 0 at the top: 0 an empty cell, k > 0 a piece of
            player k - 1.
        style: ``"marks"`` (pieces drawn as ``marks`` in squares: tic-tac-toe),
            ``"discs"`` (coloured discs in a frame's holes: Connect Four) or
            ``"stones"`` (black and white stones on the lines' intersections: Go).
        marks: each player's mark, for ``"marks"``.
        column_labels: a label under each column (``()``: none).
        row_labels: a label left of each row, top row first (``()``: none).
        highlight: (row, column) cells to ring, such as the last move.
        action_cells: int [A, 2], the (row, column) each action plays in this state, (-1,
            -1) for an action without a cell (a pass); None: actions are not cells. A
            search's statistics are drawn on these cells (``overlay`` of :func:`grid_svg`).
    """

    cells: np.ndarray
    style: Literal["marks", "discs", "stones"] = "discs"
    marks: tuple[str, ...] = ("X", "O")
    column_labels: Sequence[str] = ()
    row_labels: Sequence[str] = ()
    highlight: Sequence[tuple[int, int]] = ()
    action_cells: np.ndarray | None = None


def player_names(grid: Grid) -> tuple[str, ...]:
    """The players as a person sees them on ``grid``'s board, player 0 first: the colour
    of their discs (Red, Yellow) or stones (Black, White), or their marks (X, O)."""
    if grid.style == "discs":
        return ("Red", "Yellow")
    if grid.style == "stones":
        return ("Black", "White")
    return tuple(grid.marks)


def grid_svg(
    grid: Grid,
    caption: str = "",
    cell: int = 40,
    overlay: Mapping[int, tuple[float, Sequence[str]]] | None = None,
    targets: Sequence[int] = (),
) -> str:
    """A grid game's board as SVG, and a search's statistics on it.

    Args:
        grid: the board (:class:`Grid`).
        caption: a line under the board ("" for none).
        cell: the side of a cell, in pixels.
        overlay: action -> (heat in [0, 1], up to two short lines), drawn on the action's
            cell (``grid.action_cells``): a square shaded by the heat and the lines in it.
        targets: actions to make clickable: each one's cell gets a transparent square,
            ``<rect class="move" data-action="A">``, on top (the web board's click targets;
            actions without a cell get none).

    Returns:
        One SVG document.
    """
    rows, cols = np.shape(grid.cells)
    left = cell * 0.7 if grid.row_labels else cell * 0.2
    top = cell * 0.2
    width, height = left + cols * cell + cell * 0.2, top + rows * cell
    body = [_rect(left, top, cols * cell, rows * cell, BOARD[grid.style], rx=6)]
    centre = lambda r, c: (left + (c + 0.5) * cell, top + (r + 0.5) * cell)  # noqa: E731
    if grid.style == "stones":  # lines through the cells' centres
        for r in range(rows):
            (x0, y), (x1, _) = centre(r, 0), centre(r, cols - 1)
            body.append(_line(x0, y, x1, y))
        for c in range(cols):
            (x, y0), (_, y1) = centre(0, c), centre(rows - 1, c)
            body.append(_line(x, y0, x, y1))
    elif grid.style == "marks":
        for k in range(1, cols):
            body.append(_line(left + k * cell, top, left + k * cell, top + rows * cell))
        for k in range(1, rows):
            body.append(_line(left, top + k * cell, left + cols * cell, top + k * cell))
    for r in range(rows):
        for c in range(cols):
            body.append(_piece(grid, int(grid.cells[r][c]), *centre(r, c), cell))
    for action, (heat, lines) in (overlay or {}).items():
        if grid.action_cells is None or min(grid.action_cells[action]) < 0:
            continue  # a pass, or actions that are not cells
        x, y = centre(*(int(v) for v in grid.action_cells[action]))
        body.append(f'<rect x="{x - cell * 0.46:.1f}" y="{y - cell * 0.46:.1f}" '
                    f'width="{cell * 0.92:.1f}" height="{cell * 0.92:.1f}" rx="4" fill="#e0402a" '
                    f'fill-opacity="{0.12 + 0.68 * min(max(heat, 0.0), 1.0):.2f}"/>')  # fmt: skip
        for k, line in enumerate(lines[:2]):
            dy = (k - (len(lines[:2]) - 1) / 2) * cell * 0.3 + cell * 0.1
            body.append(_text(x, y + dy, line, cell * 0.26))
    for r, c in grid.highlight:
        x, y = centre(r, c)
        body.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{cell * 0.44:.1f}" fill="none" '
                    f'stroke="#e03" stroke-width="3"/>')  # fmt: skip
    for action in targets:
        if grid.action_cells is None or min(grid.action_cells[action]) < 0:
            continue
        x, y = centre(*(int(v) for v in grid.action_cells[action]))
        body.append(f'<rect class="move" data-action="{int(action)}" x="{x - cell / 2:.1f}" '
                    f'y="{y - cell / 2:.1f}" width="{cell}" height="{cell}" fill="#fff" '
                    f'fill-opacity="0" cursor="pointer"/>')  # fmt: skip
    size = cell * 0.35
    for c, label in enumerate(grid.column_labels):
        x, _ = centre(0, c)
        body.append(_text(x, height + size, label, size))
    for r, label in enumerate(grid.row_labels):
        _, y = centre(r, 0)
        body.append(_text(left / 2, y + size / 3, label, size))
    height += size * 1.6 if grid.column_labels else 0
    return _document(width, height, body, caption)


def cards_svg(
    header: Sequence[str], rows: Sequence[tuple[str, Sequence[str]]], caption: str = ""
) -> str:
    """A card game's picture: lines of text, then labelled rows of cards.

    Args:
        header: the lines at the top (scores, whose turn).
        rows: (label, the cards' names) per row; a row without cards shows a dash.
        caption: a line under the picture ("" for none).

    Returns:
        One SVG document.
    """
    size, card_w, card_h, label_w = 13, 96, 34, 90
    body = [_text(8, size * 1.4 * (i + 1), line, size, anchor="start")
            for i, line in enumerate(header)]  # fmt: skip
    y = size * 1.4 * len(header) + 10
    widest = 1
    for label, cards in rows:
        body.append(_text(8, y + card_h / 2 + size / 3, label, size, anchor="start"))
        for k, card in enumerate(cards or ["-"]):
            x = label_w + k * (card_w + 6)
            fill = "#eef3fb" if cards else "none"
            body.append(_rect(x, y, card_w, card_h, fill, rx=5) if cards else "")
            body.append(_text(x + card_w / 2, y + card_h / 2 + size / 3, card, size * 0.9))
        widest = max(widest, len(cards))
        y += card_h + 8
    return _document(label_w + widest * (card_w + 6) + 8, y + 4, body, caption)


def text_svg(text: str, caption: str = "", size: int = 14) -> str:
    """A text picture (``Env.render``'s) as SVG, its lines in a monospace font.

    Args:
        text: the lines.
        caption: a line under the picture ("" for none).
        size: the font size, in pixels.

    Returns:
        One SVG document.
    """
    lines = text.splitlines() or [""]
    width = size * 0.62 * max(len(line) for line in lines) + size
    height = size * 1.3 * len(lines) + size * 0.5
    body = [
        f'<text x="{size / 2:.1f}" y="{size * (1.3 * (i + 1)):.1f}" font-family="monospace" '
        f'font-size="{size}" xml:space="preserve" fill="{INK}">{html.escape(line)}</text>'
        for i, line in enumerate(lines)
    ]
    return _document(width, height, body, caption)


def tile(svgs: Sequence[str], columns: int = 4, gap: int = 12) -> str:
    """Several pictures side by side (a batch of states).

    Args:
        svgs: the pictures, each one SVG document.
        columns: pictures a row.
        gap: pixels between them.

    Returns:
        One SVG document holding them all.
    """
    sizes = [svg_size(svg) for svg in svgs]
    columns = max(1, min(columns, len(svgs)))
    cell_w = max(w for w, _ in sizes) + gap
    rows = [sizes[k : k + columns] for k in range(0, len(svgs), columns)]
    tops = np.cumsum([0] + [max(h for _, h in row) + gap for row in rows])  # a row: its tallest
    body = []
    for i, svg in enumerate(svgs):
        x, y = (i % columns) * cell_w, tops[i // columns]
        inner = re.sub(r"^<svg ", f'<svg x="{x:.1f}" y="{y:.1f}" ', svg.strip(), count=1)
        body.append(inner)
    return _document(columns * cell_w, float(tops[-1]), body, "")


def check_svg(svg: str) -> None:
    """Check a picture: one well-formed SVG document, with a size and no script.

    Args:
        svg: the picture.

    Raises:
        AssertionError: naming what is wrong.
    """
    assert isinstance(svg, str) and svg.strip(), "the picture is empty"
    try:
        root = ElementTree.fromstring(svg)
    except ElementTree.ParseError as error:
        raise AssertionError(f"the picture is not well-formed XML: {error}") from None
    assert root.tag == f"{{{SVG_NS}}}svg", f"the picture's root is {root.tag}, not an <svg>"
    width, height = svg_size(svg)
    assert width > 0 and height > 0, f"the picture has no size ({width} x {height})"
    assert "<script" not in svg, "a picture holds no script"


@dataclasses.dataclass(frozen=True)
class Picture:
    """An SVG picture that Jupyter displays (``_repr_svg_``) and ``save`` writes."""

    svg: str

    def _repr_svg_(self) -> str:
        return self.svg

    def save(self, path: str | Path) -> Path:
        """Write the picture.

        Args:
            path: the file to write (an ``.svg``).

        Returns:
            ``path``.
        """
        path = Path(path)
        path.write_text(self.svg)
        return path


def _piece(grid: Grid, owner: int, x: float, y: float, cell: int) -> str:
    """The piece of player ``owner - 1`` (or an empty cell's look) centred at (x, y)."""
    radius = cell * 0.4
    if grid.style == "discs":
        fill = DISCS[owner - 1] if owner else "#fff"
        return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{radius:.1f}" fill="{fill}" stroke="{INK}"/>'
    if owner == 0:
        return ""
    if grid.style == "stones":
        fill = PLAYERS[(owner - 1) % 2]
        return (f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{radius * 1.1:.1f}" fill="{fill}" '
                f'stroke="{INK}"/>')  # fmt: skip
    return _text(x, y + cell * 0.2, grid.marks[(owner - 1) % len(grid.marks)], cell * 0.6)


def _document(width: float, height: float, body: list[str], caption: str) -> str:
    size = 13
    if caption:
        width = max(width, size * 0.6 * len(caption) + size)
        body = [*body, _text(width / 2, height + size * 1.2, caption, size)]
        height += size * 1.8
    return (
        f'<svg xmlns="{SVG_NS}" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}">' + "".join(body) + "</svg>"
    )


def svg_size(svg: str) -> tuple[float, float]:
    """The width and height the root <svg> declares (its unit dropped: px, pt, ...), or
    its viewBox's; (0, 0) when it declares neither."""
    head = re.search(r"<svg\b[^>]*>", svg)
    tag = head.group(0) if head else ""
    width, height = (re.search(rf'\s{name}="([\d.]+)[a-z]*"', tag) for name in ("width", "height"))
    if width and height:
        return float(width.group(1)), float(height.group(1))
    box = re.search(r'\sviewBox="[\d.+-]+[ ,]+[\d.+-]+[ ,]+([\d.]+)[ ,]+([\d.]+)"', tag)
    return (float(box.group(1)), float(box.group(2))) if box else (0.0, 0.0)


def _rect(x: float, y: float, w: float, h: float, fill: str, rx: float = 0) -> str:
    return (f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" rx="{rx}" '
            f'fill="{fill}" stroke="{INK}"/>')  # fmt: skip


def _line(x0: float, y0: float, x1: float, y1: float) -> str:
    return f'<line x1="{x0:.1f}" y1="{y0:.1f}" x2="{x1:.1f}" y2="{y1:.1f}" stroke="{INK}"/>'


def _text(x: float, y: float, text: str, size: float, anchor: str = "middle") -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-family="sans-serif" font-size="{size:.0f}" '
            f'text-anchor="{anchor}" fill="{INK}">{html.escape(text)}</text>')  # fmt: skip
