"""Pinned presets: one Config per game, named after the game it trains.

Like a named policy version: change a preset and you change what ``jaxzero train GAME``
means. The comments here say why each value is what it is; docs/presets.md gives each
preset's values with the measurements (figures and commands) that chose them.

    config = get_preset("connect_four")       # config.game == "connect_four"
"""

from __future__ import annotations

import dataclasses

from envs.pgx import MINATAR
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

_STAR_DUEL_SHORT = Config(
    game="star_duel_short",
    network=NetworkConfig(kind="mlp", hidden_size=128, num_layers=2),
    search=SearchConfig(kind="gumbel", num_simulations=16, max_num_considered_actions=8),
    selfplay=SelfPlayConfig(batch_size=64, moves_per_iteration=16, discount=1.0),
    replay=ReplayConfig(capacity=100_000, min_size=2_048, augment=False),
    optim=OptimConfig(
        learning_rate=1e-3,
        schedule="cosine",
        warmup_steps=100,
        decay_steps=20_000,
        minibatch_size=256,
        updates_per_iteration=8,
    ),
    evaluation=EvaluationConfig(simulations=64, every=0),
    train=TrainConfig(iterations=3_000, log_every=10, checkpoint_every=100),
    seed=0,
)

# pgx's board games through the bridge (envs.pgx), sized as connect_four's preset, not
# tuned per game. No periodic evaluation for hex and animal shogi: one-ply's look-ahead
# (A x A steps a move) costs a large share of the training time at 122 and 132 actions.
_PGX_BOARDS = {"othello": (128, 50), "hex": (64, 0), "animal_shogi": (128, 0)}  # batch, every


def _pgx_board(game: str, batch_size: int, evaluate_every: int) -> Config:
    return Config(
        game=game,
        network=NetworkConfig(
            kind="resnet", num_blocks=2, channels=32, value_channels=8, value_hidden=128
        ),
        search=SearchConfig(kind="gumbel", num_simulations=16),
        selfplay=SelfPlayConfig(batch_size=batch_size, moves_per_iteration=16, temperature_moves=8),
        replay=ReplayConfig(capacity=100_000, min_size=2_048),
        optim=OptimConfig(
            learning_rate=2e-3,
            schedule="cosine",
            warmup_steps=100,
            decay_steps=20_000,
            minibatch_size=256,
            updates_per_iteration=batch_size * 16 * 2 // 256,
        ),
        evaluation=EvaluationConfig(simulations=32, every=evaluate_every, games=50),
        train=TrainConfig(iterations=5_000, log_every=5, checkpoint_every=25),
        seed=0,
    )


# Backgammon's outcomes are ±1, ±2 (gammon) and ±3 (backgammon): a categorical value head
# over [-3, 3]. No periodic evaluation: one-ply's look-ahead would cost more than training.
_PGX_BACKGAMMON = Config(
    game="pgx/backgammon",
    network=NetworkConfig(
        kind="mlp",
        hidden_size=128,
        num_layers=2,
        value_head="categorical",
        value_bins=31,
        value_max=3.0,
    ),  # fmt: skip
    search=SearchConfig(kind="gumbel", num_simulations=16),
    selfplay=SelfPlayConfig(batch_size=128, moves_per_iteration=16),
    replay=ReplayConfig(capacity=100_000, min_size=2_048, augment=False),
    optim=OptimConfig(
        learning_rate=1e-3,
        schedule="cosine",
        warmup_steps=100,
        decay_steps=20_000,
        minibatch_size=256,
        updates_per_iteration=16,
    ),
    evaluation=EvaluationConfig(simulations=16, every=0, games=50),
    train=TrainConfig(iterations=5_000, log_every=5, checkpoint_every=25),
    seed=0,
)

# 2048 pays its merges as it goes: the value is the discounted score to come (Stochastic
# MuZero's γ), thousands, so a categorical head over h's range. An MLP: the board is 4 x 4.
_PGX_2048 = Config(
    game="pgx/2048",
    network=NetworkConfig(
        kind="mlp",
        hidden_size=256,
        num_layers=2,
        value_head="categorical",
        value_bins=201,
        value_max=20_000.0,
    ),  # fmt: skip
    search=SearchConfig(kind="gumbel", num_simulations=16, max_num_considered_actions=4),
    selfplay=SelfPlayConfig(batch_size=64, moves_per_iteration=32, discount=0.999),
    replay=ReplayConfig(capacity=100_000, min_size=2_048, augment=False),
    optim=OptimConfig(
        learning_rate=1e-3,
        schedule="cosine",
        warmup_steps=100,
        decay_steps=20_000,
        minibatch_size=256,
        updates_per_iteration=16,
    ),
    evaluation=EvaluationConfig(simulations=16, every=100, games=32),
    train=TrainConfig(iterations=5_000, log_every=5, checkpoint_every=25),
    seed=0,
)


# MinAtar's five games (the pgx-minatar package): 2048's recipe, with the DQN baselines'
# horizon (γ = 0.99) so that values stay within the head's range. Not tuned per game.
def _pgx_minatar(game: str) -> Config:
    return dataclasses.replace(
        _PGX_2048,
        game=f"pgx/minatar-{game}",
        network=dataclasses.replace(_PGX_2048.network, value_max=300.0),
        search=dataclasses.replace(_PGX_2048.search, max_num_considered_actions=6),
        selfplay=dataclasses.replace(_PGX_2048.selfplay, discount=0.99),
    )


