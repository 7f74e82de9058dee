"""A tiny test game where the same player moves twice in a row (shared by several tests)."""

import jax
import jax.numpy as jnp

from envs import symmetry
from envs.core import Env, State, state_dataclass


@state_dataclass
class DoubleMoveState(State):
    first: jax.Array  # int32 []  the first action, -1 before it


class DoubleMove(Env):
    """Three plies: player 0 moves twice in a row, then player 1 once, then it ends.

    Player 0 wins if their first action was 0 and loses if it was 1; later actions do not
    matter. The observation is [step == 0, step == 1, step == 2, first == 0]."""

    id = "double_move"
    num_actions = 2
    observation_shape = (4,)
    max_steps = 3
    symmetries = symmetry.identity(4, 2)

    def _init(self, key):
        del key
        return self._make(jnp.int32(0), jnp.int32(-1))

    def _make(self, step, first):
        done = step >= 3
        winner_is_0 = first == 0
        rewards = jnp.where(done, jnp.where(winner_is_0, 1.0, -1.0) * jnp.array([1.0, -1.0]), 0.0)
        state = DoubleMoveState(
            current_player=jnp.where(step == 2, 1, 0).astype(jnp.int32),
            observation=jnp.zeros(4),
            legal_action_mask=jnp.ones(2, jnp.bool_),
            rewards=rewards.astype(jnp.float32),
            terminated=done,
            truncated=jnp.bool_(False),
            step_count=step,
            first=first,
        )
        return state.replace(observation=self._observe(state, state.current_player))

    def _step(self, state, action, key):
        first = jnp.where(state.step_count == 0, action, state.first)
        return self._make(state.step_count + 1, first)

    def _observe(self, state, player):
        step = state.step_count
        return jnp.stack([step == 0, step == 1, step == 2, state.first == 0]).astype(jnp.float32)
