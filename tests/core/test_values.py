"""Value targets for any number of players and returns of any scale: MuZero's transform,
the categorical head, hand-computed returns of a scripted single-player game, and the
two-player targets unchanged bit for bit."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from score_game import ScoreGame

from envs import testing
from jaxzero.core import config as config_lib
from jaxzero.core import learner, loop, networks, replay, selfplay, values

GAMMA = 0.9


def test_h_is_inverted_exactly_and_squashes_large_returns():
    x = jnp.array([-3000.0, -3.0, -1.0, -0.25, 0.0, 0.5, 1.0, 2.0, 100.0, 20000.0])
    np.testing.assert_allclose(values.h_inverse(values.h(x)), x, rtol=1e-5, atol=1e-5)
    assert float(values.h(jnp.float32(10000.0))) == pytest.approx(109.0, abs=0.1)
    assert np.all(np.diff(np.asarray(values.h(x))) > 0), "h is increasing"


def test_two_hot_targets_have_the_value_as_their_mean_and_decode_back():
    head = values.CategoricalValue(bins=41, max_value=500.0)
    x = jnp.array([-500.0, -37.5, 0.0, 3.0, 123.0, 499.0])
    two_hot = head.encode(x)  # [6, 41]
    np.testing.assert_allclose(two_hot.sum(-1), 1.0, rtol=1e-6)
    assert int((two_hot > 0).sum(-1).max()) <= 2
    np.testing.assert_allclose(two_hot @ head.support(), values.h(x), rtol=1e-5, atol=1e-4)
    # Logits that put (almost) all mass on the two-hot decode to the value itself.
    decoded = head.decode(jnp.log(jnp.maximum(two_hot, 1e-12)))
    np.testing.assert_allclose(decoded, x, rtol=1e-3, atol=1e-2)
    # Beyond the range: clipped to its end.
    np.testing.assert_allclose(head.encode(jnp.array([1e6]))[0], head.encode(jnp.array([500.0]))[0])


def test_a_categorical_head_learns_scores_a_tanh_head_cannot_reach():
    """The learner's cross-entropy drives the decoded value to targets in the hundreds."""
    env = ScoreGame()
    config = config_lib.NetworkConfig(
        kind="mlp", hidden_size=16, value_head="categorical", value_bins=61, value_max=400.0
    )
    network = networks.make_network(config, env)
    apply_fn = networks.make_apply_fn(network)
    params = networks.init_params(network, env, jax.random.key(0))
    optim = config_lib.OptimConfig(learning_rate=3e-2, max_grad_norm=10.0)
    optimizer = learner.make_optimizer(optim)
    head = networks.value_transform(config)
    update = jax.jit(learner.make_update_fn(apply_fn, optimizer, optim, value=head))
    observation = jnp.eye(3)
    target = jnp.array([312.0, 310.0, 300.0])
    batch = replay.Batch(
        observation=observation,
        policy=jnp.full((3, 3), 1 / 3),
        value_target=target,
        legal_action_mask=jnp.ones((3, 3), jnp.bool_),
    )
    opt_state = optimizer.init(params)
    for _ in range(300):
        params, opt_state, metrics = update(params, opt_state, batch)
    _, value = apply_fn(params, observation)
    np.testing.assert_allclose(value, target, rtol=0.02)
    assert float(metrics["value_loss"]) < 1.0  # cross-entropy against the two-hot


@pytest.fixture(scope="module")
def score_run():
    """Eight scripted games of ScoreGame, one iteration of 3 moves: all end together."""
    config = config_lib.apply_overrides(
        config_lib.Config(game="score_game"),
        {
            "network.hidden_size": 8,
            "network.value_head": "categorical",
            "network.value_max": 400.0,
            "search.num_simulations": 4,
            "selfplay.batch_size": 8,
            "selfplay.moves_per_iteration": 3,
            "selfplay.temperature_moves": 3,
            "selfplay.discount": GAMMA,
            "replay.capacity": 64,
            "replay.min_size": 1,
            "optim.minibatch_size": 4,
            "optim.updates_per_iteration": 1,
        },
    )
    trainer = loop.make_trainer(config, env=ScoreGame())
    state = trainer.init(jax.random.key(0))
    state, metrics, moves = trainer.iteration(state)
    return trainer, state, jax.device_get(metrics), jax.device_get(moves)


