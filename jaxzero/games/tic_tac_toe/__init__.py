"""Tic-tac-toe (``envs.tic_tac_toe``), the correctness gate: its preset, its perfect
player from the exhaustive solver, its 4,520 solved decision states, its page."""

from __future__ import annotations

from typing import cast

import jax
import jax.numpy as jnp
import numpy as np

from envs.core import Env, State
from envs.tic_tac_toe import TicTacToeState
from jaxzero.core.config import (
    Config,
    EvaluationConfig,
    NetworkConfig,
    OptimConfig,
    ReplayConfig,
    SelfPlayConfig,
    TrainConfig,
)
from jaxzero.core.games import GameKit, GamePage
from jaxzero.games.tic_tac_toe import solver
from jaxzero.measure.games import PositionSet
from jaxzero.measure.opponents import batched, require_game, sample_legal
from jaxzero.measure.players import Player

# Sampled first plies cover the odd positions the gate asks about; the decaying rate lets
# the policy settle. The measurements: docs/presets.md, "tic_tac_toe".
PRESET = Config(
    game="tic_tac_toe",
    network=NetworkConfig(kind="mlp"),
    selfplay=SelfPlayConfig(batch_size=128, moves_per_iteration=9, temperature_moves=4),
    replay=ReplayConfig(capacity=20_000, min_size=512),
    optim=OptimConfig(learning_rate=3e-3, warmup_steps=50, decay_steps=4_800, end_lr_factor=0.05),
    evaluation=EvaluationConfig(simulations=64, every=100, games=100),
    train=TrainConfig(iterations=600, log_every=10, checkpoint_every=100, keep_every=100),
)


def minimax_player(env: Env) -> Player:
    """Perfect tic-tac-toe: a uniformly random move among those with the best result.

    Reads the exhaustive table of :mod:`jaxzero.games.tic_tac_toe.solver` (computed once per
    process) with the base-3 index of ``state.board``. Never loses; wins whenever the
    opponent errs into a lost position.
    """
    require_game(env, "tic_tac_toe", "tic_tac_toe_minimax")
    results = solver.solve().move_results  # int8 [19683, 9]
    table = jnp.asarray(np.where(results == solver.ILLEGAL, -2, results), jnp.int8)
    powers = jnp.asarray(solver.POWERS)

    def act(state: State, key: jax.Array) -> jax.Array:
        board = cast("TicTacToeState", state).board  # tic-tac-toe's, as require_game checked
        index = jnp.sum((board + 1) * powers)
        values = table[index]  # int8 [9], -2 where illegal
        best = state.legal_action_mask & (values == values.max())
        return sample_legal(key, jnp.where(best.any(), best, state.legal_action_mask))

    return batched(act)


def positions() -> PositionSet:
    """All 4,520 decision states of tic-tac-toe, from the exhaustive solver."""
    table = solver.solve()
    index = np.flatnonzero(table.decision)
    scores = table.move_scores[index]
    legal = scores != solver.ILLEGAL
    return PositionSet(table.decision_moves, table.decision_lengths, scores, legal)


PAGE = GamePage(
    slug="tic_tac_toe",
    title="Tic-tac-toe",
    ids=("tic_tac_toe", "pgx/tic_tac_toe"),
    intro=(
        "The correctness gate (`envs/tic_tac_toe.py`): small enough to solve, so every "
        "decision can be checked. `pgx/tic_tac_toe` is pgx's version through the bridge."
    ),
    observation=(
        "bool (3, 3, 2) from the mover's point of view: plane 0 the mover's marks, plane "
        "1 the opponent's. pgx's has the same layout."
    ),
    actions="9: the cells, row-major from the top-left (action 4 is the centre).",
    rewards="+1 to the player who completes a line of three, -1 to the other; a full board "
    "without a line is a draw (0, 0).",
    chance="None: deterministic, perfect information.",
    presets_anchor="tic_tac_toe",
    agents=("tic_tac_toe",),
)

KITS = (
    GameKit(
        "tic_tac_toe",
        preset=PRESET,
        opponents={"tic_tac_toe_minimax": minimax_player},
        perfect="tic_tac_toe_minimax",
        positions=positions,
        opening_plies=1,
        page=PAGE,
    ),
)
