"""Pinned presets: one Config per game, named after the game it trains.

Like a named policy version: change a preset and you change what ``jaxzero train GAME``
means, so each carries the measurement that chose its values.

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

# pgx's board games through the bridge (envs.pgx), sized as connect_four's preset: its
# 2 x 32 ResNet with the wide value head and Gumbel with 16 simulations, 8 sampled opening
# plies, ~2 samples per position played. Not tuned per game: see docs/pgx.md for what
# 30 minutes of each learned on this CPU. The periodic evaluation (against random and
# one-ply, whose look-ahead is A x A steps a move) is off for hex and animal shogi: with
# 122 and 132 actions it cost hex 745 of its 1,800 s; `jaxzero eval` measures afterwards.
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
# over [-3, 3]. Dice are the env's step key: a tree edge keeps the roll it first sampled.
# No periodic evaluation: one-ply's 162 x 162 look-ahead steps a move would cost more than
# the training (`jaxzero eval RUN --opponents random` measures afterwards).
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

# 2048 pays its merges as it goes: the value is the discounted score to come (γ = 0.999,
# Stochastic MuZero's), thousands, through a categorical head of 201 bins over h's range.
# The tile spawns are the env's step key (a tree edge keeps its first spawn). An MLP: the
# board is 4 x 4. The periodic evaluation scores the agent beside random and greedy play.
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


# MinAtar's five games (the pgx-minatar package): 2048's recipe, its scores discounted at
# γ = 0.99 (the DQN baselines' horizon), so a value stays under 100 x the largest reward
# a step pays; the 10 x 10 board flattened into the MLP. Not tuned per game.
def _pgx_minatar(game: str) -> Config:
    return dataclasses.replace(
        _PGX_2048,
        game=f"pgx/minatar-{game}",
        network=dataclasses.replace(_PGX_2048.network, value_max=300.0),
        search=dataclasses.replace(_PGX_2048.search, max_num_considered_actions=6),
        selfplay=dataclasses.replace(_PGX_2048.selfplay, discount=0.99),
    )


PRESETS: dict[str, Config] = {
    # Small MLP, Gumbel with 16 simulations: perfect play in ~200-300 iterations, well under
    # a minute of training on two CPU cores (tests/test_gate_tic_tac_toe.py). The first 4
    # plies are sampled ∝ N(a) so that replay covers the odd positions the gate also asks
    # about, and the learning rate decays so the policy settles rather than oscillates.
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
    # Sized for a CPU: the 2 x 32 ResNet of the self-play benchmark and Gumbel with 16
    # simulations (Gumbel keeps improving the policy at low budgets; 8 did no better in a
    # same-compute 30-minute A/B, docs/compare_search.md); the first 6 plies
    # are sampled for opening variety; scores against random and one-ply every 25
    # iterations make the learning curve. 32 updates of 256 per 4,096 positions played
    # (each position is sampled ~2x while in replay): with gradients fast inside the
    # compiled loop (networks.conv_general_dilated) they cost ~1/3 of the self-play.
    # The value head reads 8 channels into 128 units (not 1 into 32): nearly free, and in
    # the gated hour it kept the result in 89.1% of critical positions, not 86.9%.
    # Evaluation searches average the network over the board's mirror image (2 passes):
    # 90.7% for that hour's agent, 98-1 against pure MCTS.
    # PUCT's own constant (Gumbel never reads it), so that `search.kind=puct` trains PUCT
    # at its best: c = 10, not mctx's 1.25, at which 16-simulation visit counts pile onto
    # one move and self-play narrows (69% -> 79% raw optimal after 600 s on one core;
    # α, sampled plies and 32 simulations changed nothing; docs/compare_search.md).
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
    # Small-board Go: area scoring, komi 3.5 (6x6) / 7.5 (9x9), positional superko.
    # go_6x6 takes Connect Four's lessons: a value head of 8 channels into 128 units and
    # 16 updates of 256 per 2,048 positions played (each position sampled ~2x); the
    # cosine ends after ~24k updates, about 2 hours (~4.7 s an iteration) on a 2-core CPU.
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
    # Star Duel's short game (authority 10, 20-turn cap), where games take ~100 actions:
    # the size a CPU trains in half an hour. Hidden cards: the search is determinised
    # (search.determinize). Plain AlphaZero (γ = 1); `selfplay.discount=0.98` makes quick
    # wins worth more.
    "star_duel_short": _STAR_DUEL_SHORT,
    **{f"pgx/{game}": _pgx_board(f"pgx/{game}", *sizes) for game, sizes in _PGX_BOARDS.items()},
    "pgx/backgammon": _PGX_BACKGAMMON,
    "pgx/2048": _PGX_2048,
    **{f"pgx/minatar-{game}": _pgx_minatar(game) for game in MINATAR},
}


def get_preset(name: str) -> Config:
    """The pinned Config that trains the game ``name``."""
    if name not in PRESETS:
        raise ValueError(f"no preset {name!r}; choose one of: {', '.join(sorted(PRESETS))}")
    return PRESETS[name]
