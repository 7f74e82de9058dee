"""Policy/value networks (Flax linen): a ResNet for board observations, an MLP otherwise.

Both map a batch of observations ``[B, *observation_shape]`` (bool or float) to
``(logits float32 [B, A], value float32 [B])`` with the value squashed by ``tanh`` into
[-1, 1], from the point of view of the player to move.

Normalisation is LayerNorm, not BatchNorm: the network's variables are only ``params``,
so every copy of a network (self-play, learner, checkpoint, agent) is the same function
of its parameters, with no running statistics to carry or to desynchronise, and
self-play and training use one code path (no train/eval mode switch).
"""

from __future__ import annotations

from collections.abc import Callable

import flax.linen as nn
import jax
import jax.numpy as jnp

from envs.core import Env
from jaxzero.config import NetworkConfig

ApplyFn = Callable[[dict, jax.Array], tuple[jax.Array, jax.Array]]


class ResidualBlock(nn.Module):
    channels: int

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        y = nn.Conv(self.channels, (3, 3))(x)
        y = nn.relu(nn.LayerNorm()(y))
        y = nn.Conv(self.channels, (3, 3))(y)
        y = nn.LayerNorm()(y)
        return nn.relu(x + y)


class ResNet(nn.Module):
    """AlphaZero's tower, small: a 3x3 conv stem, ``num_blocks`` residual blocks, then a
    policy head (1x1 conv, dense to A logits) and a value head (1x1 conv, dense, tanh)."""

    num_actions: int
    num_blocks: int
    channels: int

    @nn.compact
    def __call__(self, observation: jax.Array) -> tuple[jax.Array, jax.Array]:
        x = observation.astype(jnp.float32)  # [B, H, W, C]
        x = nn.relu(nn.LayerNorm()(nn.Conv(self.channels, (3, 3))(x)))
        for _ in range(self.num_blocks):
            x = ResidualBlock(self.channels)(x)

        # The heads' 1x1 convs have 1-2 channels: a LayerNorm over so few features would
        # erase them (over one channel it outputs a constant), so the heads read the
        # normalised trunk directly.
        p = nn.relu(nn.Conv(2, (1, 1))(x))
        logits = nn.Dense(self.num_actions)(p.reshape(p.shape[0], -1))  # [B, A]

        v = nn.relu(nn.Conv(1, (1, 1))(x))
        v = nn.relu(nn.Dense(self.channels)(v.reshape(v.shape[0], -1)))
        value = jnp.tanh(nn.Dense(1)(v)[:, 0])  # [B]
        return logits, value


class MLP(nn.Module):
    """Flattened observation -> ``num_layers`` x (dense, LayerNorm, relu) -> two heads."""

    num_actions: int
    hidden_size: int
    num_layers: int

    @nn.compact
    def __call__(self, observation: jax.Array) -> tuple[jax.Array, jax.Array]:
        x = observation.astype(jnp.float32).reshape(observation.shape[0], -1)  # [B, D]
        for _ in range(self.num_layers):
            x = nn.relu(nn.LayerNorm()(nn.Dense(self.hidden_size)(x)))
        logits = nn.Dense(self.num_actions)(x)  # [B, A]
        value = jnp.tanh(nn.Dense(1)(x)[:, 0])  # [B]
        return logits, value


def make_network(config: NetworkConfig, env: Env) -> nn.Module:
    """The network for ``env``: a ResNet for rank-3 (H, W, C) observations, else an MLP
    (``config.kind`` may force either)."""
    kind = config.kind
    if kind == "auto":
        kind = "resnet" if len(env.observation_shape) == 3 else "mlp"
    if kind == "resnet":
        if len(env.observation_shape) != 3:
            raise ValueError(
                f"a ResNet needs (H, W, C) observations, {env.id} has {env.observation_shape}"
            )
        return ResNet(env.num_actions, config.num_blocks, config.channels)
    if kind == "mlp":
        return MLP(env.num_actions, config.hidden_size, config.num_layers)
    raise ValueError(f"unknown network kind {config.kind!r}; choose auto, resnet or mlp")


def init_params(network: nn.Module, env: Env, key: jax.Array) -> dict:
    """The network's variables (``{"params": ...}``) for a batch-of-one dummy input."""
    dummy = jnp.zeros((1, *env.observation_shape), jnp.float32)
    return network.init(key, dummy)


def make_apply_fn(network: nn.Module) -> ApplyFn:
    """``apply_fn(variables, observations [B, ...]) -> (logits [B, A], value [B])``."""
    return network.apply
