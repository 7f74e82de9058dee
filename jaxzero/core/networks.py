"""Policy/value networks (Flax linen): the contract every network meets, and the two built
in, a ResNet for board observations and an MLP otherwise.

A network is any ``flax.linen.Module`` whose ``__call__(observation [B, *observation_shape])``
(bool or float) returns ``(logits float32 [B, A], value float32 [B])``, the value from the
point of view of the player to move, and that has only ``params`` variables. A network
with a categorical value head (``NetworkConfig.value_head``) also takes ``value_logits``:
``apply(variables, observation, value_logits=True)`` returns the bins' logits ``[B, K]``
in place of the value, for the learner's cross-entropy. :class:`ApplyFn` writes this down.

``network.kind`` names a network: "auto", "resnet", "mlp", a name given to
:func:`register_network`, or a user's module as ``"module:Class"``
(:func:`make_network`); :func:`network_config` records a module passed by hand so that a
later process can rebuild it.

Normalisation is LayerNorm, not BatchNorm: the network's variables are only ``params``,
so every copy of a network (self-play, learner, checkpoint, agent) is the same function
of its parameters, with no running statistics to carry or to desynchronise, and
self-play and training use one code path (no train/eval mode switch).
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from envs.core import Env
from envs.symmetry import Symmetries
from jaxzero.core.config import NetworkConfig, arguments
from jaxzero.core.imports import import_path, is_import_path, load
from jaxzero.core.values import CategoricalValue


class ApplyFn(Protocol):
    """A network as the rest of jaxzero calls it: ``module.apply`` or a wrapper of it."""

    def __call__(
        self, variables: Any, observation: jax.Array, *, value_logits: bool = False
    ) -> tuple[jax.Array, jax.Array]:
        """Evaluate a batch of positions.

        Args:
            variables: the network's variables, ``{"params": ...}``.
            observation: [B, *observation_shape], bool or float.
            value_logits: return a categorical head's bin logits instead of the value.

        Returns:
            ``(logits float32 [B, A], value float32 [B])``, or ``(logits, bins [B, K])``
            with ``value_logits``.
        """
        ...


def conv_general_dilated(
    lhs: jax.Array,
    rhs: jax.Array,
    window_strides: Sequence[int],
    padding: str | Sequence[tuple[int, int]],
    **options: Any,
) -> jax.Array:
    """``lax.conv_general_dilated`` with the same forward and the same gradients, written
    so that XLA computes the gradients fast inside a loop.

    On a CPU, XLA runs a convolution's gradients far slower inside a while loop (the
    learner's ``lax.scan`` of K updates) than in straight-line code, and forward
    convolutions, slices and matmuls at full speed in both (docs/benchmarks.md, "Learner
    step"). So the backward pass here is made of those: the
    input gradient is a forward convolution of the output gradient with the kernel turned
    180° (I/O swapped), the kernel gradient a sum of matmuls over shifted input slices.
    Covers what our networks use (NHWC inputs, HWIO kernels, stride 1, no dilation or
    groups); anything else is plain ``lax.conv_general_dilated``.
    """

    def conv(x: jax.Array, kernel: jax.Array) -> jax.Array:
        return lax.conv_general_dilated(x, kernel, window_strides, padding, **options)

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
        conv = functools.partial(self.conv, dtype=self.dtype)
        dense = functools.partial(nn.Dense, dtype=self.dtype)
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
        return policy_logits(logits, self.num_actions), value_output(
            v, dense, self.value, value_logits
        )


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
        return policy_logits(logits, self.num_actions), value_output(
            x, dense, self.value, value_logits
        )


def policy_logits(logits: jax.Array, num_actions: int) -> jax.Array:
    """The policy head's output as the contract has it: float32 [B, A]."""
    chex.assert_shape(logits, (None, num_actions))
    return logits.astype(jnp.float32)


def value_output(x: jax.Array, dense, value: CategoricalValue | None, value_logits: bool):
    """[B, D] features -> the value float32 [B] (tanh, or decoded from the bins), or with
    ``value_logits`` the bins' logits float32 [B, K] (a tanh head: its [B] value)."""
    if value is None:
        return jnp.tanh(dense(1)(x)[:, 0]).astype(jnp.float32)  # [B]
    bins = dense(value.bins)(x).astype(jnp.float32)  # [B, K]
    if value_logits:
        return bins
    decoded = value.decode(bins)
    chex.assert_shape(decoded, (x.shape[0],))
    return decoded


def value_transform(config: NetworkConfig) -> CategoricalValue | None:
    """The categorical value head of ``config``, None for a tanh head."""
    if config.value_head == "categorical":
        return CategoricalValue(config.value_bins, config.value_max)
    return None


NetworkFactory = Callable[[NetworkConfig, Env], nn.Module]


def _resnet(config: NetworkConfig, env: Env) -> nn.Module:
    if len(env.observation_shape) != 3:
        raise ValueError(
            f"network.kind=resnet needs (H, W, C) observations, {env.id} has "
            f"{env.observation_shape}: use network.kind=mlp"
        )
    return ResNet(
        env.num_actions,
        config.num_blocks,
        config.channels,
        value_channels=config.value_channels,
        value_hidden=config.value_hidden,
        dtype=_dtype(config),
        value=value_transform(config),
    )


def _mlp(config: NetworkConfig, env: Env) -> nn.Module:
    return MLP(
        env.num_actions,
        config.hidden_size,
        config.num_layers,
        dtype=_dtype(config),
        value=value_transform(config),
    )


def _auto(config: NetworkConfig, env: Env) -> nn.Module:
    return (_resnet if len(env.observation_shape) == 3 else _mlp)(config, env)


def _dtype(config: NetworkConfig) -> Any:
    return jnp.bfloat16 if config.dtype == "bfloat16" else None  # None: float32


_NETWORKS: dict[str, NetworkFactory] = {"auto": _auto, "resnet": _resnet, "mlp": _mlp}
_NOT_RECORDED = "<not recorded>"


def register_network(name: str, factory: NetworkFactory) -> None:
    """Make ``network.kind=name`` build ``factory(config.network, env)``.

    Args:
        name: the kind's name; not an import path (no ``:``).
        factory: ``(NetworkConfig, Env) -> flax.linen.Module``, a module meeting the
            contract of this module's docstring.

    Raises:
        ValueError: ``name`` is empty or holds a ``:``.
    """
    if ":" in name or not name:
        raise ValueError(f"a network name is a plain word, got {name!r}")
    _NETWORKS[name] = factory


def network_kinds() -> list[str]:
    """The names ``network.kind`` accepts besides import paths."""
    return sorted(_NETWORKS)


def imports_code(kind: str) -> bool:
    """Whether :func:`make_network` of ``kind`` imports a module (``module:Class``, not a
    registered name)."""
    return kind not in _NETWORKS and is_import_path(kind)


def make_network(config: NetworkConfig, env: Env) -> nn.Module:
    """The network ``config.kind`` names, for ``env``.

    Args:
        config: the network section: a registered kind ("auto": a ResNet for rank-3
            observations, else an MLP), or ``"module:Class"`` of a user's module, built as
            ``Class(num_actions=env.num_actions, **config.args)``.
        env: the game (its observation shape and action count size the network).

    Returns:
        An unbound ``flax.linen.Module``.

    Raises:
        ValueError: one line naming ``network.kind`` or ``network.args``.
    """
    if config.kind in _NETWORKS:
        return _NETWORKS[config.kind](config, env)
    if not is_import_path(config.kind):
        raise ValueError(
            f"network.kind: unknown network {config.kind!r}; choose "
            f"{', '.join(network_kinds())}, or name a flax Module as module:Class"
        )
    module_class = load(config.kind, "network.kind")
    args = dict(config.args)
    unrecorded = sorted(name for name, value in args.items() if value == _NOT_RECORDED)
    if unrecorded:
        raise ValueError(
            f"network.args: {', '.join(unrecorded)} of {config.kind} were not plain values "
            "and were not recorded; pass the network itself (load_agent(path, network=...))"
        )
    try:
        network = module_class(**({"num_actions": env.num_actions} | args))
    except TypeError as error:
        raise ValueError(f"network.kind={config.kind} cannot be built ({error})") from None
    if not isinstance(network, nn.Module):
        raise ValueError(f"network.kind={config.kind} built {network!r}, not a flax Module")
    return network


def network_config(network: nn.Module, config: NetworkConfig, env: Env) -> NetworkConfig:
    """``config`` recording ``network``: unchanged if ``config`` already builds it, else its
    import path as ``kind`` and its constructor arguments (those other than the defaults,
    and other than ``num_actions``, which the builder passes) as ``args``; an argument
    that is no plain value is recorded as not recorded, so that rebuilding it asks for
    the module instead of building another one.

    Args:
        network: the module a trainer was given.
        config: the run's network section.
        env: the game.

    Returns:
        The network section to record.
    """
    try:  # a recorded import path is not imported to compare (jaxzero.core.trust)
        if not imports_code(config.kind) and make_network(config, env) == network:
            return config
    except ValueError:
        pass
    args = {}
    for field in dataclasses.fields(network):
        if field.name in ("parent", "name") or not field.init:
            continue
        if field.name == "num_actions" and getattr(network, field.name) == env.num_actions:
            continue  # the builder passes it: Class(num_actions=A, **args)
        value = getattr(network, field.name)
        if field.default is not dataclasses.MISSING and value == field.default:
            continue
        args[field.name] = value if _plain(value) else _NOT_RECORDED
    return dataclasses.replace(config, kind=import_path(network), args=arguments(args))


def _plain(value: Any) -> bool:
    if isinstance(value, list | tuple):
        return all(map(_plain, value))
    return value is None or isinstance(value, bool | int | float | str)


def init_params(network: nn.Module, env: Env, key: jax.Array) -> dict:
    """The network's variables (``{"params": ...}``) for a batch-of-one dummy input."""
    dummy = jnp.zeros((1, *env.observation_shape), jnp.float32)
    # flax returns a plain dict unless flax_return_frozendict is set, which jaxzero never sets
    return typing.cast(dict, network.init(key, dummy))


def make_apply_fn(network: nn.Module) -> ApplyFn:
    """``apply_fn(variables, observations [B, ...]) -> (logits [B, A], value [B])``."""
    return typing.cast(ApplyFn, network.apply)


@dataclasses.dataclass(frozen=True)
class SymmetryAveraged:
    """An ApplyFn averaged over a symmetry group (test-time augmentation, as in AlphaGo).

    The network sees all G transforms of each observation in one batch [G * B]; each
    transform's policy is mapped back to the original actions and the G policies are
    averaged (the mixture: logits out are log of the mean probability), as are the
    values. The result is exactly equivariant: the average for a transformed position is
    the transformed average. Index tables are tuples, so two wrappers of one network and
    group are equal and share their compiled functions. The mixture rather than the mean of
    the logits: the usual choice (the two compared: docs/results.md, "Connect Four: the
    agent averages its network over the mirror image").
    """

    apply_fn: ApplyFn
    observation_index: tuple[tuple[int, ...], ...]  # [G, P], envs.symmetry.Symmetries
    inverse_action_index: tuple[tuple[int, ...], ...]  # [G, A]: transformed -> original

    def __call__(
        self, variables: Any, observation: jax.Array, *, value_logits: bool = False
    ) -> tuple[jax.Array, jax.Array]:
        if value_logits:
            raise ValueError("a symmetry-averaged network averages values, not value bins")
        cells = np.asarray(self.observation_index)  # [G, P]
        g, batch = cells.shape[0], observation.shape[0]
        flat = observation.reshape(batch, cells.shape[1], -1)  # [B, P, C]
        views = jnp.swapaxes(flat[:, cells], 0, 1)  # [G, B, P, C]
        logits, value = self.apply_fn(variables, views.reshape(g * batch, *observation.shape[1:]))
        chex.assert_shape(logits, (g * batch, len(self.inverse_action_index[0])))
        chex.assert_shape(value, (g * batch,))
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
