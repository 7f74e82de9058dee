"""The AlphaZero loss and its optax update.

    loss = CE(π_search, softmax(masked logits)) + c_v · (v - z)²

averaged over the minibatch, where π_search is the search policy stored in replay (all
zeros for a position without a policy target, a cheap search of playout-cap
randomisation: its CE term is zero), the network's logits are masked to the legal
actions of the (symmetry-mapped) position, and z is the value target. With a categorical
value head the value term is instead the cross-entropy of the head's bins against z's
two-hot encoding (``jaxzero.core.values``), times c_v. Weight decay is AdamW's decoupled
decay (not an L2 term in the loss).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import optax

from jaxzero.core.config import OptimConfig
from jaxzero.core.networks import ApplyFn
from jaxzero.core.replay import Batch
from jaxzero.core.search import mask_logits
from jaxzero.core.values import CategoricalValue

Array = jax.Array


def make_schedule(config: OptimConfig) -> optax.Schedule:
    """Learning rate by update count (see ``OptimConfig``): ``learning_rate`` times the
    schedule's shape, so that the rate may be a population member's traced value."""
    if config.schedule == "constant":
        return optax.constant_schedule(config.learning_rate)
    if config.schedule == "cosine":
        shape = optax.warmup_cosine_decay_schedule(
            init_value=0.0 if config.warmup_steps > 0 else 1.0,
            peak_value=1.0,
            warmup_steps=config.warmup_steps,
            decay_steps=max(config.decay_steps, config.warmup_steps + 1),
            end_value=config.end_lr_factor,
        )
        return lambda count: config.learning_rate * shape(count)
    raise ValueError(f"unknown schedule {config.schedule!r}; choose constant or cosine")


def make_optimizer(config: OptimConfig) -> optax.GradientTransformation:
    """clip_by_global_norm(max_grad_norm) (0: no clipping), then AdamW(schedule,
    weight_decay). ``max_grad_norm`` may be a traced population hyperparameter, hence
    ``jnp.where`` (an infinite bound clips nothing) rather than a Python branch."""
    max_norm = config.max_grad_norm
    return optax.chain(
        optax.clip_by_global_norm(jnp.where(max_norm > 0, max_norm, jnp.inf)),
        optax.adamw(make_schedule(config), weight_decay=config.weight_decay),
    )


def loss_fn(
    params,
    apply_fn: ApplyFn,
    batch: Batch,
    value_loss_weight: float = 1.0,
    value: CategoricalValue | None = None,
) -> tuple[Array, dict[str, Array]]:
    """The scalar loss and its parts (policy_loss, value_loss, policy_entropy);
    ``value``: the network's categorical value head (None: a tanh head)."""
    if value is None:
        logits, prediction = apply_fn(params, batch.observation)  # [N, A], [N]
        value_loss = jnp.mean((prediction - batch.value_target) ** 2)
    else:
        logits, bins = apply_fn(params, batch.observation, value_logits=True)  # [N, A], [N, K]
        two_hot = value.encode(batch.value_target)  # [N, K]
        value_loss = -jnp.sum(two_hot * jax.nn.log_softmax(bins, axis=-1), axis=-1).mean()
    log_prior = jax.nn.log_softmax(mask_logits(logits, batch.legal_action_mask), axis=-1)
    target = batch.policy
    policy_loss = -jnp.sum(jnp.where(target > 0, target * log_prior, 0.0), axis=-1).mean()
    prior = jnp.exp(log_prior)
    entropy = -jnp.sum(jnp.where(prior > 0, prior * log_prior, 0.0), axis=-1).mean()
    loss = policy_loss + value_loss_weight * value_loss
    return loss, {"policy_loss": policy_loss, "value_loss": value_loss, "policy_entropy": entropy}


def make_update_fn(
    apply_fn: ApplyFn,
    optimizer: optax.GradientTransformation,
    config: OptimConfig,
    axis_name: str | None = None,
    value: CategoricalValue | None = None,
) -> Callable:
    """``update(params, opt_state, batch) -> (params, opt_state, metrics)``: one step
    (``value``: the network's categorical value head, None for a tanh head).

    ``axis_name``: inside ``shard_map`` over that mesh axis, each device holds a share of
    the minibatch; gradients and metrics are averaged over the axis (``pmean``), so every
    device takes the step of the whole minibatch."""

    def loss(params, batch: Batch) -> tuple[Array, dict[str, Array]]:
        return loss_fn(params, apply_fn, batch, config.value_loss_weight, value)

    return make_step_fn(loss, optimizer, axis_name)


def make_step_fn(
    loss: Callable[[Any, Any], tuple[Array, dict[str, Array]]],
    optimizer: optax.GradientTransformation,
    axis_name: str | None = None,
) -> Callable:
    """``update(params, opt_state, batch) -> (params, opt_state, metrics)``: one optax
    step on ``loss(params, batch) -> (scalar, metrics)``, gradients and metrics averaged
    over ``axis_name`` when given; ``metrics`` gain ``grad_norm``. Every learner's step:
    the rules' (:func:`make_update_fn`) and the learned model's
    (:func:`jaxzero.core.unroll.make_unroll_update_fn`)."""

    def update(params, opt_state, batch):
        grads, metrics = jax.grad(loss, has_aux=True)(params, batch)
        if axis_name is not None:
            grads, metrics = jax.lax.pmean((grads, metrics), axis_name)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
        metrics["grad_norm"] = optax.tree.norm(grads)
        return params, opt_state, metrics

    return update
