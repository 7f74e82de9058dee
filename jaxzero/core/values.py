"""Value heads for returns of any scale: MuZero's invertible transform and a categorical
head over it.

A ``tanh`` head (the default) predicts values in [-1, 1]: two-player games with ±1
outcomes. Scores that reach the thousands (2048) or outcomes beyond ±1 (backgammon's
gammons, ±2 and ±3) need a head whose range and resolution fit them. MuZero's answer
(Schrittwieser et al. 2020, appendix F; Pohlen et al. 2018 for h) is used here:

    h(x)     = sign(x) · (sqrt(|x| + 1) - 1) + ε·x          (ε = 0.001)
    h⁻¹(y)   = sign(y) · (((sqrt(1 + 4ε(|y| + 1 + ε)) - 1) / (2ε))² - 1)

h squashes large returns (h(10 000) ≈ 109) while staying invertible and nearly linear
near 0, so one network can resolve both a 4-point merge and a 20 000-point game. The head
predicts a categorical distribution over K bins evenly spaced on h's range,
[-h(value_max), h(value_max)]; its value is h⁻¹ of the distribution's mean, and it is
trained by cross-entropy against the target's *two-hot* encoding (the two bins around
h(target), weighted so that their mean is h(target) exactly). Cross-entropy over bins
keeps the gradient's scale independent of the return's, which is what a squared error on
raw scores in the thousands lacks. (Why not a plain linear head on h(x)? MuZero's
ablations and later work, e.g. Farebrother et al. 2024, find the categorical loss trains
faster and more stably.)
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp

Array = jax.Array

EPSILON = 1e-3


def h(x: Array) -> Array:
    """MuZero's value transform (elementwise)."""
    return jnp.sign(x) * (jnp.sqrt(jnp.abs(x) + 1.0) - 1.0) + EPSILON * x


def h_inverse(y: Array) -> Array:
    """The exact inverse of :func:`h` (elementwise), written without the cancellation of
    ``sqrt(1 + a) - 1`` (as ``a / (sqrt(1 + a) + 1)``) so float32 keeps small values."""
    a = jnp.abs(y) + 1.0 + EPSILON
    root = 2.0 * a / (jnp.sqrt(1.0 + 4.0 * EPSILON * a) + 1.0)  # = sqrt(|x| + 1)
    return jnp.sign(y) * (root - 1.0) * (root + 1.0)


@dataclasses.dataclass(frozen=True)
class CategoricalValue:
    """``bins`` categories evenly spaced on [-h(max_value), h(max_value)]."""

    bins: int
    max_value: float

    def support(self) -> Array:
        """float32 [K]: the bins' centres, in h's space."""
        top = math.sqrt(self.max_value + 1.0) - 1.0 + EPSILON * self.max_value  # h(max_value)
        return jnp.linspace(-top, top, self.bins, dtype=jnp.float32)

    def encode(self, value: Array) -> Array:
        """Two-hot target distributions: [...] -> float32 [..., K] (values beyond
        ±max_value are clipped to it)."""
        support = self.support()
        y = jnp.clip(h(value.astype(jnp.float32)), support[0], support[-1])
        position = (y - support[0]) / (support[1] - support[0])  # [...] in [0, K - 1]
        low = jnp.clip(jnp.floor(position), 0, self.bins - 2).astype(jnp.int32)
        upper = position - low  # weight of bin low + 1
        bins = jnp.arange(self.bins)
        return jnp.where(bins == low[..., None], 1.0 - upper[..., None], 0.0) + jnp.where(
            bins == low[..., None] + 1, upper[..., None], 0.0
        )

    def decode(self, logits: Array) -> Array:
        """The value of categorical logits: [..., K] -> float32 [...]."""
        probs = jax.nn.softmax(logits.astype(jnp.float32), axis=-1)
        return h_inverse(probs @ self.support())
