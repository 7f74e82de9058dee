"""A starting config for any game: what ``jaxzero train`` uses for a game without a preset.

config = jaxzero.default_config(MyGame())      # then train, or change what you like
"""

from __future__ import annotations

import dataclasses

import envs
from envs.core import Env
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


def default_config(env: Env) -> Config:
    """A sensible first config for ``env``, sized like the pinned board-game presets.

    The network follows the observation: a 2 x 32 ResNet with a wide value head for board
    observations (rank 3, H x W x C), else a 2 x 128 MLP. The search is Gumbel with 16
    simulations (Gumbel improves the policy even with few simulations), considering at
    most 16 actions. Self-play is 64 games of 16 moves an iteration, about two samples
    drawn per position played; replay applies the game's symmetries when it has any.

    A single-player game pays scores, so its value head is categorical over
    [-max_steps, max_steps] (rewards of at most 1 a step; set ``network.value_max`` to
    the game's largest return if they are larger), and it has no periodic evaluation
    (that plays two-player matches).

    Args:
        env: the game; ``config.game`` names it (``envs.game_spec``).

    Returns:
        A :class:`~jaxzero.core.config.Config`; change any part with
        ``dataclasses.replace`` or :func:`~jaxzero.core.config.apply_overrides`.
    """
    board = len(env.observation_shape) == 3
    two_players = env.num_players == 2
    network = (
        NetworkConfig(kind="resnet", num_blocks=2, channels=32, value_channels=8, value_hidden=128)
        if board
        else NetworkConfig(kind="mlp", hidden_size=128, num_layers=2)
    )
    if not two_players:
        network = dataclasses.replace(
            network, value_head="categorical", value_max=float(max(1, env.max_steps))
        )
    batch, moves = 64, 16
    return Config(
        game=envs.game_spec(env),
        network=network,
        search=SearchConfig(
            kind="gumbel",
            num_simulations=16,
            max_num_considered_actions=min(16, env.num_actions),
        ),
        selfplay=SelfPlayConfig(
            batch_size=batch, moves_per_iteration=moves, temperature_moves=8 if two_players else 0
        ),
        replay=ReplayConfig(capacity=50_000, min_size=1_024, augment=env.symmetries.size > 1),
        optim=OptimConfig(
            learning_rate=2e-3,
            schedule="cosine",
            warmup_steps=100,
            decay_steps=20_000,
            minibatch_size=256,
            updates_per_iteration=batch * moves * 2 // 256,
        ),
        evaluation=EvaluationConfig(simulations=32, every=50 if two_players else 0, games=50),
        train=TrainConfig(iterations=1_000, log_every=5, checkpoint_every=25, keep_every=0),
    )
