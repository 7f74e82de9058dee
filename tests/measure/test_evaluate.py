"""Matches (both colours, symmetric for identical players), intervals, move quality."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxzero.games.connect_four import solver as c4
from jaxzero.measure import opponents
from jaxzero.measure.games import position_set
from jaxzero.measure.match import play_match
from jaxzero.measure.positions import optimal_move_share, states_from_moves
from jaxzero.measure.statistics import (
    mean_interval,
    paired_difference,
    t975,
    welch_difference,
    wilson_interval,
)


def hashed_policy(env):
    """A deterministic, state-dependent, varied policy: the key is ignored."""
    size = int(np.prod(env.observation_shape))
    weights = jax.random.normal(jax.random.key(7), (size, env.num_actions))

    def policy(params, states, key):
        del params, key
        obs = states.observation.reshape(states.observation.shape[0], -1).astype(jnp.float32)
        logits = jnp.sin(3.0 * obs @ weights)  # [B, A]
        logits = jnp.where(states.legal_action_mask, logits, -2.0)
        return jnp.argmax(logits, axis=1).astype(jnp.int32)

    return policy


def test_wilson_interval():
    lo, hi = wilson_interval(0, 10)
    assert lo == 0.0 and hi == pytest.approx(1.96**2 / (10 + 1.96**2))
    lo, hi = wilson_interval(5, 10)
    assert lo + hi == pytest.approx(1.0) and lo == pytest.approx(0.2366, abs=1e-4)
    assert wilson_interval(0, 0) == (0.0, 1.0)
    assert wilson_interval(100, 100)[0] > 0.96


def test_mean_and_welch_intervals_match_students_t():
    import scipy.stats

    gumbel, puct = [0.87, 0.88, 0.86, 0.85], [0.68, 0.76, 0.70]
    assert mean_interval(gumbel) == pytest.approx((0.865, 0.844457, 0.885543), abs=1e-5)
    # Welch's fractional df (2.29 here) as it is: scipy's own Welch test as the reference
    reference = scipy.stats.ttest_ind(gumbel, puct, equal_var=False).confidence_interval(0.95)
    difference = np.mean(gumbel) - np.mean(puct)
    assert welch_difference(gumbel, puct) == pytest.approx(
        (difference, reference.low, reference.high), abs=1e-9
    )
    assert t975(31) == pytest.approx(2.0395, abs=1e-4)  # not the normal's 1.96 past 30
    assert t975(100) > 1.98
    assert mean_interval([0.5]) == (0.5, 0.5, 0.5)
    with pytest.raises(ValueError, match="2 runs a side"):
        welch_difference([0.5], puct)


def test_identical_players_give_a_symmetric_match(ttt):
    policy = hashed_policy(ttt)
    result = play_match(ttt, policy, policy, 200, jax.random.key(0), opening_plies=2)
    wins, draws, losses = result.first  # games where A moved first
    assert wins + draws + losses == 100  # both colours, half the games each
    # Each opening is played twice with the colours swapped: the same game, mirrored result.
    assert (result.wins - wins, result.draws - draws, result.losses - losses) == (
        losses,
        draws,
        wins,
    )
    assert result.wins == result.losses > 0 and result.score == 0.5


def test_both_colours_and_counts(ttt):
    minimax = opponents.make_opponent("tic_tac_toe_minimax", ttt)
    random = opponents.uniform_random(ttt)
    result = play_match(ttt, random, minimax, 100, jax.random.key(3), opening_plies=0)
    assert result.games == 100 and sum(result.first) == 50
    assert result.wins == 0 and result.losses > 60
    lo, hi = result.interval()
    assert lo <= result.score <= hi
    with pytest.raises(ValueError, match="even"):
        play_match(ttt, random, minimax, 7, jax.random.key(0))


def test_tic_tac_toe_move_quality(ttt):
    perfect = optimal_move_share(opponents.make_opponent("tic_tac_toe_minimax", ttt), "tic_tac_toe")
    assert perfect.positions == 4520 and perfect.optimal == 1.0 and perfect.kept == 1.0
    assert 0 < perfect.critical < 4520
    random = optimal_move_share(opponents.uniform_random(ttt), ttt)
    tactical = optimal_move_share(opponents.one_ply(ttt), ttt)
    assert random.optimal < 0.7 < tactical.optimal < 1.0
    assert random.kept < random.optimal  # critical positions are the hard ones
    # Position by position: the paired comparison sees exactly the shares' difference.
    assert perfect.optimal_moves.all() and perfect.optimal_moves.shape == (4520,)
    assert tactical.optimal_moves.mean() == tactical.optimal
    difference, lo, hi = paired_difference(perfect.optimal_moves, tactical.optimal_moves)
    assert difference == pytest.approx(1.0 - tactical.optimal)
    assert 0 < lo < difference < hi


def test_paired_difference_interval():
    rng = np.random.default_rng(0)
    first = rng.random(1000) < 0.85
    second = first ^ (rng.random(1000) < 0.06)  # the same items, a few answers flipped
    difference, lo, hi = paired_difference(first, second)
    assert difference == first.mean() - second.mean() and lo < difference < hi
    assert paired_difference(second, first) == pytest.approx((-difference, -hi, -lo))
    # Large n: close to the normal interval of the per-item differences ...
    d = first.astype(float) - second.astype(float)
    half = 1.96 * d.std(ddof=1) / np.sqrt(len(d))
    assert lo == pytest.approx(difference - half, abs=0.003)
    assert hi == pytest.approx(difference + half, abs=0.003)
    # ... and far narrower than two separate Wilson intervals, which ignore the pairing.
    l1, u1 = wilson_interval(first.sum(), 1000)
    l2, u2 = wilson_interval(second.sum(), 1000)
    assert hi - lo < 0.5 * ((u1 - l2) - (l1 - u2))
    # Identical outcomes: centred on zero; opposite ones on a small set: above zero.
    assert paired_difference(first, first)[1:] == pytest.approx((-0.0027, 0.0027), abs=1e-4)
    difference, lo, hi = paired_difference(np.ones(10, bool), np.zeros(10, bool))
    assert difference == 1.0 and 0.5 < lo < 1.0 and hi == 1.0
    with pytest.raises(ValueError, match="bool"):
        paired_difference(first, second[:10])


@pytest.fixture(scope="module")
def shipped():
    return position_set("connect_four")


def test_shipped_connect_four_set(c4_env, shipped):
    n = len(shipped.lengths)
    assert n >= 500
    assert shipped.lengths.min() <= 10 and shipped.lengths.max() >= 30
    states = states_from_moves(c4_env, shipped.moves, shipped.lengths)
    assert not np.asarray(states.terminated).any()
    np.testing.assert_array_equal(np.asarray(states.legal_action_mask), shipped.legal)
    np.testing.assert_array_equal(np.asarray(states.current_player), shipped.lengths % 2)
    results = shipped.results
    best = results.max(1)
    assert (best == 1).any() and (best == 0).any() and (best == -1).any()


def test_shipped_labels_agree_with_the_solver(shipped):
    solver = c4.Solver()
    rng = np.random.default_rng(0)
    deep = np.flatnonzero(shipped.lengths >= 20)
    for i in rng.choice(deep, 25, replace=False):
        columns = shipped.moves[i, : shipped.lengths[i]]
        np.testing.assert_array_equal(solver.move_scores(columns), shipped.scores[i])


def test_connect_four_move_quality(c4_env):
    random = optimal_move_share(opponents.uniform_random(c4_env), c4_env)
    tactical = optimal_move_share(opponents.one_ply(c4_env), c4_env)
    assert random.critical == tactical.critical > 100
    assert random.kept < tactical.kept < 1.0