PRESETS: dict[str, Config] = {
    # Sampled first plies cover the odd positions the gate asks about; the decaying rate
    # lets the policy settle. Each preset's measurements: docs/presets.md, under its name.
    "tic_tac_toe": Config(
        game="tic_tac_toe",
        network=NetworkConfig(kind="mlp", hidden_size=128, num_layers=2),
        search=SearchConfig(kind="gumbel", num_simulations=16),
        selfplay=SelfPlayConfig(batch_size=128, moves_per_iteration=9, temperature_moves=4),
        replay=ReplayConfig(capacity=20_000, min_size=512),
        optim=OptimConfig(
            learning_rate=3e-3,
            schedule="cosine",
            warmup_steps=50,
            decay_steps=4_800,
            end_lr_factor=0.05,
            minibatch_size=256,
            updates_per_iteration=8,
        ),
        evaluation=EvaluationConfig(simulations=64),
        train=TrainConfig(iterations=600, log_every=10, checkpoint_every=100),
        seed=0,
    ),
    # Sized for a CPU. Gumbel keeps improving the policy at low budgets; each position is
    # sampled ~2x while in replay; the wide value head is nearly free and keeps more
    # results; evaluation averages over the mirror image. pb_c_init is PUCT's own (Gumbel
    # never reads it), so that `search.kind=puct` trains PUCT at its best.
    "connect_four": Config(
        game="connect_four",
        network=NetworkConfig(
            kind="resnet", num_blocks=2, channels=32, value_channels=8, value_hidden=128
        ),
        search=SearchConfig(kind="gumbel", num_simulations=16, pb_c_init=10.0),
        selfplay=SelfPlayConfig(batch_size=256, moves_per_iteration=16, temperature_moves=6),
        replay=ReplayConfig(capacity=200_000, min_size=4_096),
        optim=OptimConfig(
            learning_rate=2e-3,
            schedule="cosine",
            warmup_steps=100,
            decay_steps=40_000,
            minibatch_size=256,
            updates_per_iteration=32,
        ),
        evaluation=EvaluationConfig(simulations=64, average_symmetries=True, every=25, games=100),
        train=TrainConfig(iterations=5_000, log_every=5, checkpoint_every=25),
        seed=0,
    ),
    # Small-board Go (area scoring, positional superko), with Connect Four's wide value
    # head and ~2 samples per position (docs/presets.md, "go_6x6 and go_9x9").
    "go_6x6": Config(
        game="go_6x6",
        network=NetworkConfig(
            kind="resnet", num_blocks=3, channels=32, value_channels=8, value_hidden=128
        ),
        search=SearchConfig(kind="gumbel", num_simulations=32),
        selfplay=SelfPlayConfig(batch_size=128, moves_per_iteration=16, temperature_moves=4),
        replay=ReplayConfig(capacity=100_000, min_size=4_096),
        optim=OptimConfig(
            learning_rate=2e-3,
            schedule="cosine",
            warmup_steps=200,
            decay_steps=24_000,
            minibatch_size=256,
            updates_per_iteration=16,
        ),
        evaluation=EvaluationConfig(simulations=128),
        train=TrainConfig(iterations=5_000, log_every=10, checkpoint_every=50),
        seed=0,
    ),
    "go_9x9": Config(
        game="go_9x9",
        network=NetworkConfig(kind="resnet", num_blocks=6, channels=64),
        search=SearchConfig(kind="gumbel", num_simulations=32),
        selfplay=SelfPlayConfig(batch_size=128, moves_per_iteration=16, temperature_moves=8),
        replay=ReplayConfig(capacity=200_000, min_size=8_192),
        optim=OptimConfig(
            learning_rate=2e-3,
            schedule="cosine",
            warmup_steps=200,
            decay_steps=100_000,
            minibatch_size=256,
            updates_per_iteration=8,
        ),
        evaluation=EvaluationConfig(simulations=200),
        train=TrainConfig(iterations=20_000, log_every=10, checkpoint_every=100),
        seed=0,
    ),
    # Star Duel's short game (docs/presets.md, "star_duel_short"). Hidden cards: the
    # search is determinised. Plain AlphaZero (γ = 1).
    "star_duel_short": _STAR_DUEL_SHORT,
    **{f"pgx/{game}": _pgx_board(f"pgx/{game}", *sizes) for game, sizes in _PGX_BOARDS.items()},
    "pgx/backgammon": _PGX_BACKGAMMON,
    "pgx/2048": _PGX_2048,
    **{f"pgx/minatar-{game}": _pgx_minatar(game) for game in MINATAR},
}


def get_preset(name: str) -> Config:
    """The pinned Config that trains the game ``name``.

    Args:
        name: a preset's name (a key of ``PRESETS``), e.g. ``"connect_four"`` or
            ``"pgx/2048"``.

    Returns:
        The preset :class:`~jaxzero.core.config.Config` (frozen; ``config.game`` is the
        game it trains).

    Raises:
        ValueError: no preset ``name``, in one line naming the presets there are.
    """
    if name not in PRESETS:
        raise ValueError(f"no preset {name!r}; choose one of: {', '.join(sorted(PRESETS))}")
    return PRESETS[name]
