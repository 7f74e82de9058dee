"""jaxzero.measure.evaluation: a player against fixed opponents in one match, each game's
opponent known to the opponents' side, opponents named as registered."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxzero.measure import opponents
from jaxzero.measure.evaluation import Mixture, make_evaluation
from jaxzero.measure.positions import states_from_moves


def constant(action):
    def player(params, states, key):
        assert params is None  # a fixed opponent is given no parameters
        return jnp.full(states.current_player.shape, action, jnp.int32)

    return player


def test_a_mixture_plays_each_game_with_its_own_opponent_and_takes_no_params(ttt):
    states = states_from_moves(ttt, np.zeros((4, 1), int), np.zeros(4, int))
    side = Mixture((constant(3), constant(5)), np.array([1, 0, 0, 1], np.int32))
    actions = jax.jit(side)(None, states, jax.random.key(0))
    assert actions.tolist() == [5, 3, 3, 5]


@pytest.fixture
def first_legal():
    def factory(env):
        return lambda params, states, key: jnp.argmax(states.legal_action_mask, -1).astype(
            jnp.int32
        )

    opponents.register_opponent("first_legal", factory)
    yield "first_legal"
    opponents.OPPONENTS.pop("first_legal")


def test_a_registered_opponent_is_evaluated_against_by_name(ttt, first_legal):
    player = opponents.make_opponent("random", ttt)
    evaluation = make_evaluation(ttt, player, ("random", first_legal), games=4, opening_plies=0)
    results = evaluation(None, jax.random.key(0))
    assert list(results) == ["random", first_legal]
    assert all(result.games == 4 for result in results.values())
    assert set(evaluation.metrics(results)) >= {f"eval/vs_{first_legal}"}
