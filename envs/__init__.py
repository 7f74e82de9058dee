"""Pure-JAX game environments with a pgx-compatible API.

import envs
env = envs.make("tic_tac_toe")
state = env.init(jax.random.key(0))
state = env.step(state, action)
"""

from envs.core import Env, State, available, make, register, state_dataclass
from envs.pgx import GAMES
from envs.symmetry import Symmetries

register("tic_tac_toe", "envs.tic_tac_toe:TicTacToe")
register("connect_four", "envs.connect_four:ConnectFour")
register("go", "envs.go:Go")
register("go_6x6", "envs.go:Go", size=6)
register("go_9x9", "envs.go:Go", size=9)
register("star_duel", "envs.star_duel:StarDuel")
# The short game for training (authority 10; a turn cap that keeps max_steps at 800).
register("star_duel_short", "envs.star_duel:StarDuel", authority=10, turn_cap=20)

# pgx's perfect-information games of one or two players, through the bridge (pgx optional;
# MinAtar's also needs pgx-minatar).
for _game in GAMES:
    register(f"pgx/{_game}", "envs.pgx:make_pgx", game_id=_game)


def from_pgx(pgx_env, max_steps=None):
    """Any pgx env as an Env (see :mod:`envs.pgx`)."""
    from envs.pgx import from_pgx

    return from_pgx(pgx_env, max_steps=max_steps)


__all__ = [
    "Env",
    "State",
    "Symmetries",
    "available",
    "from_pgx",
    "make",
    "register",
    "state_dataclass",
]
