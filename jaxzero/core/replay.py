"""A fixed-capacity ring buffer of training positions, on device.

Positions are written in order at ``(insert_index + i) % capacity`` and overwrite the
oldest once the buffer is full. Split over S devices (``shards``), each device keeps a
ring of its own C / S slots, written by its own games: ``insert_index`` and ``size``
are then int32 [S], one per ring (:func:`local` views one ring as a whole buffer).
Sampling is uniform over the filled part (the AlphaZero papers sample uniformly, no
prioritisation), and each sampled position is mapped by a random element of the game's
symmetry group: observation, policy and legal mask alike.

For a learned model the buffer also keeps, per position, the move played there, the
reward it paid its mover and how many positions of its game follow it (``sequences``):
a game's positions are written in order into consecutive slots, so the K positions after
slot s are the slots s + 1 .. s + K (modulo the ring), and they outlive s (the ring
overwrites its oldest slot first). :mod:`jaxzero.core.unroll` samples them.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from envs.core import Env, state_dataclass
from envs.symmetry import Symmetries

Array = jax.Array


@state_dataclass
class ReplayBuffer:
    """C = capacity, A = actions."""

    observation: Array  # [C, *observation_shape] env's observation dtype
    policy: Array  # float32 [C, A]  search policy (training target; zeros: none)
    value_target: Array  # float32 [C]  outcome z from the mover's view (discounted)
    legal_action_mask: Array  # bool [C, A]
    written: Array  # bool [C]  slot holds a position
    insert_index: Array  # int32 [] (int32 [S] split over S devices)  next slot to write
    size: Array  # int32 [] (int32 [S])  filled slots, min(total written, C)
    # A learned model's sequences (None without one):
    action: Array | None = None  # int32 [C]  the move played at the position
    reward: Array | None = None  # float32 [C]  what that move paid its mover
    remaining: Array | None = None  # int32 [C]  positions of the game after this one

    def replace(self, **changes) -> ReplayBuffer:
        return dataclasses.replace(self, **changes)

    @property
    def capacity(self) -> int:
        return self.policy.shape[0]


@state_dataclass
class Batch:
    observation: Array  # [N, *observation_shape]
    policy: Array  # float32 [N, A]
    value_target: Array  # float32 [N]
    legal_action_mask: Array  # bool [N, A]
    action: Array | None = None  # int32 [N]  (sequences only, as ReplayBuffer's)
    reward: Array | None = None  # float32 [N]
    remaining: Array | None = None  # int32 [N]

    def replace(self, **changes) -> Batch:
        return dataclasses.replace(self, **changes)


def init_replay(env: Env, capacity: int, shards: int = 1, sequences: bool = False) -> ReplayBuffer:
    """An empty buffer for ``env``'s positions; ``shards`` > 1: one ring per device;
    ``sequences``: keep each position's move, reward and the game's remaining length."""
    obs = jax.eval_shape(lambda: env.init(jax.random.key(0)).observation)
    a = env.num_actions
    extra = {}
    if sequences:
        extra = {
            "action": jnp.zeros((capacity,), jnp.int32),
            "reward": jnp.zeros((capacity,), jnp.float32),
            "remaining": jnp.zeros((capacity,), jnp.int32),
        }
    return ReplayBuffer(
        observation=jnp.zeros((capacity, *obs.shape), obs.dtype),
        policy=jnp.zeros((capacity, a), jnp.float32),
        value_target=jnp.zeros((capacity,), jnp.float32),
        legal_action_mask=jnp.zeros((capacity, a), jnp.bool_),
        written=jnp.zeros((capacity,), jnp.bool_),
        insert_index=jnp.zeros((shards,), jnp.int32) if shards > 1 else jnp.int32(0),
        size=jnp.zeros((shards,), jnp.int32) if shards > 1 else jnp.int32(0),
        **extra,
    )


def local(buffer: ReplayBuffer) -> ReplayBuffer:
    """Inside ``shard_map``: this device's ring (counters int32 [1]) as a whole buffer."""
    return buffer.replace(insert_index=buffer.insert_index[0], size=buffer.size[0])


def unlocal(buffer: ReplayBuffer) -> ReplayBuffer:
    """The inverse of :func:`local`: the counters back to int32 [1]."""
    return buffer.replace(insert_index=buffer.insert_index[None], size=buffer.size[None])


def add(buffer: ReplayBuffer, batch: Batch, valid: Array) -> ReplayBuffer:
    """Write the rows of ``batch`` [N] where ``valid`` (bool [N]) holds, in order, at the
    insert index; invalid rows are dropped (fixed shapes: a masked scatter). Writing more
    than ``capacity`` valid rows at once keeps the ring semantics of one-by-one writes
    (the later rows win)."""
    capacity = buffer.capacity
    valid = valid.astype(jnp.bool_)
    count = valid.sum(dtype=jnp.int32)
    offset = jnp.cumsum(valid, dtype=jnp.int32) - 1  # [N] rank among valid rows
    # Only the last `capacity` valid rows survive a wrap-around; the rest are dropped so
    # that no two rows target the same slot.
    keep = valid & (offset >= count - capacity)
    slot = (buffer.insert_index + offset) % capacity
    slot = jnp.where(keep, slot, capacity)  # out of bounds -> dropped

    def scatter(store: Array, rows: Array) -> Array:
        return store.at[slot].set(rows.astype(store.dtype), mode="drop")

    if buffer.action is not None:
        assert batch.action is not None and batch.reward is not None
        assert buffer.reward is not None and buffer.remaining is not None
        assert batch.remaining is not None
        buffer = buffer.replace(
            action=scatter(buffer.action, batch.action),
            reward=scatter(buffer.reward, batch.reward),
            remaining=scatter(buffer.remaining, batch.remaining),
        )
    return buffer.replace(
        observation=scatter(buffer.observation, batch.observation),
        policy=scatter(buffer.policy, batch.policy),
        value_target=scatter(buffer.value_target, batch.value_target),
        legal_action_mask=scatter(buffer.legal_action_mask, batch.legal_action_mask),
        written=scatter(buffer.written, jnp.ones_like(valid)),
        insert_index=(buffer.insert_index + count) % capacity,
        size=jnp.minimum(buffer.size + count, capacity),
    )


def sample(
    buffer: ReplayBuffer, key: Array, batch_size: int, symmetries: Symmetries | None = None
) -> Batch:
    """``batch_size`` positions drawn uniformly (with replacement) from the filled part,
    each transformed by a uniformly random symmetry element when ``symmetries`` is given.
    An empty buffer yields slot 0 (all zeros); callers gate updates on ``buffer.size``."""
    k_index, k_sym = jax.random.split(key)
    index = jax.random.randint(k_index, (batch_size,), 0, jnp.maximum(buffer.size, 1))
    batch = Batch(
        observation=buffer.observation[index],
        policy=buffer.policy[index],
        value_target=buffer.value_target[index],
        legal_action_mask=buffer.legal_action_mask[index],
    )
    if symmetries is None or symmetries.size == 1:
        return batch
    element = jax.random.randint(k_sym, (batch_size,), 0, symmetries.size)
    return Batch(
        observation=jax.vmap(symmetries.transform_observation)(batch.observation, element),
        policy=jax.vmap(symmetries.transform_actions)(batch.policy, element),
        value_target=batch.value_target,
        legal_action_mask=jax.vmap(symmetries.transform_actions)(batch.legal_action_mask, element),
    )