def test_the_score_game_keeps_the_env_contract():
    testing.check_env(ScoreGame(), num_games=3)


def test_single_player_targets_are_the_discounted_returns_to_the_end(score_run):
    """Position i of a game is labelled r_{i+1} + γ r_{i+2} + ... by hand, from the
    actions each game played."""
    _, state, metrics, moves = score_run
    actions = moves["action"].T  # [B, 3]
    paid = (actions + 1) * 10.0 ** np.arange(3)  # [B, 3] the move at ply t pays r_{t+1}
    np.testing.assert_allclose(moves["reward"][..., 0].T, paid)
    expected = np.stack(
        [
            paid[:, 0] + GAMMA * paid[:, 1] + GAMMA**2 * paid[:, 2],
            paid[:, 1] + GAMMA * paid[:, 2],
            paid[:, 2],
        ],
        axis=1,
    )  # [B, 3]
    targets = np.asarray(state.replay.value_target[:24]).reshape(8, 3)
    np.testing.assert_allclose(targets, expected, rtol=1e-6)
    assert metrics["games_finished"] == 8
    assert metrics["game_return"] == pytest.approx(paid.sum(1).mean(), rel=1e-6)
    assert "first_player_win_rate" not in metrics  # a score, not an outcome


def _old_targets(player, length, returns, discount):
    """The two-player targets as jaxzero computed them before (commit a5b71f0): the
    game's summed rewards z for each mover, discounted by the plies after the position."""
    ply = jnp.arange(player.shape[1], dtype=jnp.int32)[None, :]
    z = jnp.take_along_axis(returns, player, axis=1)
    plies_after = (length[:, None] - 1 - ply).astype(jnp.float32)
    return z * jnp.power(jnp.float32(discount), jnp.maximum(plies_after, 0.0))


@pytest.mark.parametrize("discount", [1.0, 0.97])
def test_two_player_targets_are_the_old_ones_bit_for_bit(discount):
    """Random games of random lengths and movers, the outcome paid on the last move:
    the returns accumulated move by move equal the old formula exactly."""
    b, n = 64, 42
    k_len, k_player, k_win = jax.random.split(jax.random.key(1), 3)
    length = jax.random.randint(k_len, (b,), 1, n + 1)
    player = jax.random.randint(k_player, (b, n), 0, 2)
    winner = jax.random.randint(k_win, (b,), -1, 2).astype(jnp.float32)  # -1, 0, +1
    outcome = jnp.stack([winner, -winner], axis=1)  # [B, 2]
    sp = selfplay.SelfPlayState(
        env_state=None,
        observation=jnp.zeros((b, n, 1)),
        policy=jnp.zeros((b, n, 1)),
        legal_action_mask=jnp.zeros((b, n, 1), jnp.bool_),
        player=player,
        root_value=jnp.zeros((b, n)),
        value_return=jnp.zeros((b, n)),
        length=jnp.zeros((b,), jnp.int32),
        returns=jnp.zeros((b, 2)),
    )

    def move(sp, t):  # ply t recorded, then its move pays the outcome if it is the last
        sp = sp.replace(length=jnp.minimum(t + 1, length))
        last = t + 1 == length
        return selfplay.add_rewards(sp, jnp.where(last[:, None], outcome, 0.0), discount), None

    sp, _ = jax.lax.scan(move, sp, jnp.arange(n))
    done = jnp.ones((b,), jnp.bool_)
    batch, valid = selfplay.finished_games_batch(sp, done)
    old = _old_targets(player, length, sp.returns, discount).reshape(-1)
    np.testing.assert_array_equal(np.asarray(sp.returns), np.asarray(outcome))
    got, want = np.asarray(batch.value_target), np.asarray(old)
    keep = np.asarray(valid)
    np.testing.assert_array_equal(got[keep].view(np.uint32), want[keep].view(np.uint32))


def test_the_recorded_value_is_the_searchs_chosen_moves_q(score_run):
    """At the last ply every move ends the game, so each move's Q is its own reward (100,
    200 or 300): the recorded verdict is one of them exactly, not a mean of several."""
    _, _, _, moves = score_run
    assert moves["value"].shape == moves["action"].shape
    assert np.isin(moves["value"][2], [100.0, 200.0, 300.0]).all(), moves["value"][2]
