"""A tiny single-player test game that pays a score on every move (shared by tests)."""

import jax.numpy as jnp

from envs import symmetry
from envs.core import Env, State


class ScoreGame(Env):
    """Three moves by the one player; action a pays (a + 1) · 10^ply (ply 0, 1, 2), so a
    game's rewards spell its actions: actions (1, 0, 2) pay 2, 10 and 300. The observation
    is [ply == 0, ply == 1, ply == 2]."""

    id = "score_game"
    num_players = 1
    num_actions = 3
    observation_shape = (3,)
    max_steps = 3
    symmetries = symmetry.identity(3, 3)

    def _init(self, key):
        del key
        return self._make(jnp.int32(0), jnp.float32(0.0))

    def _make(self, step, reward):
        state = State(
            current_player=jnp.int32(0),
            observation=jnp.zeros(3),
            legal_action_mask=jnp.ones(3, jnp.bool_),
            rewards=reward[None].astype(jnp.float32),
            terminated=step >= 3,
            truncated=jnp.bool_(False),
            step_count=step,
        )
        return state.replace(observation=self._observe(state, state.current_player))

    def _step(self, state, action, key):
        reward = (action + 1) * jnp.power(10.0, state.step_count)
        return self._make(state.step_count + 1, reward)

    def _observe(self, state, player):
        return (jnp.arange(3) == state.step_count).astype(jnp.float32)
