"""The root of one search: its numbers per move, as a table, a Graphviz tree and a picture.

    root = analyze_position(agent.search_player(), agent.params, state, key)
    print(format_root(root, env))                # prior, visits, Q per legal move
    Path("tree.dot").write_text(tree_to_dot(root.tree, env))
    analysis = Analysis(env, state, root)         # Jupyter shows the board and the numbers
    analysis.save("root.svg")

All values are from the point of view of the player to move at the node in question;
an edge's Q is ``reward + discount * value(child)`` from its parent's mover's view
(mctx's convention, see :mod:`jaxzero.core.search`).
"""

from __future__ import annotations

import dataclasses
import html
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jax
import mctx
import numpy as np

from envs import pictures
from envs.core import Env, State, caption
from jaxzero.core.single_game import batch_of_one
from jaxzero.measure.players import SearchPlayer

Array = jax.Array


@dataclasses.dataclass(frozen=True)
class RootAnalysis:
    """The root of one search (host arrays, A = actions)."""

    tree: mctx.Tree  # batch of one
    legal: np.ndarray  # bool [A]
    prior: np.ndarray  # float [A]  softmax of the masked network logits
    visits: np.ndarray  # int [A]
    q: np.ndarray  # float [A]  meaningful where visits > 0
    policy: np.ndarray  # float [A]  the search policy (training target)
    chosen: int  # the greedy move of the search
    network_value: float  # v(root) from the mover's view
    search_value: float  # the root's backed-up value: the mean over all simulations
    # what ``policy`` is: Gumbel's improved policy, PUCT's share of the visits, ...
    policy_name: str = "search policy"

    @property
    def chosen_value(self) -> float:
        """The chosen move's Q, from the mover's view: the search's verdict on the
        position. The root's mean (``search_value``) also counts the simulations spent on
        weaker moves (Gumbel visits several on purpose), so it can read as losing where
        the chosen move wins."""
        return float(self.q[self.chosen])


def analyze_position(player: SearchPlayer, params: Any, state: State, key: Array) -> RootAnalysis:
    """``player``'s noise-free search from ``state`` (unbatched), and its greedy choice."""
    output = player.jitted_search(params, batch_of_one(state), key)
    tree = jax.device_get(output.search_tree)
    root = tree.ROOT_INDEX
    legal = np.asarray(state.legal_action_mask)
    logits = np.asarray(tree.children_prior_logits[0, root], np.float64)
    logits = np.where(legal, logits, -np.inf)
    prior = np.exp(logits - logits.max())
    q = (
        tree.children_rewards[0, root]
        + tree.children_discounts[0, root] * (tree.children_values[0, root])
    )
    return RootAnalysis(
        tree=tree,
        legal=legal,
        prior=prior / prior.sum(),
        visits=np.asarray(tree.children_visits[0, root]),
        q=np.asarray(q),
        policy=np.asarray(output.action_weights[0]),
        chosen=int(player.policy.greedy_action(output)[0]),
        network_value=float(tree.raw_values[0, root]),
        search_value=float(tree.node_values[0, root]),
        policy_name=getattr(player.policy, "policy_name", "search policy"),
    )


def most_visited_first(root: RootAnalysis) -> list[int]:
    """The legal moves, most visited first (the higher prior first on a tie)."""
    legal = np.flatnonzero(root.legal).tolist()
    return sorted(legal, key=lambda a: (-root.visits[a], -root.prior[a]))


def format_root(root: RootAnalysis, env: Env) -> str:
    """A table of the legal moves, most visited first: prior, visits, Q and the search's
    policy (named: Gumbel's improved policy, PUCT's visit share), under the values."""
    width = max(4, *(len(env.action_to_text(a)) for a in np.flatnonzero(root.legal).tolist()))
    name = root.policy_name
    lines = [
        f"chosen move {env.action_to_text(root.chosen)}, its Q {root.chosen_value:+.3f}; "
        f"network value {root.network_value:+.3f}; mean of all simulations "
        f"{root.search_value:+.3f} (all for the side to move)",
        f"{'move':<{width}}  {'prior':>6}  {'visits':>6}  {'Q':>7}  {name:>{max(6, len(name))}}",
    ]
    order = most_visited_first(root)
    for a in order:
        q = f"{root.q[a]:+7.3f}" if root.visits[a] > 0 else f"{'-':>7}"
        mark = "  <- chosen" if a == root.chosen else ""
        lines.append(
            f"{env.action_to_text(int(a)):<{width}}  {root.prior[a]:6.3f}  "
            f"{int(root.visits[a]):6d}  {q}  {root.policy[a]:{max(6, len(name))}.3f}{mark}"
        )
    lines.append(f"chosen move: {env.action_to_text(root.chosen)}")
    return "\n".join(lines)


