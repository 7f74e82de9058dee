"""``jaxzero analyze``: one position, the root of a search over it, and its tree as Graphviz.

    state = position_from_moves(env, "4 5 1")          # the game's own notation
    state, record = position_from_sgf(env, Path("game.sgf"))    # Go: an SGF main line
    root = analyze_position(agent.player, agent.params, state, key)
    print(format_root(root, env))                       # prior, visits, Q per legal move
    Path("tree.dot").write_text(tree_to_dot(root.tree, env))

All values are from the point of view of the player to move at the node in question;
an edge's Q is ``reward + discount * value(child)`` from its parent's mover's view
(mctx's convention, see :mod:`jaxzero.core.search`).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import mctx
import numpy as np

from envs.core import Env, State
from envs.go import Go
from jaxzero.go import sgf
from jaxzero.measure.players import SearchPlayer

Array = jax.Array


def split_moves(env: Env, moves: str) -> list[str]:
    """Moves in the game's notation, separated by commas or by spaces.

    Without commas a move is the shortest run of words the game reads as one, so
    star_duel's ``play scout end`` is two moves (no star_duel move begins with the words
    of another). A run that never reads as a move gives its first word, for the error.
    """
    if "," in moves:
        return [token.strip() for token in moves.split(",") if token.strip()]
    words, tokens = moves.split(), []
    while words:
        for n in range(1, len(words) + 1):
            try:
                env.text_to_action(" ".join(words[:n]))
                break
            except ValueError:
                continue
        else:
            n = 1
        tokens.append(" ".join(words[:n]))
        words = words[n:]
    return tokens


def position_from_moves(env: Env, moves: str, key: Array | None = None) -> State:
    """The (unbatched) state after ``moves`` (see :func:`split_moves`). ValueError with a
    one-line reason for a malformed or illegal move, or when the game is over (nothing to
    search)."""
    key = jax.random.key(0) if key is None else key
    state = env.init(key)
    step = jax.jit(env.step)
    for number, token in enumerate(split_moves(env, moves), start=1):
        if bool(state.terminated | state.truncated):
            raise ValueError(f"the game is over before move {number} ({token!r})")
        try:
            action = env.text_to_action(token)
        except ValueError as error:
            raise ValueError(f"move {number}: {error}") from None
        if not bool(state.legal_action_mask[action]):
            raise ValueError(f"move {number} ({token!r}) is illegal in that position")
        key, k = jax.random.split(key)
        state = step(state, jnp.int32(action), k)
    if bool(state.terminated | state.truncated):
        raise ValueError("the game is over after these moves; there is nothing to search")
    return state


def position_from_sgf(env: Env, path: Path) -> tuple[State, sgf.GoRecord]:
    """The position at the end of the main line of the SGF record in ``path`` (Go only:
    its setup stones, then its moves) and the record itself.

    ValueError with a one-line reason when the game is not Go, the file cannot be read or
    parsed, its board size is not the env's, a move is illegal, or the record ends with
    the game over (nothing to search). The env's komi is kept whatever the record says:
    it is the one the network was trained with.
    """
    if not isinstance(env, Go):
        raise ValueError(f"--sgf loads Go records; {env.id} is not Go (use --moves)")
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else error
        raise ValueError(f"cannot read {path}: {reason}") from None
    try:
        record = sgf.read_sgf(text)
    except sgf.SgfError as error:
        raise ValueError(f"{path}: {error}") from None
    if record.size != env.size:
        raise ValueError(
            f"{path} is a {record.size}x{record.size} game; {env.id} is played on "
            f"{env.size}x{env.size}"
        )
    try:
        state = sgf.to_state(env, record)
    except (sgf.SgfError, ValueError) as error:
        raise ValueError(f"{path}: {error}") from None
    if bool(state.terminated | state.truncated):
        raise ValueError(f"{path}: the game is over at the end of the record; nothing to search")
    return state, record


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
    search_value: float  # the root's backed-up value


def analyze_position(player: SearchPlayer, params: Any, state: State, key: Array) -> RootAnalysis:
    """``player``'s noise-free search from ``state`` (unbatched), and its greedy choice."""
    states = jax.tree.map(lambda x: x[None], state)
    output = jax.jit(player.search)(params, states, key)
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
    )


def format_root(root: RootAnalysis, env: Env) -> str:
    """A table of the legal moves, most visited first: prior, visits, Q, search policy."""
    width = max(4, *(len(env.action_to_text(a)) for a in np.flatnonzero(root.legal).tolist()))
    lines = [
        f"network value {root.network_value:+.3f}   search value {root.search_value:+.3f}",
        f"{'move':<{width}}  {'prior':>6}  {'visits':>6}  {'Q':>7}  {'policy':>6}",
    ]
    order = sorted(np.flatnonzero(root.legal), key=lambda a: (-root.visits[a], -root.prior[a]))
    for a in order:
        q = f"{root.q[a]:+7.3f}" if root.visits[a] > 0 else f"{'-':>7}"
        mark = "  <- chosen" if a == root.chosen else ""
        lines.append(
            f"{env.action_to_text(int(a)):<{width}}  {root.prior[a]:6.3f}  "
            f"{int(root.visits[a]):6d}  {q}  {root.policy[a]:6.3f}{mark}"
        )
    lines.append(f"chosen move: {env.action_to_text(root.chosen)}")
    return "\n".join(lines)


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
