"""The learned model's networks (MuZero): representation h, dynamics g, prediction f.

    latent = h(observation)                      # the root of a search
    latent', reward = g(latent, action)          # one move inside the model
    logits, value = f(latent)                    # prior and value of a latent position

A learned-model network is a ``flax.linen.Module`` with the methods ``represent``,
``step`` and ``predict`` (those names; :class:`LearnedModelNetwork` writes them down)
whose ``__call__(observation)`` is ``predict(represent(observation))``: it meets the
contract of every network (:mod:`jaxzero.core.networks`), so the raw policy, the
evaluation, agents and the board use it as they use any network, and only the search
and the learner call the other methods. Values and rewards follow the network section's
head (``value_head``: tanh for ±1 outcomes, categorical bins over MuZero's transform for
scores), from the point of view of the player to move (the value) and of the player who
moved (the reward).

The built-in trunks match the rules network of the same section, so a comparison of
planning with the rules and with a learned model is between equal networks: for board
observations h is the ResNet's stem and ``num_blocks`` residual blocks and f its two
heads, and g is ``num_blocks`` residual blocks over the latent and the action's planes;
otherwise h is the MLP's ``num_layers`` layers and g as many over the latent and the
action one-hot. Every latent is scaled to [0, 1] per position (min-max), as MuZero does,
so that the dynamics' input keeps one scale however deep the unroll.
"""

from __future__ import annotations

import functools
import typing
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from envs.core import Env
from jaxzero.core.config import NetworkConfig
from jaxzero.core.networks import Conv, ResidualBlock, policy_logits, value_output, value_transform

Array = jax.Array

# A latent's range below which min-max scaling stops stretching it (see scale_latent).
MIN_LATENT_RANGE = 0.01
# The methods the search and the learner call on a learned-model network.
METHODS = ("represent", "step", "predict")


def represent(network: nn.Module, params: Any, observation: Array) -> Array:
    """``h``: the latents [B, ...] of observations [B, ...] (``network.represent``)."""
    return typing.cast(Array, network.apply(params, observation, method="represent"))


def step(
    network: nn.Module, params: Any, latent: Array, action: Array, reward_logits: bool = False
) -> tuple[Array, Array]:
    """``g``: ``(latent', reward [B])`` after ``action`` int32 [B] (``network.step``)."""
    out = network.apply(params, latent, action, reward_logits, method="step")
    return typing.cast(tuple[Array, Array], out)


def predict(
    network: nn.Module, params: Any, latent: Array, value_logits: bool = False
) -> tuple[Array, Array]:
    """``f``: ``(logits [B, A], value [B])`` of latents (``network.predict``)."""
    out = network.apply(params, latent, value_logits, method="predict")
    return typing.cast(tuple[Array, Array], out)


def scale_latent(latent: Array) -> Array:
    """Each position's latent [B, ...] min-max scaled to [0, 1] (MuZero, appendix G).

    The bounds are constants to the gradient: the scaling is an affine map per position,
    and a max's gradient (shared among the entries equal to it) is 0/0 wherever a
    compiler's rounding leaves no entry equal (seen at XLA's optimisation level 0). A
    latent of (nearly) one value is shifted, not stretched: dividing by a range near 0
    would multiply its gradient by as much (an empty board's latent is all zeros at
    initialisation, every layer's bias being 0)."""
    flat = latent.reshape(latent.shape[0], -1)
    low = jax.lax.stop_gradient(flat.min(axis=1, keepdims=True))
    high = jax.lax.stop_gradient(flat.max(axis=1, keepdims=True))
    scaled = (flat - low) / jnp.maximum(high - low, MIN_LATENT_RANGE)
    return scaled.reshape(latent.shape)


def action_planes(action: Array, num_actions: int, height: int, width: int) -> Array | None:
    """A move as planes over the board, float32 [B, H, W, P], for the grids our games
    use: a cell (A = H·W), a cell or a pass (A = H·W + 1: a second plane, all ones for
    the pass), a column (A = W: Connect Four's drops). None for any other layout (the
    dynamics then learns a plane from the move's one-hot)."""
    one_hot = jax.nn.one_hot(action, num_actions, dtype=jnp.float32)  # [B, A]
    b, cells = action.shape[0], height * width
    if num_actions == cells:
        return one_hot.reshape(b, height, width, 1)
    if num_actions == cells + 1:
        board = one_hot[:, :cells].reshape(b, height, width, 1)
        passed = jnp.broadcast_to(one_hot[:, cells, None, None, None], (b, height, width, 1))
        return jnp.concatenate([board, passed], axis=-1)
    if num_actions == width:
        return jnp.broadcast_to(one_hot[:, None, :, None], (b, height, width, 1))
    return None