def root_rows(root: RootAnalysis, env: Env) -> list[dict[str, Any]]:
    """:func:`format_root`'s rows as data (the web board draws them as a table): per legal
    move, most visited first, ``{"move", "prior", "visits", "q", "policy", "chosen"}``
    (``q`` None for a move the search did not visit)."""
    order = most_visited_first(root)
    return [
        {
            "move": env.action_to_text(int(a)),
            "prior": round(float(root.prior[a]), 4),
            "visits": int(root.visits[a]),
            "q": round(float(root.q[a]), 4) if root.visits[a] > 0 else None,
            "policy": round(float(root.policy[a]), 4),
            "chosen": int(a) == root.chosen,
        }
        for a in order
    ]


def tree_to_dot(tree: mctx.Tree, env: Env, index: int = 0) -> str:
    """The search tree of batch element ``index`` as Graphviz DOT text.

    Nodes show their visit count N, backed-up value V (from the node's mover's view) and
    network value v; edges show the move, its prior p and its Q from the parent's view.
    Only nodes reachable from the root are written (all expanded nodes).
    """
    visits = np.asarray(tree.node_visits[index])
    values = np.asarray(tree.node_values[index])
    raw = np.asarray(tree.raw_values[index])
    children = np.asarray(tree.children_index[index])  # [N, A]
    logits = np.asarray(tree.children_prior_logits[index], np.float64)  # [N, A]
    q = np.asarray(
        tree.children_rewards[index] + tree.children_discounts[index] * tree.children_values[index]
    )
    lines = [
        "digraph search {",
        '  node [shape=box, fontname="Helvetica", fontsize=10];',
        '  edge [fontname="Helvetica", fontsize=9];',
    ]
    frontier = [tree.ROOT_INDEX]
    while frontier:
        node = frontier.pop(0)
        label = f"N={int(visits[node])}\\nV={values[node]:+.3f}\\nv={raw[node]:+.3f}"
        style = ", style=bold" if node == tree.ROOT_INDEX else ""
        lines.append(f'  n{node} [label="{label}"{style}];')
        row = logits[node] - logits[node].max()
        prior = np.exp(row) / np.exp(row).sum()
        for action in np.flatnonzero(children[node] != tree.UNVISITED):
            child = int(children[node, action])
            text = env.action_to_text(int(action)).replace('"', '\\"')
            lines.append(
                f'  n{node} -> n{child} [label="{text}\\np={prior[action]:.2f} '
                f'Q={q[node, action]:+.2f}"];'
            )
            frontier.append(child)
    lines.append("}")
    return "\n".join(lines) + "\n"


def principal_variation(
    root: RootAnalysis, env: Env, depth: int = 6, first: int | None = None
) -> list[str]:
    """The search's main line: the chosen move (or ``first``, a visited move of the
    root), then the most visited child, again and again (up to ``depth`` moves, while the
    child was visited), in the game's notation. It ends with the move that ends the game:
    the search still visits a finished game's (absorbing) children, which are no moves."""
    tree = root.tree
    over = getattr(tree.embeddings, "terminated", None)  # bool [1, N] when nodes are states
    node, line = tree.ROOT_INDEX, []
    for ply in range(depth):
        visits = np.asarray(tree.children_visits[0, node])
        if visits.max() <= 0:
            break
        # the root's: the move chosen (Gumbel's may not be the most visited, on a tie)
        action = (root.chosen if first is None else first) if ply == 0 else int(visits.argmax())
        line.append(env.action_to_text(action))
        node = int(tree.children_index[0, node, action])
        if node == tree.UNVISITED or (over is not None and bool(np.asarray(over)[0, node])):
            break
    return line


def root_board_svg(
    env: Env, state: State, root: RootAnalysis, cell: int = 40, heading: str = ""
) -> str:
    """The position with the search's root on it, as SVG: on a grid game's board each
    legal move's cell shaded by its share of the visits, with its visits and Q (text
    ``0.26 * cell`` high); under it the chosen move, its value and the main line. Other
    games: their text picture with the same line.

    Args:
        env: the game.
        state: the searched position (unbatched).
        root: the search's root (:func:`analyze_position`).
        cell: a cell's side in pixels (the web board draws its analysis at 48 or more:
            labels of 12.5 px at least at its natural size).
        heading: what the line under the board begins with (default: the game, the ply
            and the player to move, :func:`envs.core.caption`).

    Returns:
        One SVG document.
    """
    most = max(int(root.visits.max()), 1)
    overlay = {
        int(a): (root.visits[a] / most, [str(int(root.visits[a])),
                                         f"{root.q[a]:+.2f}" if root.visits[a] else "-"])
        for a in np.flatnonzero(root.legal)
    }  # fmt: skip
    main_line = " ".join(principal_variation(root, env))
    under = (
        f"{heading or caption(env, state)}; chosen {env.action_to_text(root.chosen)} "
        f"(Q {root.chosen_value:+.2f}); main line {main_line or '-'}"
    )
    grid = env.grid(state)
    if grid is not None and grid.action_cells is not None:
        return pictures.grid_svg(grid, under, cell=cell, overlay=overlay)
    return pictures.text_svg(env.render(state), under)


