"""One game played move by move from the host: a terminal, the web board, GTP, a record.

Players and agents take batches, so one position goes to them as a batch of one; its
moves are played with ``env.step`` compiled once by whoever holds the :class:`SingleGame`
(op by op, a Go or pgx move takes a second or more).

    game = SingleGame(env)                  # hold it while the env is played
    state = game.init(key)
    state = game.step(state, action, key)   # action: an int; key: optional
    actions = player.jitted(params, batch_of_one(state), key)   # int32 [1]
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from envs.core import Env, State

Array = jax.Array


@jax.jit  # one program for the whole state: leaf by leaf, each shape compiled an op of its own
def batch_of_one(state: State) -> State:
    """``state`` as a batch of one: every leaf [...] -> [1, ...]."""
    return jax.tree.map(lambda x: x[None], state)


class SingleGame:
    """``env.init`` and ``env.step`` for one unbatched game, each compiled once for this
    object (on its first call): whoever plays ``env`` move by move keeps one, and passes
    ``game.step`` to the functions that share it."""

    def __init__(self, env: Env):
        self.env = env
        self._init = jax.jit(env.init)
        self._step = jax.jit(env.step)

    def init(self, key: Array) -> State:
        """The start of a game (``key``: the PRNG key of its set-up)."""
        return self._init(key)

    def step(self, state: State, action: int | Array, key: Array | None = None) -> State:
        """``env.step(state, action, key)`` for one game: ``action`` an int or int32 [],
        ``key`` the move's chance (default ``key(0)``, as ``env.step``'s); one compiled
        function whatever the caller passes."""
        key = jax.random.key(0) if key is None else key
        return self._step(state, jnp.asarray(action, jnp.int32), key)