class LearnedModelNetwork(nn.Module):
    """h, g and f together: ``__call__(observation)`` is the network every player calls,
    ``represent``, ``step`` and ``predict`` what the search and the learner call.

    Attributes:
        representation: observation [B, ...] -> latent [B, ...].
        dynamics: ``(latent, action int32 [B], reward_logits) -> (latent, reward [B])``
            (with ``reward_logits``, a categorical head's bins [B, K] for the reward).
        prediction: ``(latent, value_logits) -> (logits [B, A], value [B])``.
    """

    representation: nn.Module
    dynamics: nn.Module
    prediction: nn.Module

    def __call__(self, observation: Array, value_logits: bool = False) -> tuple[Array, Array]:
        """``f(h(observation))``: the network every player calls.

        Args:
            observation: [B, *observation_shape].
            value_logits: return a categorical head's bins instead of the value.

        Returns:
            ``(logits float32 [B, A], value float32 [B])`` (or the bins [B, K]).
        """
        latent = self.represent(observation)
        if self.is_initializing():  # the dynamics' parameters are made with the others
            self.step(latent, jnp.zeros((observation.shape[0],), jnp.int32))
        return self.predict(latent, value_logits)

    def represent(self, observation: Array) -> Array:
        """``h``.

        Args:
            observation: [B, *observation_shape].

        Returns:
            The latents [B, ...], each scaled to [0, 1].
        """
        return scale_latent(self.representation(observation))

    def step(
        self, latent: Array, action: Array, reward_logits: bool = False
    ) -> tuple[Array, Array]:
        """``g``: one move inside the model.

        Args:
            latent: [B, ...] latents.
            action: int32 [B], the moves.
            reward_logits: return a categorical reward head's bins.

        Returns:
            ``(latent' [B, ...] scaled to [0, 1], reward [B])``: the reward to the
            player who moved (its bins [B, K] with ``reward_logits``).
        """
        nxt, reward = self.dynamics(latent, action, reward_logits)
        return scale_latent(nxt), reward

    def predict(self, latent: Array, value_logits: bool = False) -> tuple[Array, Array]:
        """``f``.

        Args:
            latent: [B, ...] latents.
            value_logits: return a categorical head's bins instead of the value.

        Returns:
            ``(logits float32 [B, A], value float32 [B])`` (or the bins [B, K]).
        """
        return self.prediction(latent, value_logits)


class ResNetRepresentation(nn.Module):
    """The rules ResNet's stem and blocks: observation [B, H, W, C] -> latent [B, H, W, ch]."""

    num_blocks: int
    channels: int
    dtype: Any = None

    @nn.compact
    def __call__(self, observation: Array) -> Array:
        x = observation.astype(jnp.float32)
        x = Conv(self.channels, (3, 3), dtype=self.dtype)(x)
        x = nn.relu(nn.LayerNorm(dtype=self.dtype)(x))
        for _ in range(self.num_blocks):
            x = ResidualBlock(self.channels, Conv, self.dtype)(x)
        return x.astype(jnp.float32)


class ResNetDynamics(nn.Module):
    """The latent [B, H, W, ch] and the move's planes -> a 3x3 conv, ``num_blocks``
    residual blocks -> the next latent; a reward head as the value head is built."""

    num_actions: int
    num_blocks: int
    channels: int
    value_channels: int = 1
    value_hidden: int = 0
    dtype: Any = None
    value: Any = None  # CategoricalValue | None: the reward head's bins (None: tanh)

    @nn.compact
    def __call__(
        self, latent: Array, action: Array, reward_logits: bool = False
    ) -> tuple[Array, Array]:
        b, height, width, _ = latent.shape
        planes = action_planes(action, self.num_actions, height, width)
        if planes is None:
            one_hot = jax.nn.one_hot(action, self.num_actions, dtype=jnp.float32)
            planes = nn.Dense(height * width, dtype=self.dtype)(one_hot)
            planes = planes.reshape(b, height, width, 1).astype(jnp.float32)
        conv = functools.partial(Conv, dtype=self.dtype)
        x = jnp.concatenate([latent, planes], axis=-1)
        x = nn.relu(nn.LayerNorm(dtype=self.dtype)(conv(self.channels, (3, 3))(x)))
        for _ in range(self.num_blocks):
            x = ResidualBlock(self.channels, Conv, self.dtype)(x)
        r = nn.relu(conv(self.value_channels, (1, 1))(x))
        r = nn.relu(
            nn.Dense(self.value_hidden or self.channels, dtype=self.dtype)(r.reshape(b, -1))
        )
        dense = functools.partial(nn.Dense, dtype=self.dtype)
        return x.astype(jnp.float32), value_output(r, dense, self.value, reward_logits)


