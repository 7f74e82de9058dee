"""Policy/value networks (Flax linen): a ResNet for board observations, an MLP otherwise.

Both map a batch of observations ``[B, *observation_shape]`` (bool or float) to
``(logits float32 [B, A], value float32 [B])``, the value from the point of view of the
player to move: squashed by ``tanh`` into [-1, 1], or, with a categorical value head
(``value``, a :class:`jaxzero.core.values.CategoricalValue`), decoded from its bins.
``apply(variables, observation, value_logits=True)`` returns the bins' logits
``[B, K]`` in place of the value, for the learner's cross-entropy.

Normalisation is LayerNorm, not BatchNorm: the network's variables are only ``params``,
so every copy of a network (self-play, learner, checkpoint, agent) is the same function
of its parameters, with no running statistics to carry or to desynchronise, and
self-play and training use one code path (no train/eval mode switch).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from envs.core import Env
from envs.symmetry import Symmetries
from jaxzero.core.config import NetworkConfig
from jaxzero.core.values import CategoricalValue

ApplyFn = Callable[[dict, jax.Array], tuple[jax.Array, jax.Array]]


def conv_general_dilated(lhs, rhs, window_strides, padding, **options) -> jax.Array:
    """``lax.conv_general_dilated`` with the same forward and the same gradients, written
    so that XLA computes the gradients fast inside a loop.

    XLA on CPU runs a convolution's gradients ~7-14x slower inside a while loop (the
    learner's ``lax.scan`` of K updates) than in straight-line code, while forward
    convolutions, slices and matmuls run at full speed in both
    (``benchmarks/learner_step.py``). So the backward pass here is made of those: the
    input gradient is a forward convolution of the output gradient with the kernel turned
    180° (I/O swapped), the kernel gradient a sum of matmuls over shifted input slices.
    Covers what our networks use (NHWC inputs, HWIO kernels, stride 1, no dilation or
    groups); anything else is plain ``lax.conv_general_dilated``.
    """
    conv = functools.partial(
        lax.conv_general_dilated, window_strides=window_strides, padding=padding, **options
    )
    nhwc = lax.conv_dimension_numbers(lhs.shape, rhs.shape, ("NHWC", "HWIO", "NHWC"))
    plain = (
        lhs.ndim == 4
        and options.get("dimension_numbers") in (nhwc, ("NHWC", "HWIO", "NHWC"))
        and tuple(window_strides) == (1, 1)
        and options.get("feature_group_count", 1) == 1
        and all(tuple(options.get(d) or (1, 1)) == (1, 1) for d in ("lhs_dilation", "rhs_dilation"))
    )
    if not plain:
        return conv(lhs, rhs)

    @jax.custom_vjp
    def f(x, kernel):
        return conv(x, kernel)

    def forward(x, kernel):
        return conv(x, kernel), (x, kernel)

    def backward(residuals, g):
        x, kernel = residuals  # [N, H, W, I], [kh, kw, I, O]
        kh, kw, _, _ = kernel.shape
        pads = padding
        if isinstance(padding, str):
            pads = lax.padtype_to_pads(x.shape[1:3], (kh, kw), (1, 1), padding)
        # Input gradient: the output gradient convolved with the kernel turned 180° and
        # its I/O swapped, as a plain forward convolution (what XLA does fast).
        flipped = jnp.flip(kernel, (0, 1)).transpose(0, 1, 3, 2)  # [kh, kw, O, I]
        back_pads = [(k - 1 - lo, k - 1 - hi) for k, (lo, hi) in zip((kh, kw), pads, strict=True)]
        dx = lax.conv_general_dilated(g, flipped, (1, 1), back_pads, dimension_numbers=nhwc)
        xp = jnp.pad(x, [(0, 0), *pads, (0, 0)])
        h, w = g.shape[1:3]
        dk = jnp.stack(  # [kh * kw, I, O]: Σ over batch and board of input x output gradient
            [
                jnp.einsum("nhwi,nhwo->io", xp[:, a : a + h, b : b + w], g)
                for a in range(kh)
                for b in range(kw)
            ]
        )
        return dx, dk.reshape(kernel.shape).astype(kernel.dtype)

    f.defvjp(forward, backward)
    return f(lhs, rhs)


Conv = functools.partial(nn.Conv, conv_general_dilated=conv_general_dilated)


class ResidualBlock(nn.Module):
    channels: int
    conv: Callable[..., nn.Module] = Conv
    dtype: Any = None  # compute dtype (None: the parameters', float32)

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        y = self.conv(self.channels, (3, 3), dtype=self.dtype)(x)
        y = nn.relu(nn.LayerNorm(dtype=self.dtype)(y))
        y = self.conv(self.channels, (3, 3), dtype=self.dtype)(y)
        y = nn.LayerNorm(dtype=self.dtype)(y)
        return nn.relu(x + y)


class ResNet(nn.Module):
    """AlphaZero's tower, small: a 3x3 conv stem, ``num_blocks`` residual blocks, then a
    policy head (1x1 conv, dense to A logits) and a value head (1x1 conv to
    ``value_channels``, dense to ``value_hidden`` units (0: ``channels``), dense, tanh).
    ``conv`` builds each convolution (Flax's ``nn.Conv`` works too: same parameters).
    ``dtype``: the compute dtype (bfloat16 for mixed precision); parameters stay float32
    and the outputs are float32."""

    num_actions: int
    num_blocks: int
    channels: int
    conv: Callable[..., nn.Module] = Conv
    value_channels: int = 1
    value_hidden: int = 0
    dtype: Any = None
    value: CategoricalValue | None = None  # None: a tanh head

    @nn.compact
    def __call__(
        self, observation: jax.Array, value_logits: bool = False
    ) -> tuple[jax.Array, jax.Array]:
        x = observation.astype(jnp.float32)  # [B, H, W, C]
        conv, dense = (functools.partial(m, dtype=self.dtype) for m in (self.conv, nn.Dense))
        x = nn.relu(nn.LayerNorm(dtype=self.dtype)(conv(self.channels, (3, 3))(x)))
        for _ in range(self.num_blocks):
            x = ResidualBlock(self.channels, self.conv, self.dtype)(x)

        # The heads' 1x1 convs have 1-2 channels: a LayerNorm over so few features would
        # erase them (over one channel it outputs a constant), so the heads read the
        # normalised trunk directly.
        p = nn.relu(conv(2, (1, 1))(x))
        logits = dense(self.num_actions)(p.reshape(p.shape[0], -1))  # [B, A]

        v = nn.relu(conv(self.value_channels, (1, 1))(x))
        v = dense(self.value_hidden or self.channels)(v.reshape(v.shape[0], -1))
        v = nn.relu(v)
        return logits.astype(jnp.float32), _value_head(v, dense, self.value, value_logits)


class MLP(nn.Module):
    """Flattened observation -> ``num_layers`` x (dense, LayerNorm, relu) -> two heads."""

    num_actions: int
    hidden_size: int
    num_layers: int
    dtype: Any = None  # compute dtype, as ResNet's
    value: CategoricalValue | None = None  # None: a tanh head

    @nn.compact
    def __call__(
        self, observation: jax.Array, value_logits: bool = False
    ) -> tuple[jax.Array, jax.Array]:
        x = observation.astype(jnp.float32).reshape(observation.shape[0], -1)  # [B, D]
        dense = functools.partial(nn.Dense, dtype=self.dtype)
        for _ in range(self.num_layers):
            x = nn.relu(nn.LayerNorm(dtype=self.dtype)(dense(self.hidden_size)(x)))
        logits = dense(self.num_actions)(x)  # [B, A]
        return logits.astype(jnp.float32), _value_head(x, dense, self.value, value_logits)


def _value_head(x: jax.Array, dense, value: CategoricalValue | None, value_logits: bool):
    """[B, D] features -> the value float32 [B] (tanh, or decoded from the bins), or with
    ``value_logits`` the bins' logits float32 [B, K] (a tanh head: its [B] value)."""
    if value is None:
        return jnp.tanh(dense(1)(x)[:, 0]).astype(jnp.float32)  # [B]
    bins = dense(value.bins)(x).astype(jnp.float32)  # [B, K]
    return bins if value_logits else value.decode(bins)


def value_transform(config: NetworkConfig) -> CategoricalValue | None:
    """The categorical value head of ``config``, None for a tanh head."""
    if config.value_head == "categorical":
        return CategoricalValue(config.value_bins, config.value_max)
    return None


def make_network(config: NetworkConfig, env: Env) -> nn.Module:
    """The network for ``env``: a ResNet for rank-3 (H, W, C) observations, else an MLP
    (``config.kind`` may force either)."""
    kind = config.kind
    dtype = jnp.bfloat16 if config.dtype == "bfloat16" else None  # None: float32
    if kind == "auto":
        kind = "resnet" if len(env.observation_shape) == 3 else "mlp"
    if kind == "resnet":
        if len(env.observation_shape) != 3:
            raise ValueError(
                f"a ResNet needs (H, W, C) observations, {env.id} has {env.observation_shape}"
            )
        return ResNet(
            env.num_actions,
            config.num_blocks,
            config.channels,
            value_channels=config.value_channels,
            value_hidden=config.value_hidden,
            dtype=dtype,
            value=value_transform(config),
        )
    if kind == "mlp":
        return MLP(
            env.num_actions,
            config.hidden_size,
            config.num_layers,
            dtype=dtype,
            value=value_transform(config),
        )
    raise ValueError(f"unknown network kind {config.kind!r}; choose auto, resnet or mlp")


def init_params(network: nn.Module, env: Env, key: jax.Array) -> dict:
    """The network's variables (``{"params": ...}``) for a batch-of-one dummy input."""
    dummy = jnp.zeros((1, *env.observation_shape), jnp.float32)
    return network.init(key, dummy)


def make_apply_fn(network: nn.Module) -> ApplyFn:
    """``apply_fn(variables, observations [B, ...]) -> (logits [B, A], value [B])``."""
    return network.apply


@dataclasses.dataclass(frozen=True)
class SymmetryAveraged:
    """An ApplyFn averaged over a symmetry group (test-time augmentation, as in AlphaGo).

    The network sees all G transforms of each observation in one batch [G * B]; each
    transform's policy is mapped back to the original actions and the G policies are
    averaged (the mixture: logits out are log of the mean probability), as are the
    values. The result is exactly equivariant: the average for a transformed position is
    the transformed average. Index tables are tuples, so two wrappers of one network and
    group are equal and share their compiled functions. (The mean of the logits, a
    geometric mean, kept the result in 502 rather than 507 of 559 critical Connect Four
    positions with the c4_gate4 agent; one run, within noise.)
    """

    apply_fn: ApplyFn
    observation_index: tuple[tuple[int, ...], ...]  # [G, P], envs.symmetry.Symmetries
    inverse_action_index: tuple[tuple[int, ...], ...]  # [G, A]: transformed -> original

    def __call__(self, variables, observation: jax.Array) -> tuple[jax.Array, jax.Array]:
        cells = np.asarray(self.observation_index)  # [G, P]
        g, batch = cells.shape[0], observation.shape[0]
        flat = observation.reshape(batch, cells.shape[1], -1)  # [B, P, C]
        views = jnp.swapaxes(flat[:, cells], 0, 1)  # [G, B, P, C]
        logits, value = self.apply_fn(
            variables, views.reshape(g * batch, *observation.shape[1:])
        )  # [G * B, A], [G * B]
        log_policy = jax.nn.log_softmax(logits.reshape(g, batch, -1))  # [G, B, A]
        index = np.asarray(self.inverse_action_index)[:, None]  # [G, 1, A]
        back = jnp.take_along_axis(log_policy, index, 2)  # [G, B, A], original actions
        mean = jax.nn.logsumexp(back, axis=0) - np.log(g)  # log of the mean policy
        return mean, value.reshape(g, batch).mean(0)  # [B, A], [B]


def symmetry_averaged(apply_fn: ApplyFn, symmetries: Symmetries) -> ApplyFn:
    """``apply_fn`` averaged over ``symmetries`` (itself when the group is trivial)."""
    if symmetries.size == 1:
        return apply_fn
    to_tuple = lambda a: tuple(map(tuple, np.asarray(a).tolist()))  # noqa: E731
    inverse = np.argsort(symmetries.action_index, axis=1)
    return SymmetryAveraged(apply_fn, to_tuple(symmetries.observation_index), to_tuple(inverse))
