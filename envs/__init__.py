"""Pure-JAX game environments with a pgx-compatible API.

import envs
env = envs.make("tic_tac_toe")          # or "pgx/othello", or "mygames.connect3:ConnectThree"
state = env.init(jax.random.key(0))
state = env.step(state, action)
envs.check_env(env)                     # the contract, and every capability env declares
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from envs.core import Env, State, state_dataclass
from envs.registry import available, game_spec, make, register
from envs.symmetry import Symmetries
from envs.testing import check_chance, check_env, check_hidden_information, check_symmetries

if TYPE_CHECKING:
    from envs.pgx import PgxEnv

register("tic_tac_toe", "envs.tic_tac_toe:TicTacToe")
register("connect_four", "envs.connect_four:ConnectFour")
register("go", "envs.go:Go")
register("go_6x6", "envs.go:Go", size=6)
register("go_9x9", "envs.go:Go", size=9)
register("star_duel", "envs.star_duel:StarDuel")
# The short game for training (authority 10; a turn cap that keeps max_steps at 800).
register("star_duel_short", "envs.star_duel:StarDuel", authority=10, turn_cap=20)
# pgx's games register through the entry point "jaxzero.games" (envs.pgx:register).


def from_pgx(pgx_env: Any, max_steps: int | None = None) -> PgxEnv:
    """Any pgx env as an Env (see :mod:`envs.pgx`)."""
    from envs.pgx import from_pgx

    return from_pgx(pgx_env, max_steps=max_steps)


__all__ = [
    "Env",
    "State",
    "Symmetries",
    "available",
    "check_chance",
    "check_env",
    "check_hidden_information",
    "check_symmetries",
    "from_pgx",
    "game_spec",
    "make",
    "register",
    "state_dataclass",
]
