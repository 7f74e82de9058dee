"""``jaxzero analyze``'s positions: from moves in the game's notation, or from an SGF record.

    state = position_from_moves(env, "4 5 1")          # the game's own notation
    state, record = position_from_sgf(env, Path("game.sgf"))    # Go: an SGF main line
    root = analyze_position(agent.player, agent.params, state, key)
    print(format_root(root, env))                       # prior, visits, Q per legal move

The root's numbers, table, tree and picture are :mod:`jaxzero.measure.roots`' (imported
here too).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp

from envs.core import Env, State
from envs.go import Go
from jaxzero.core.single_game import SingleGame
from jaxzero.go import sgf
from jaxzero.measure.roots import (  # noqa: F401  (the notebook's and the CLI's names)
    Analysis,
    RootAnalysis,
    analyze_position,
    format_root,
    root_svg,
    tree_to_dot,
)
from jaxzero.run.folder.reads import SMALL, FileRefused, read_text

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
    longest = move_words(env) if words else 0
    while words:
        for n in range(1, min(len(words), longest) + 1):
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


def move_words(env: Env) -> int:
    """The most words a move of ``env``'s notation has (1; star_duel's ``buy explorer``: 2)."""
    return max(len(env.action_to_text(a).split()) for a in range(env.num_actions))


def position_from_moves(env: Env, moves: str, key: Array | None = None) -> State:
    """The (unbatched) state after ``moves`` (see :func:`split_moves`). ValueError with a
    one-line reason for a malformed or illegal move, or when the game is over (nothing to
    search)."""
    states, _ = line_from_moves(env, moves, key)
    if bool(states[-1].terminated | states[-1].truncated):
        raise ValueError("the game is over after these moves; there is nothing to search")
    return states[-1]


def line_from_moves(
    env: Env, moves: str, key: Array | None = None, step: Any = None
) -> tuple[list[State], list[int]]:
    """Every state of the game ``moves`` play (the start first) and their actions.

    Args:
        env: the game.
        moves: moves in the game's notation (:func:`split_moves`).
        key: the key of the start and of each move's chance (default ``key(0)``).
        step: a compiled step to share, ``SingleGame(env).step`` (default: one made here).

    Returns:
        ``(states, actions)``, ``len(actions) + 1`` unbatched states.

    Raises:
        ValueError: a malformed or illegal move, or a move after the game's end, in one line.
    """
    key = jax.random.key(0) if key is None else key
    step = SingleGame(env).step if step is None else step
    states, actions = [env.init(key)], []
    for number, token in enumerate(split_moves(env, moves), start=1):
        state = states[-1]
        if bool(state.terminated | state.truncated):
            raise ValueError(f"the game is over before move {number} ({token!r})")
        try:
            action = env.text_to_action(token)
        except ValueError as error:
            raise ValueError(f"move {number}: {error}") from None
        if not bool(state.legal_action_mask[action]):
            raise ValueError(f"move {number} ({token!r}) is illegal in that position")
        key, k = jax.random.split(key)
        states.append(step(state, jnp.int32(action), k))
        actions.append(action)
    return states, actions


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
    real = Path(path).resolve()  # a link the user typed is theirs: followed
    try:  # bounded: a FIFO would hang the read, a huge file fill memory
        text = read_text(real, real.parent, SMALL)
    except FileRefused as error:
        raise ValueError(
            f"--sgf {error}; give an SGF record (a regular file of at most 1 MB)"
        ) from None
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
