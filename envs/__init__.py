"""Pure-JAX game environments with a pgx-compatible API.

import envs
env = envs.make("tic_tac_toe")
state = env.init(jax.random.key(0))
state = env.step(state, action)
"""

from envs import tic_tac_toe  # noqa: F401  (registers the game)
from envs.core import Env, State, available, make, register, state_dataclass
from envs.symmetry import Symmetries

__all__ = ["Env", "State", "Symmetries", "available", "make", "register", "state_dataclass"]
