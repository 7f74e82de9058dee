"""Go (``envs.go``): the small-board presets go_6x6 and go_9x9, their openings, the page."""

from __future__ import annotations

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

# Small-board Go (area scoring, positional superko), with Connect Four's wide value head
# and ~2 samples per position (docs/presets.md, "go_6x6 and go_9x9").
GO_6X6 = Config(
    game="go_6x6",
    network=NetworkConfig(kind="resnet", num_blocks=3),
    search=SearchConfig(num_simulations=32),
    selfplay=SelfPlayConfig(batch_size=128, temperature_moves=4),
    replay=ReplayConfig(capacity=100_000, min_size=4_096),
    optim=OptimConfig(warmup_steps=200, decay_steps=24_000, updates_per_iteration=16),
    evaluation=EvaluationConfig(simulations=128, every=100, games=100),
    train=TrainConfig(iterations=5_000, log_every=10, checkpoint_every=50, keep_every=100),
)
# 9x9: a 6 x 64 ResNet with AlphaGo Zero's narrow value head (one channel, 64 units).
GO_9X9 = Config(
    game="go_9x9",
    network=NetworkConfig(
        kind="resnet", num_blocks=6, channels=64, value_channels=1, value_hidden=0
    ),
    search=SearchConfig(num_simulations=32),
    selfplay=SelfPlayConfig(batch_size=128, temperature_moves=8),
    replay=ReplayConfig(capacity=200_000, min_size=8_192),
    optim=OptimConfig(warmup_steps=200, decay_steps=100_000),
    evaluation=EvaluationConfig(simulations=200, every=100, games=100),
    train=TrainConfig(iterations=20_000, log_every=10, checkpoint_every=100, keep_every=100),
)

PAGE = GamePage(
    slug="go",
    title="Go (5x5 to 19x19)",
    ids=("go", "go_6x6", "go_9x9"),
    intro=(
        "Go with area scoring and positional superko (`envs/go.py`); "
        '`envs.make("go", size=N)` builds any size from 5 to 19 (`go` is 9x9). '
        "pgx's Go has [a page of its own](pgx_go.md)."
    ),
    observation=(
        "bool (N, N, 2k + 1), AlphaGo Zero style, from the observing player's view: "
        "planes 2i and 2i + 1 are that player's and the opponent's stones i positions ago "
        "(i = 0 now; k = `history`, default 4, so 9 planes); the last plane is all ones "
        "when the player is Black."
    ),
    actions=(
        "N² + 1: the points row-major from the top-left, then pass (N²). Action r·N + c "
        'is GTP column `"ABCDEFGHJKLMNOPQRST"[c]`, row N - r (action 0 is A9 on 9x9). '
        "Suicide and a repeat of any earlier position (positional superko) are illegal."
    ),
    rewards=(
        "Two passes end the game, scored by area (stones plus surrounded empty points, "
        "komi to White: 7.5 above 7x7, 3.5 at 7x7 and below): +1 to the higher score, -1 "
        "to the other. A game reaching 2·N² actions is truncated with rewards 0."
    ),
    chance="None: deterministic, perfect information.",
    presets_anchor="go_6x6-and-go_9x9",
    agents=("go_6x6",),
)

KITS = (
    GameKit("go_6x6", preset=GO_6X6, opening_plies=4, page=PAGE),
    GameKit("go_9x9", preset=GO_9X9, opening_plies=6),
)
