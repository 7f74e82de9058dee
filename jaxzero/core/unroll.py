"""The learned model's learner (MuZero): each replayed position unrolled K moves by the
dynamics and trained against what followed it in its game.

    latent_0 = h(o_s)
    latent_k, r_k = g(latent_{k-1}, a_{s+k-1})                  k = 1 .. K
    loss = ℓ(f(latent_0), s) + (1 / K) · Σ_{k=1..K} [ℓ(f(latent_k), s + k) + ℓ_r(r_k, u_{s+k-1})]

where ℓ is the rules learner's loss on a position's policy and value targets
(:mod:`jaxzero.core.learner`: cross-entropy to the search policy, squared error or the
bins' cross-entropy to the value target) and ℓ_r the same value loss on the reward the
move paid its mover; the value and reward terms are weighted by
``optim.value_loss_weight``. Policies are not masked to the legal moves: inside the tree the
search reads the model's prior unmasked, so the model must learn where moves are
illegal. The gradient into each dynamics step is halved (MuZero's scaling, which keeps
the total gradient into the dynamics the same however long the unroll). Past a game's
end the targets are absorbing: a uniform policy, value and reward 0, after uniformly
random moves.

Reanalyse (``model.reanalyse``): the first share of a minibatch's rows get fresh targets,
a search with the newest parameters from each of their K + 1 positions: its policy, and
its root value as the value target (bootstrapped wholly from the search, the target
MuZero Reanalyse approaches).

:func:`model_errors` measures the unrolled model against itself on the real positions:
for k = 1 .. K, the value and policy f predicts after k moves of g against what it
predicts from the observation k moves later, and the reward against the one paid.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax

from envs.core import Env, state_dataclass
from envs.symmetry import Symmetries
from jaxzero.core.config import OptimConfig
from jaxzero.core.learner import make_step_fn
from jaxzero.core.model import LearnedModel
from jaxzero.core.model_networks import predict, represent, step
from jaxzero.core.policies import SearchPolicy
from jaxzero.core.replay import ReplayBuffer
from jaxzero.core.values import CategoricalValue

Array = jax.Array


@state_dataclass
class Unroll:
    """N replayed positions and the K moves after each. Past its game's end a row holds
    absorbing targets (``real`` False)."""

    observation: Array  # [N, K + 1, *observation_shape]  positions s .. s + K (0 past the end)
    legal_action_mask: Array  # bool [N, K + 1, A]  (all legal past the end)
    action: Array  # int32 [N, K]  the moves played at s .. s + K - 1 (random past the end)
    policy: Array  # float32 [N, K + 1, A]  search policies (uniform past the end; 0: none)
    value_target: Array  # float32 [N, K + 1]  (0 past the end)
    reward: Array  # float32 [N, K]  what move k paid its mover (0 past the end)
    real: Array  # bool [N, K + 1]  position s + k belongs to the game

    def replace(self, **changes) -> Unroll:
        return dataclasses.replace(self, **changes)


def sample_unroll(
    buffer: ReplayBuffer,
    key: Array,
    batch_size: int,
    steps: int,
    symmetries: Symmetries | None = None,
) -> Unroll:
    """``batch_size`` positions drawn uniformly from the filled part, each with the
    ``steps`` K positions after it (a game's positions lie in consecutive slots), all of a
    row mapped by one uniformly random symmetry element when ``symmetries`` is given."""
    assert buffer.action is not None and buffer.reward is not None
    assert buffer.remaining is not None, "a learned model's buffer keeps sequences"
    k_index, k_sym, k_act = jax.random.split(key, 3)
    num_actions = buffer.policy.shape[1]
    start = jax.random.randint(k_index, (batch_size,), 0, jnp.maximum(buffer.size, 1))
    offsets = jnp.arange(steps + 1, dtype=jnp.int32)
    slots = (start[:, None] + offsets[None, :]) % buffer.capacity  # [N, K + 1]
    real = offsets[None, :] <= buffer.remaining[start][:, None]  # [N, K + 1]
    moved = real[:, :steps]  # [N, K]: the move at s + k was played
    observation = buffer.observation[slots]
    observation = jnp.where(
        real.reshape(*real.shape, *[1] * (observation.ndim - 2)), observation, 0
    )
    random_moves = jax.random.randint(k_act, (batch_size, steps), 0, num_actions, jnp.int32)
    unroll = Unroll(
        observation=observation,
        legal_action_mask=jnp.where(real[..., None], buffer.legal_action_mask[slots], True),
        action=jnp.where(moved, buffer.action[slots[:, :steps]], random_moves),
        policy=jnp.where(real[..., None], buffer.policy[slots], 1.0 / num_actions),
        value_target=jnp.where(real, buffer.value_target[slots], 0.0),
        reward=jnp.where(moved, buffer.reward[slots[:, :steps]], 0.0),
        real=real,
    )
    if symmetries is None or symmetries.size == 1:
        return unroll
    element = jax.random.randint(k_sym, (batch_size,), 0, symmetries.size)

    def each(transform: Callable) -> Callable:  # over a row's K + 1 (or K) entries
        return jax.vmap(lambda rows, e: jax.vmap(lambda x: transform(x, e))(rows))

    def move(action: Array, e: Array) -> Array:  # an index mapped through the permutation
        one_hot = jax.nn.one_hot(action, num_actions)
        return jnp.argmax(symmetries.transform_actions(one_hot, e)).astype(jnp.int32)

    return unroll.replace(
        observation=each(symmetries.transform_observation)(unroll.observation, element),
        legal_action_mask=each(symmetries.transform_actions)(unroll.legal_action_mask, element),
        policy=each(symmetries.transform_actions)(unroll.policy, element),
        action=each(move)(unroll.action, element),
    )


def _value_loss(out: Array, target: Array, value: CategoricalValue | None) -> Array:
    """Per row [N]: squared error of a value (tanh head) or the bins' cross-entropy
    against the target's two-hot encoding (categorical head)."""
    if value is None:
        return (out - target) ** 2
    return -jnp.sum(value.encode(target) * jax.nn.log_softmax(out, axis=-1), axis=-1)


def _policy_loss(logits: Array, target: Array) -> tuple[Array, Array]:
    """Per row [N]: cross-entropy to the target policy, and the prior's entropy."""
    log_prior = jax.nn.log_softmax(logits, axis=-1)
    loss = -jnp.sum(jnp.where(target > 0, target * log_prior, 0.0), axis=-1)
    prior = jnp.exp(log_prior)
    entropy = -jnp.sum(jnp.where(prior > 0, prior * log_prior, 0.0), axis=-1)
    return loss, entropy


def scale_gradient(x: Array, scale: float) -> Array:
    """``x`` forward; its gradient times ``scale`` backward."""
    return x * scale + jax.lax.stop_gradient(x) * (1.0 - scale)


def unroll_loss_fn(
    params,
    network: nn.Module,
    unroll: Unroll,
    value_loss_weight: float = 1.0,
    value: CategoricalValue | None = None,
) -> tuple[Array, dict[str, Array]]:
    """The scalar loss of the module docstring and its parts (policy_loss, value_loss,
    reward_loss, policy_entropy), each the first position's plus the mean over the K
    unrolled ones; ``value``: the network's categorical head (None: tanh)."""
    bins = value is not None

    def heads(latent: Array, policy: Array, target: Array) -> tuple[Array, Array, Array]:
        logits, out = predict(network, params, latent, bins)
        policy_loss, entropy = _policy_loss(logits, policy)
        return policy_loss, _value_loss(out, target, value), entropy

    def move(latent: Array, x: tuple[Array, ...]):
        action, policy, target, reward = x
        latent, paid = step(network, params, scale_gradient(latent, 0.5), action, bins)
        policy_loss, value_loss, _ = heads(latent, policy, target)
        return latent, (policy_loss, value_loss, _value_loss(paid, reward, value))

    latent = represent(network, params, unroll.observation[:, 0])
    policy_0, value_0, entropy = heads(latent, unroll.policy[:, 0], unroll.value_target[:, 0])
    steps = (
        unroll.action.T,  # [K, N]
        jnp.swapaxes(unroll.policy[:, 1:], 0, 1),  # [K, N, A]
        unroll.value_target[:, 1:].T,  # [K, N]
        unroll.reward.T,  # [K, N]
    )
    _, (policy_k, value_k, reward_k) = jax.lax.scan(move, latent, steps)  # [K, N] each
    policy_loss = policy_0.mean() + policy_k.mean()
    value_loss = value_0.mean() + value_k.mean()
    reward_loss = reward_k.mean()
    loss = policy_loss + value_loss_weight * (value_loss + reward_loss)
    return loss, {
        "policy_loss": policy_loss,
        "value_loss": value_loss,
        "reward_loss": reward_loss,
        "policy_entropy": entropy.mean(),
    }


def make_unroll_update_fn(
    network: nn.Module,
    optimizer: optax.GradientTransformation,
    config: OptimConfig,
    axis_name: str | None = None,
    value: CategoricalValue | None = None,
) -> Callable:
    """``update(params, opt_state, unroll) -> (params, opt_state, metrics)``: one step on
    :func:`unroll_loss_fn`, gradients averaged over ``axis_name`` as the rules learner's
    (:func:`jaxzero.core.learner.make_step_fn`)."""

    def loss(params, batch: Unroll) -> tuple[Array, dict[str, Array]]:
        return unroll_loss_fn(params, network, batch, config.value_loss_weight, value)

    return make_step_fn(loss, optimizer, axis_name)


def reanalyse(
    params,
    unroll: Unroll,
    key: Array,
    *,
    model: LearnedModel,
    env: Env,
    policy: SearchPolicy,
    num_simulations: int,
    rows: int,
) -> Unroll:
    """``unroll`` with fresh targets for its first ``rows`` rows: a noise-free search with
    ``params`` from each of their K + 1 real positions (its policy, its root value)."""
    params = jax.lax.stop_gradient(params)
    head = jax.tree.map(lambda x: x[:rows], unroll)
    k1 = head.real.shape[1]
    flat = lambda x: x.reshape(rows * k1, *x.shape[2:])  # noqa: E731
    legal = flat(head.legal_action_mask)
    root = model.root_from_observation(params, flat(head.observation), legal)
    output = policy(
        params, key, root, model.recurrent_fn(env), num_simulations=num_simulations,
        invalid_actions=~legal, noise=False,
    )  # fmt: skip
    fresh_policy = output.action_weights.reshape(rows, k1, -1)
    fresh_value = output.search_tree.summary().value.reshape(rows, k1)
    real = head.real
    return unroll.replace(
        policy=unroll.policy.at[:rows].set(jnp.where(real[..., None], fresh_policy, head.policy)),
        value_target=unroll.value_target.at[:rows].set(
            jnp.where(real, fresh_value, head.value_target)
        ),
    )


def model_errors(
    params: Any, network: nn.Module, unroll: Unroll, value: CategoricalValue | None = None
) -> dict[str, Array]:
    """Sums and counts, float32 [K] each, of the unrolled model's errors against the real
    positions k = 1 .. K moves later: ``value`` (squared difference of f's values after k
    moves of g and from h of the real observation), ``policy`` (total variation distance
    of their priors), ``reward`` (squared error of the k-th move's reward), and
    ``positions`` / ``moves`` counting the real positions and moves they are over."""
    del value  # the values are compared as values, whatever the head
    steps = unroll.action.shape[1]
    n = unroll.action.shape[0]
    later = unroll.observation[:, 1:].reshape(n * steps, *unroll.observation.shape[2:])
    true_logits, true_value = predict(network, params, represent(network, params, later))
    true_logits = true_logits.reshape(n, steps, -1).swapaxes(0, 1)  # [K, N, A]
    true_value = true_value.reshape(n, steps).T  # [K, N]

    def move(latent: Array, action: Array):
        latent, reward = step(network, params, latent, action)
        logits, value_k = predict(network, params, latent)
        return latent, (logits, value_k, reward)

    latent = represent(network, params, unroll.observation[:, 0])
    _, (logits, value_k, reward) = jax.lax.scan(move, latent, unroll.action.T)  # [K, N, ...]
    distance = 0.5 * jnp.abs(jax.nn.softmax(logits) - jax.nn.softmax(true_logits)).sum(-1)
    positions = unroll.real[:, 1:].T.astype(jnp.float32)  # [K, N]
    moves = unroll.real[:, :-1].T.astype(jnp.float32)  # [K, N]: the k-th move was played
    return {
        "value": (((value_k - true_value) ** 2) * positions).sum(1),
        "policy": (distance * positions).sum(1),
        "reward": (((reward - unroll.reward.T) ** 2) * moves).sum(1),
        "positions": positions.sum(1),
        "moves": moves.sum(1),
    }
