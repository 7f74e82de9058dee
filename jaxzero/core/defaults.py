"""A starting config for any game: what ``jaxzero train`` uses for a game without a preset.

config = jaxzero.default_config(MyGame())      # then train, or change what you like

The config sections' own defaults (:mod:`jaxzero.core.config`) are the numbers: sized like
the pinned board-game presets. :func:`default_config` sets only what the game decides.
"""

from __future__ import annotations

import dataclasses

import envs
from envs.core import Env
from jaxzero.core.config import (
    Config,
    EvaluationConfig,
    NetworkConfig,
    ReplayConfig,
    SearchConfig,
    SelfPlayConfig,
)
from jaxzero.core.presets import presets


def default_config(env: Env) -> Config:
    """A sensible first config for ``env``: the sections' defaults, sized like the pinned
    board-game presets, and what the game decides.

    The defaults: a 2 x 32 ResNet with a wide value head (8 channels into 128 units) or a
    2 x 128 MLP; Gumbel with 16 simulations (Gumbel improves the policy even with few
    simulations); 64 games of 16 moves an iteration, about two samples drawn per position
    played. The game decides: the ResNet for board observations (rank 3, H x W x C), else
    the MLP; at most 16 actions considered, or all it has; replay applies the game's
    symmetries when it has any.

    A two-player game samples its first 8 plies and is measured every 50 iterations. A
    single-player game pays scores, so its value head is categorical over [-max_steps,
    max_steps] (rewards of at most 1 a step; set ``network.value_max`` to the game's
    largest return if they are larger), and it has no periodic evaluation (that plays
    two-player matches).

    Args:
        env: the game; ``config.game`` names it (``envs.game_spec``).

    Returns:
        A :class:`~jaxzero.core.config.Config`; change any part with
        ``dataclasses.replace`` or :func:`~jaxzero.core.config.apply_overrides`.
    """
    two_players = env.num_players == 2
    network = NetworkConfig(kind="resnet" if len(env.observation_shape) == 3 else "mlp")
    if not two_players:
        network = dataclasses.replace(
            network, value_head="categorical", value_max=float(max(1, env.max_steps))
        )
    return Config(
        game=envs.game_spec(env),
        network=network,
        search=SearchConfig(max_num_considered_actions=min(16, env.num_actions)),
        selfplay=SelfPlayConfig(temperature_moves=8 if two_players else 0),
        replay=ReplayConfig(augment=env.symmetries.size > 1),
        evaluation=EvaluationConfig(every=EvaluationConfig.every if two_players else 0),
    )


def starting_config(game: str) -> Config:
    """The config a new run of ``game`` starts from, as ``jaxzero train GAME`` does: its
    preset, else :func:`default_config` of ``envs.make(game)``, named ``game``.

    Args:
        game: a game ``envs.make`` builds (a registered id, a family's, ``module:Class``).

    Returns:
        The :class:`~jaxzero.core.config.Config`.

    Raises:
        ValueError: ``envs.make``'s, for a game it cannot build.
    """
    preset = presets().get(game)
    if preset is not None:
        return preset
    return dataclasses.replace(default_config(envs.make(game)), game=game)