class ResNetPrediction(nn.Module):
    """The rules ResNet's two heads over a latent [B, H, W, ch]."""

    num_actions: int
    value_channels: int = 1
    value_hidden: int = 0
    dtype: Any = None
    value: Any = None  # CategoricalValue | None

    @nn.compact
    def __call__(self, latent: Array, value_logits: bool = False) -> tuple[Array, Array]:
        conv = functools.partial(Conv, dtype=self.dtype)
        dense = functools.partial(nn.Dense, dtype=self.dtype)
        b, channels = latent.shape[0], latent.shape[-1]
        p = nn.relu(conv(2, (1, 1))(latent))
        logits = dense(self.num_actions)(p.reshape(b, -1))
        v = nn.relu(conv(self.value_channels, (1, 1))(latent))
        v = nn.relu(dense(self.value_hidden or channels)(v.reshape(b, -1)))
        return policy_logits(logits, self.num_actions), value_output(
            v, dense, self.value, value_logits
        )


class MLPRepresentation(nn.Module):
    """The rules MLP's layers: observation [B, ...] -> latent [B, hidden]."""

    hidden_size: int
    num_layers: int
    dtype: Any = None

    @nn.compact
    def __call__(self, observation: Array) -> Array:
        x = observation.astype(jnp.float32).reshape(observation.shape[0], -1)
        for _ in range(self.num_layers):
            x = nn.relu(
                nn.LayerNorm(dtype=self.dtype)(nn.Dense(self.hidden_size, dtype=self.dtype)(x))
            )
        return x.astype(jnp.float32)


class MLPDynamics(nn.Module):
    """The latent [B, hidden] and the move's one-hot -> ``num_layers`` layers -> the next
    latent, and a reward head on it."""

    num_actions: int
    hidden_size: int
    num_layers: int
    dtype: Any = None
    value: Any = None  # CategoricalValue | None

    @nn.compact
    def __call__(
        self, latent: Array, action: Array, reward_logits: bool = False
    ) -> tuple[Array, Array]:
        dense = functools.partial(nn.Dense, dtype=self.dtype)
        x = jnp.concatenate([latent, jax.nn.one_hot(action, self.num_actions)], axis=-1)
        for _ in range(self.num_layers):
            x = nn.relu(nn.LayerNorm(dtype=self.dtype)(dense(self.hidden_size)(x)))
        return x.astype(jnp.float32), value_output(x, dense, self.value, reward_logits)


class MLPPrediction(nn.Module):
    """The rules MLP's two heads over a latent [B, hidden]."""

    num_actions: int
    dtype: Any = None
    value: Any = None  # CategoricalValue | None

    @nn.compact
    def __call__(self, latent: Array, value_logits: bool = False) -> tuple[Array, Array]:
        dense = functools.partial(nn.Dense, dtype=self.dtype)
        logits = dense(self.num_actions)(latent)
        return policy_logits(logits, self.num_actions), value_output(
            latent, dense, self.value, value_logits
        )


def make_learned_network(config: NetworkConfig, env: Env) -> LearnedModelNetwork:
    """The built-in learned model of a network section (kinds auto, resnet, mlp): a ResNet
    model for board observations (rank 3; "auto" and "resnet"), an MLP model otherwise."""
    dtype = jnp.bfloat16 if config.dtype == "bfloat16" else None
    value = value_transform(config)
    a = env.num_actions
    board = len(env.observation_shape) == 3
    if config.kind == "resnet" and not board:
        raise ValueError(
            f"network.kind=resnet needs (H, W, C) observations, {env.id} has "
            f"{env.observation_shape}: use network.kind=mlp"
        )
    if board and config.kind != "mlp":
        vc, vh = config.value_channels, config.value_hidden
        return LearnedModelNetwork(
            ResNetRepresentation(config.num_blocks, config.channels, dtype),
            ResNetDynamics(a, config.num_blocks, config.channels, vc, vh, dtype, value),
            ResNetPrediction(a, vc, vh, dtype, value),
        )
    return LearnedModelNetwork(
        MLPRepresentation(config.hidden_size, config.num_layers, dtype),
        MLPDynamics(a, config.hidden_size, config.num_layers, dtype, value),
        MLPPrediction(a, dtype, value),
    )


def is_learned_network(network: nn.Module) -> bool:
    """Whether ``network`` has the methods a learned model's search and learner call."""
    return all(callable(getattr(network, name, None)) for name in METHODS)
