"""Connect Four (``envs.connect_four``): its preset, its solver player, the shipped
solver-labelled position set (``jaxzero/data``), its page."""

from __future__ import annotations

import importlib.resources
from typing import Any, cast

import jax
import jax.numpy as jnp
import numpy as np

from envs.connect_four import ConnectFourState
from envs.core import Env, State
from jaxzero.core.config import (
    Config,
    EvaluationConfig,
    NetworkConfig,
    OptimConfig,
    ReplayConfig,
    SearchConfig,
    SelfPlayConfig,
    TrainConfig,
)
from jaxzero.core.games import GameKit, GamePage
from jaxzero.measure.games import PositionSet
from jaxzero.measure.opponents import one_ply, require_game, sample_legal
from jaxzero.measure.players import Player

POSITIONS_FILE = (
    "connect_four_positions.npz"  # in jaxzero/data (tools/make_connect_four_positions.py)
)

# Sized for a CPU. Gumbel keeps improving the policy at low budgets; each position is
# sampled ~2x while in replay; the wide value head is nearly free and keeps more results;
# evaluation averages over the mirror image. pb_c_init is PUCT's own (Gumbel never reads
# it), so that `search.kind=puct` trains PUCT at its best. docs/presets.md, "connect_four".
PRESET = Config(
    game="connect_four",
    network=NetworkConfig(kind="resnet"),
    search=SearchConfig(pb_c_init=10.0),
    selfplay=SelfPlayConfig(batch_size=256, temperature_moves=6),
    replay=ReplayConfig(capacity=200_000, min_size=4_096),
    optim=OptimConfig(decay_steps=40_000, updates_per_iteration=32),
    evaluation=EvaluationConfig(simulations=64, average_symmetries=True, every=25, games=100),
    train=TrainConfig(iterations=5_000, keep_every=100),
)


def solver_player(env: Env, *, max_nodes: int = 2_000_000) -> Player:
    """Connect Four by the exact solver where it is fast enough, else one-ply tactics.

    For each state a host callback runs :class:`jaxzero.games.connect_four.solver.Solver` on
    every column with a budget of ``max_nodes`` search nodes (about 0.2 s per million on
    one core). If the position is solved in budget, a uniformly random move among those
    with the best score is played (the quickest win, the slowest loss); otherwise the
    :func:`~jaxzero.measure.opponents.one_ply` move. Early positions (fewer than about 8
    stones) are beyond a small budget, so this player is perfect in the middle and end
    game only.
    """
    require_game(env, "connect_four", "connect_four_solver")
    from jaxzero.games.connect_four import solver as c4  # numba: imported when used

    solver = c4.Solver()
    fallback = one_ply(env)

    def label(boards: np.ndarray, players: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lead = players.shape
        boards = boards.reshape(-1, c4.HEIGHT, c4.WIDTH)  # flat [.., 42] or [.., 6, 7] boards
        players = players.reshape(-1)
        scores = np.full((len(boards), c4.WIDTH), c4.ILLEGAL, np.int8)
        solved = np.zeros(len(boards), bool)
        done: dict[tuple[int, int], np.ndarray | None] = {}  # a batch may repeat positions
        for i, (board, player) in enumerate(zip(boards, players, strict=True)):
            position, mask, moves = c4.bitboards_from_board(board, int(player))
            if moves == c4.CELLS or c4.is_over(position ^ mask, mask):
                continue
            if (position, mask) not in done:
                done[position, mask] = solver.move_scores_bitboards(
                    position, mask, moves, max_nodes=max_nodes
                )
            found = done[position, mask]
            if found is not None:
                scores[i], solved[i] = found, True
        return scores.reshape(*lead, c4.WIDTH), solved.reshape(lead)

    def player(params: Any, states: State, key: jax.Array) -> jax.Array:
        del params
        k_fallback, k_pick = jax.random.split(key)
        batch = states.current_player.shape[0]
        shapes = (
            jax.ShapeDtypeStruct((batch, c4.WIDTH), jnp.int8),
            jax.ShapeDtypeStruct((batch,), jnp.bool_),
        )
        boards = cast("ConnectFourState", states).board  # as require_game checked
        scores, solved = jax.pure_callback(
            label, shapes, boards, states.current_player, vmap_method="broadcast_all"
        )
        best = states.legal_action_mask & (scores == scores.max(axis=1, keepdims=True))
        keys = jax.random.split(k_pick, batch)
        exact = jax.vmap(sample_legal)(keys, best & solved[:, None])
        return jnp.where(solved, exact, fallback(None, states, k_fallback))

    return player


def positions() -> PositionSet:
    """The shipped solver-labelled set (tools/make_connect_four_positions.py)."""
    from jaxzero.games.connect_four.solver import ILLEGAL

    path = importlib.resources.files("jaxzero") / "data" / POSITIONS_FILE
    with path.open("rb") as f, np.load(f) as data:
        scores = data["scores"]
        return PositionSet(data["moves"], data["lengths"], scores, scores != ILLEGAL)


PAGE = GamePage(
    slug="connect_four",
    title="Connect Four",
    ids=("connect_four", "pgx/connect_four"),
    intro=(
        "Connect Four on the standard 6 x 7 board (`envs/connect_four.py`, bitboards). "
        "`pgx/connect_four` is pgx's version through the bridge."
    ),
    observation=(
        "bool (6, 7, 2) from the mover's point of view, row 0 at the top: plane 0 the "
        "mover's discs, plane 1 the opponent's."
    ),
    actions="7: the columns, left to right; a full column is illegal.",
    rewards="+1 to the first player with four in a row (horizontal, vertical or diagonal), "
    "-1 to the other; a full board without one is a draw (0, 0).",
    chance="None: deterministic, perfect information.",
    presets_anchor="connect_four",
    agents=("connect_four",),
)

KITS = (
    GameKit(
        "connect_four",
        preset=PRESET,
        opponents={"connect_four_solver": solver_player},
        perfect="connect_four_solver",
        positions=positions,
        opening_plies=2,
        page=PAGE,
    ),
)