def root_svg(env: Env, state: State, root: RootAnalysis) -> str:
    """The position with the search's root on it (:func:`root_board_svg`) over the table
    of every legal move (:func:`format_root`), which also lists the moves without a cell
    (a pass), as one SVG.

    Args:
        env: the game.
        state: the searched position (unbatched).
        root: the search's root (:func:`analyze_position`).

    Returns:
        One SVG document.
    """
    board = root_board_svg(env, state, root)
    return pictures.tile([board, pictures.text_svg(format_root(root, env), size=12)], columns=1)


def value_graph_svg(
    values: Mapping[int, float],
    plies: int,
    cursor: int | None = None,
    who: str = "player 0",
    width: float = 360,
    xs: Sequence[float] | None = None,
) -> str:
    """A game's values ply by ply, as KaTrain and Lizzie draw them: a line over [-1, 1].

    Args:
        values: ply -> value for ``who`` (two-player: the search's verdict at the position
            after that many moves, from ``who``'s view); plies without one are skipped.
        plies: the game's length so far (the x axis runs 0..plies).
        cursor: a ply to mark (the position shown), or None.
        who: whose value it is, for the caption.
        width: the picture's width in pixels.
        xs: where each ply 0..plies sits across the picture (under a strip's boards, say);
            by default the plies are spread evenly over the width.

    Returns:
        One SVG document, ``width`` x 130 px.
    """
    height, top, inner = 130, 8, 88  # inner: the plot's height
    if xs is None:
        left, span = 34.0, width - 34.0 - 10
        x = lambda ply: left + span * ply / max(plies, 1)  # noqa: E731
    else:
        left, span = xs[0], xs[plies] - xs[0]
        x = lambda ply: xs[ply]  # noqa: E731
    y = lambda v: top + inner * (1 - (min(max(v, -1.0), 1.0) + 1) / 2)  # noqa: E731
    body = [
        f'<rect x="{left}" y="{top}" width="{span}" height="{inner}" fill="#fafafa" '
        'stroke="#bbb"/>',
        f'<line x1="{left}" y1="{y(0):.1f}" x2="{left + span}" y2="{y(0):.1f}" stroke="#bbb"/>',
    ]
    for v in (1, 0, -1):
        body.append(
            f'<text x="{left - 4}" y="{y(v) + 4:.1f}" font-size="11" text-anchor="end" '
            f'fill="#222">{v:+d}</text>'.replace("+0", "0")
        )
    if cursor is not None:
        body.append(
            f'<line x1="{x(cursor):.1f}" y1="{top}" x2="{x(cursor):.1f}" '
            f'y2="{top + inner}" stroke="#2a5db0" stroke-dasharray="3 3"/>'
        )
    points = sorted((ply, v) for ply, v in values.items() if 0 <= ply <= plies)
    if points:
        path = " ".join(f"{x(p):.1f},{y(v):.1f}" for p, v in points)
        body.append(f'<polyline points="{path}" fill="none" stroke="#e0402a" stroke-width="2"/>')
        body += [
            f'<circle class="value" data-ply="{p}" cx="{x(p):.1f}" cy="{y(v):.1f}" r="3" '
            f'fill="#e0402a"><title>ply {p}: {v:+.2f}</title></circle>'
            for p, v in points
        ]
    note = f"value for {who}, ply by ply"  # the search's verdict: its chosen move's Q
    body.append(
        f'<text x="{width / 2}" y="{height - 8}" font-size="11" text-anchor="middle" '
        f'fill="#222">{html.escape(note)}</text>'
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif">' + "".join(body) + "</svg>"
    )


@dataclasses.dataclass(frozen=True)
class Analysis:
    """A position and a search's root over it: the numbers (``root``) and their picture,
    which Jupyter displays.

    Attributes:
        env: the game.
        state: the searched position (unbatched).
        root: the root's numbers (:class:`RootAnalysis`).
    """

    env: Env
    state: State
    root: RootAnalysis

    @property
    def svg(self) -> str:
        """The picture (:func:`root_svg`)."""
        return root_svg(self.env, self.state, self.root)

    def table(self) -> str:
        """The legal moves, most visited first (:func:`format_root`).

        Returns:
            Text, a line a move.
        """
        return format_root(self.root, self.env)

    def save(self, path: str | Path) -> Path:
        """Write the picture.

        Args:
            path: the ``.svg`` file to write.

        Returns:
            ``path``.
        """
        return pictures.Picture(self.svg).save(path)

    def _repr_svg_(self) -> str:
        return self.svg
