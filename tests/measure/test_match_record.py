"""PairedMatch.recorded: the same games as the plain match, with every game's actions."""

import jax
import jax.numpy as jnp
import numpy as np

import envs
from jaxzero.measure.match import make_match
from jaxzero.measure.positions import states_from_moves


def test_recorded_match_replays_to_the_same_results():
    env = envs.make("tic_tac_toe")

    def first(params, states, key):
        """A takes the first legal cell (the random openings vary the games)."""
        return jnp.argmax(states.legal_action_mask, axis=1).astype(jnp.int32)

    def last(params, states, key):
        """B takes the last legal cell."""
        mask = states.legal_action_mask  # bool [G, A]
        return (mask.shape[1] - 1 - jnp.argmax(mask[:, ::-1], axis=1)).astype(jnp.int32)

    games = 16
    match = make_match(env, first, last, games, opening_plies=2)
    key = jax.random.key(3)
    outcome, seat = jax.device_get(match(None, None, key))
    outcome_r, seat_r, actions, final = jax.device_get(match.recorded(None, None, key))
    np.testing.assert_array_equal(outcome_r, outcome)
    np.testing.assert_array_equal(seat_r, seat)
    assert actions.shape == (games, env.max_steps) and actions.dtype == np.int32

    lengths = (actions >= 0).sum(1)
    for row, n in zip(actions, lengths, strict=True):
        assert (row[:n] >= 0).all() and (row[n:] == -1).all()
    assert lengths.min() >= 5 and len(set(lengths.tolist())) > 1  # games of different lengths
    np.testing.assert_array_equal(actions[: games // 2, :2], actions[games // 2 :, :2])  # openings
    replayed = states_from_moves(env, np.maximum(actions, 0), lengths)
    assert bool(replayed.terminated.all()) and (np.asarray(replayed.step_count) == lengths).all()
    a_reward = np.take_along_axis(np.asarray(replayed.rewards), seat[:, None], 1)[:, 0]
    np.testing.assert_array_equal(np.sign(a_reward).astype(np.int32), outcome)
    # The final states are the replayed ones (rewards aside: finished games pay nothing
    # while the others play on).
    np.testing.assert_array_equal(final.board, np.asarray(replayed.board))
    np.testing.assert_array_equal(final.step_count, lengths)
    assert set(outcome.tolist()) >= {-1, 1}  # each side wins some
