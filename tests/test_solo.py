"""Single-player games: scores of fixed players, the greedy players of othello and 2048,
the periodic evaluation's scores, and the settings a single-player run refuses."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import tiny_config
from score_game import ScoreGame

import envs
from jaxzero.core.loop import check_game_fits
from jaxzero.measure import opponents
from jaxzero.measure.evaluation import SoloEvaluation, make_evaluation
from jaxzero.measure.solo import make_solo


def _always(action):
    return lambda params, states, key: jnp.full(states.current_player.shape, action, jnp.int32)


def test_a_fixed_player_scores_what_its_actions_pay():
    result = make_solo(ScoreGame(), _always(2), games=5)(None, jax.random.key(0))
    np.testing.assert_array_equal(result.scores, 333.0)  # 3 + 30 + 300
    np.testing.assert_array_equal(result.lengths, 3)
    assert result.interval() == (333.0, 333.0)
    random = make_solo(ScoreGame(), opponents.uniform_random(ScoreGame()), games=400)
    low, high = random(None, jax.random.key(1)).interval()
    assert low < 222.0 < high  # the mean of uniform actions: 2 + 20 + 200


def test_a_two_player_game_is_refused():
    with pytest.raises(ValueError, match="2 players"):
        make_solo(envs.make("tic_tac_toe"), _always(0), games=2)


def test_greedy_2048_takes_the_largest_merge():
    env = envs.make("pgx/2048")
    states = jax.vmap(env.init)(jax.random.split(jax.random.key(0), 64))
    keys = jax.random.split(jax.random.key(1), 64)
    for _ in range(30):  # random positions with merges to choose between
        actions = jax.vmap(opponents.sample_legal)(keys, states.legal_action_mask)
        states = jax.vmap(env.step)(states, actions, keys)
        keys = jax.vmap(lambda k: jax.random.split(k)[0])(keys)
    live = ~np.asarray(states.terminated)
    chosen = opponents.greedy(env)(None, states, jax.random.key(2))
    step_all = jax.vmap(jax.vmap(env.step, in_axes=(None, 0, None)), in_axes=(0, None, 0))
    after = step_all(states, jnp.arange(4), keys)  # [B, 4]
    reward = np.where(np.asarray(states.legal_action_mask), np.asarray(after.rewards[..., 0]), -1)
    got = reward[np.arange(64), np.asarray(chosen)]
    np.testing.assert_array_equal(got[live], reward.max(1)[live])
    assert (reward.max(1)[live] > 0).any(), "no position offered a merge"


def test_greedy_othello_leaves_the_mover_the_most_discs():
    env = envs.make("pgx/othello")
    states = jax.vmap(env.init)(jax.random.split(jax.random.key(0), 32))
    keys = jax.random.split(jax.random.key(1), 32)
    for _ in range(12):
        actions = jax.vmap(opponents.sample_legal)(keys, states.legal_action_mask)
        states = jax.vmap(env.step)(states, actions, keys)
    chosen = np.asarray(opponents.greedy(env)(None, states, jax.random.key(2)))
    for g in range(32):
        state = jax.tree.map(lambda x, g=g: x[g], states)
        if state.terminated:
            continue
        discs = {}
        for a in np.flatnonzero(np.asarray(state.legal_action_mask)):
            after = env.step(state, jnp.int32(a))
            discs[a] = int(np.asarray(env.observe(after, state.current_player))[..., 0].sum())
        assert discs[chosen[g]] == max(discs.values()), (g, chosen[g], discs)


def test_greedy_is_refused_where_there_is_none():
    with pytest.raises(ValueError, match="no greedy player for 'connect_four'"):
        opponents.greedy(envs.make("connect_four"))


def test_the_periodic_evaluation_of_a_single_player_game_scores_three_players():
    env = ScoreGame()
    evaluation = make_evaluation(env, _always(2), ("random", "one_ply"), 4, 2)
    assert isinstance(evaluation, SoloEvaluation)
    metrics = evaluation.metrics(evaluation(None, jax.random.key(0)))
    assert metrics["eval/score"] == 333.0 and metrics["eval/greedy_score"] == 333.0
    assert set(metrics) == {"eval/score", "eval/random_score", "eval/greedy_score"}


def test_single_player_runs_refuse_a_tanh_head_and_the_gate():
    env = envs.make("pgx/2048")
    with pytest.raises(ValueError, match="set network.value_head=categorical"):
        check_game_fits(tiny_config("pgx/2048", network__value_head="tanh"), env)
    with pytest.raises(ValueError, match="set gate.enabled=false"):
        check_game_fits(tiny_config("pgx/2048", gate__enabled=True), env)
    check_game_fits(tiny_config("pgx/2048"), env)
