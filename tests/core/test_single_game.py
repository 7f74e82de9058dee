"""SingleGame and batch_of_one: one game move by move, as the env plays it, compiled once."""

import jax
import jax.numpy as jnp
import numpy as np

from envs.tic_tac_toe import TicTacToe
from jaxzero.core.single_game import SingleGame, batch_of_one


def _equal(a, b) -> bool:
    return jax.tree.structure(a) == jax.tree.structure(b) and all(
        np.array_equal(x, y) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True)
    )


class CountingTicTacToe(TicTacToe):
    """Tic-tac-toe that counts how often its rules are traced."""

    traces = 0

    def _step(self, state, action, key):
        type(self).traces += 1
        return super()._step(state, action, key)


class ChanceTicTacToe(TicTacToe):
    """Tic-tac-toe whose mark lands on an empty cell the key draws: every move is chance."""

    def _step(self, state, action, key):
        mask = state.legal_action_mask
        return super()._step(state, jax.random.choice(key, mask.size, p=mask / mask.sum()), key)


def test_a_batch_of_one_steps_as_the_unbatched_env_does():
    env = ChanceTicTacToe()
    game = SingleGame(env)
    state = game.init(jax.random.key(3))
    assert _equal(state, env.init(jax.random.key(3)))
    batch = batch_of_one(state)
    assert jax.tree.map(lambda x: x.shape, batch) == jax.tree.map(lambda x: (1, *x.shape), state)
    afters = []
    for seed in range(3):
        k = jax.random.key(seed)
        after = game.step(state, 4, k)  # a Python int
        assert _equal(after, env.step(state, jnp.int32(4), k))
        batched = jax.vmap(env.step)(batch, jnp.full((1,), 4, jnp.int32), k[None])
        assert _equal(batch_of_one(after), batched)
        afters.append(np.asarray(after.board))
    assert len({a.tobytes() for a in afters}) > 1  # the key reached the rules
    assert _equal(game.step(state, 4), env.step(state, jnp.int32(4)))  # key(0), as env's


def test_one_compiled_step_for_a_whole_game_however_called():
    env = CountingTicTacToe()
    game = SingleGame(env)
    state = game.init(jax.random.key(0))
    for number, action in enumerate([4, 0, 8, 2, 1, 7, 6, 3, 5]):
        key = jax.random.key(number) if number % 2 else None
        action = jnp.int32(action) if number % 3 else action  # an int or int32 []
        state = game.step(state, action, key)
    assert bool(state.terminated)
    assert CountingTicTacToe.traces == 1
