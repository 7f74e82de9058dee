"""The compiled iteration, self-play labels and persistence, the replay ring, configs."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from double_move import DoubleMove

import envs
from jaxzero.core import config as config_lib
from jaxzero.core import loop, networks, presets, replay, search, selfplay
from jaxzero.core.policies import make_search

GAMMA = 0.9


@pytest.fixture(scope="module")
def double_move_run():
    """Four games of DoubleMove, 2 moves per iteration (a game spans two iterations)."""
    config = config_lib.apply_overrides(
        config_lib.Config(game="double_move"),
        {
            "network.hidden_size": 8,
            "search.num_simulations": 4,
            "selfplay.batch_size": 4,
            "selfplay.moves_per_iteration": 2,
            "selfplay.temperature_moves": 3,
            "selfplay.discount": GAMMA,
            "replay.capacity": 64,
            "replay.min_size": 4,
            "optim.minibatch_size": 4,
            "optim.updates_per_iteration": 2,
        },
    )
    trainer = loop.make_trainer(config, env=DoubleMove())
    states = [trainer.init(jax.random.key(0))]
    metrics = []
    for _ in range(4):
        state, m, _ = trainer.iteration(states[-1])
        states.append(state)
        metrics.append(m)
    return trainer, states, metrics


def selfplay_fn(config, env, apply_fn):
    """Self-play of ``config``: its selfplay section, its search built by name."""
    options = search.SearchOptions.of(config.search)
    return selfplay.make_selfplay_fn(
        config.selfplay, env, apply_fn, make_search(config.search), options,
        num_simulations=config.search.num_simulations,
    )  # fmt: skip


def test_iteration_compiles_once(double_move_run):
    trainer, states, metrics = double_move_run
    assert trainer.iteration._cache_size() == 1
    for m in metrics:
        assert all(np.shape(v) == () and np.isfinite(v) for v in m.values()), m


def test_games_persist_across_iterations(double_move_run):
    _, states, metrics = double_move_run
    written = [int(s.positions_written) for s in states]
    # Moves 1-2: games half-way (nothing written); move 3 ends all 4 games (12 positions),
    # move 4 starts new ones, which end at move 6, and so on.
    assert written == [0, 0, 12, 24, 24]
    assert [int(s.selfplay.length[0]) for s in states] == [0, 2, 1, 0, 2]
    np.testing.assert_array_equal(states[1].selfplay.env_state.step_count, 2)
    assert [int(s.env_steps) for s in states] == [0, 8, 16, 24, 32]
    assert [float(m["games_finished"]) for m in metrics] == [0, 4, 4, 0]
    assert [float(m["game_length"]) for m in metrics[1:3]] == [3, 3]
    assert int(states[-1].replay.size) == 24 and int(states[-1].replay.insert_index) == 24


def test_replay_labels_are_the_discounted_outcome_for_each_mover(double_move_run):
    _, states, metrics = double_move_run
    buf = states[-1].replay
    obs = np.asarray(buf.observation[:24]).reshape(8, 3, 4)  # 8 games of 3 positions
    targets = np.asarray(buf.value_target[:24]).reshape(8, 3)
    np.testing.assert_array_equal(obs[:, :, :3], np.tile(np.eye(3), (8, 1, 1)))
    z0 = np.where(obs[:, 1, 3] > 0, 1.0, -1.0)  # player 0's outcome: first action was 0
    expected = np.stack([GAMMA**2 * z0, GAMMA * z0, -z0], axis=1)  # movers: 0, 0, 1
    np.testing.assert_allclose(targets, expected, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(buf.policy[:24]).sum(-1), 1.0, rtol=1e-5)
    assert np.asarray(buf.written).tolist() == [True] * 24 + [False] * 40
    wins = sum(float(m["first_player_win_rate"] * m["games_finished"]) for m in metrics)
    assert wins == pytest.approx(float((z0 > 0).sum()))


def test_updates_wait_for_min_size_then_change_params(double_move_run):
    _, states, metrics = double_move_run
    assert [float(m["updated"]) for m in metrics] == [0, 1, 1, 1]
    leaves = lambda s: jax.tree.leaves(s.params)  # noqa: E731
    assert all((a == b).all() for a, b in zip(leaves(states[0]), leaves(states[1]), strict=True))
    assert any((a != b).any() for a, b in zip(leaves(states[1]), leaves(states[2]), strict=True))
    assert [int(s.updates) for s in states] == [0, 0, 2, 4, 6]


def _rows(values):
    """DoubleMove-shaped rows whose every field carries ``values``."""
    values = jnp.asarray(values, jnp.float32)
    return replay.Batch(
        observation=jnp.repeat(values[:, None], 4, 1),
        policy=jnp.repeat(values[:, None], 2, 1),
        value_target=values,
        legal_action_mask=jnp.ones((len(values), 2), jnp.bool_),
    )


def test_ring_buffer_wraps_and_drops_masked_rows():
    env = DoubleMove()
    buf = replay.init_replay(env, 4)
    buf = replay.add(buf, _rows([1, 2, 3]), jnp.array([True, False, True]))
    assert np.asarray(buf.value_target).tolist() == [1, 3, 0, 0] and int(buf.size) == 2
    buf = replay.add(buf, _rows([4, 5, 6, 7, 8, 9]), jnp.array([True] * 5 + [False]))
    # 5 valid rows into a ring of 4 at slot 2: only the last 4 (5..8) land, 8 at slot 2.
    assert np.asarray(buf.value_target).tolist() == [6, 7, 8, 5]
    assert int(buf.size) == 4 and int(buf.insert_index) == 3
    np.testing.assert_array_equal(np.asarray(buf.observation)[:, 0], [6, 7, 8, 5])


def test_sampling_applies_one_symmetry_to_observation_policy_and_mask():
    env = envs.make("tic_tac_toe")
    cells = jnp.arange(9)
    obs = jnp.zeros((9, 3, 3, 2), jnp.bool_).at[cells, cells // 3, cells % 3, 0].set(True)
    batch = replay.Batch(
        observation=obs,
        policy=jax.nn.one_hot(cells, 9),
        value_target=jnp.zeros(9),
        legal_action_mask=jax.nn.one_hot(cells, 9).astype(bool),
    )
    buf = replay.add(replay.init_replay(env, 16), batch, jnp.ones(9, bool))
    out = replay.sample(buf, jax.random.key(0), 256, env.symmetries)
    marked = np.asarray(out.observation[..., 0]).reshape(256, 9).argmax(-1)
    np.testing.assert_array_equal(np.asarray(out.policy).argmax(-1), marked)
    np.testing.assert_array_equal(np.asarray(out.legal_action_mask).argmax(-1), marked)
    assert len(set(marked.tolist())) == 9  # corners/edges map around: all cells appear


def test_presets_and_overrides():
    with pytest.raises(ValueError, match="choose one of: .*connect_four.*tic_tac_toe"):
        presets.get_preset("chess")
    base = presets.get_preset("tic_tac_toe")
    cfg = config_lib.apply_overrides(
        base,
        {"search.num_simulations": "8", "search.kind": "puct", "optim.learning_rate": "1e-4"},
    )
    assert cfg.search.num_simulations == 8 and cfg.search.kind == "puct"
    assert cfg.optim.learning_rate == 1e-4 and base.search.num_simulations == 16
    assert config_lib.apply_overrides(base, {"replay.augment": "false"}).replay.augment is False
    with pytest.raises(ValueError, match="valid keys: .*search.num_simulations"):
        config_lib.apply_overrides(base, {"search.num_sims": 8})
    with pytest.raises(ValueError, match="expected an integer"):
        config_lib.apply_overrides(base, {"seed": "x"})
    for preset in presets.PRESETS.values():
        data = json.loads(json.dumps(config_lib.config_to_dict(preset)))
        assert config_lib.config_from_dict(data) == preset
    with pytest.raises(ValueError, match="unknown config keys: search.bogus"):
        config_lib.config_from_dict({"search": {"bogus": 1}})


@pytest.mark.parametrize("opening_plies", [0, 2])
def test_opening_plies_are_uniformly_random_and_still_searched(opening_plies):
    """Without opening plies the (untrained, low-noise) search favours a few first moves;
    with them the first moves are spread evenly over the legal cells, no game is ended by
    an illegal move, and every position keeps its search policy as the target."""
    env = envs.make("tic_tac_toe")
    config = config_lib.apply_overrides(
        presets.get_preset("tic_tac_toe"),
        {
            "search.kind": "puct",
            "search.num_simulations": 4,
            "search.dirichlet_fraction": 0.0,
            "selfplay.batch_size": 512,
            "selfplay.moves_per_iteration": 3,
            "selfplay.temperature_moves": 0,
            "selfplay.opening_plies": opening_plies,
        },
    )
    network = networks.make_network(config.network, env)
    apply_fn = networks.make_apply_fn(network)
    params = networks.init_params(network, env, jax.random.key(1))
    play = jax.jit(selfplay_fn(config, env, apply_fn))
    sp = selfplay.init_selfplay(env, 512, jax.random.key(2))
    sp, _, _, moves = play(params, sp, replay.init_replay(env, 16), jax.random.key(3))
    action = np.asarray(moves["action"])  # [T, B]
    assert not np.asarray(moves["done"]).any()  # no illegal move ended a game
    for ply in range(3):
        counts = np.bincount(action[ply], minlength=9)
        if ply < opening_plies:  # ~512/9 = 57 each
            assert counts.min() >= 30 and counts.max() <= 90, counts
        elif ply == 0:
            assert counts.max() > 100, counts
    np.testing.assert_allclose(np.asarray(sp.policy[:, :3]).sum(-1), 1.0, rtol=1e-5)


def test_value_target_mixes_the_discounted_outcome_with_the_root_value():
    """One finished game of 3 positions, movers 0, 0, 1, player 0 won on the last move:
    with weight w each target is (1 - w)·γ^k·z + w·q, q being the search's root value."""
    env = DoubleMove()
    sp = selfplay.init_selfplay(env, 2, jax.random.key(0))
    sp = sp.replace(
        player=jnp.array([[0, 0, 1], [0, 1, 0]], jnp.int32),
        root_value=jnp.array([[0.5, -0.25, 0.75], [0.1, 0.2, 0.3]], jnp.float32),
        length=jnp.array([3, 2], jnp.int32),
    )
    sp = selfplay.add_rewards(sp, jnp.array([[1.0, -1.0], [0.0, 0.0]]), GAMMA)
    done = jnp.array([True, False])
    for w in (0.0, 0.5):
        batch, valid = selfplay.finished_games_batch(sp, done, w)
        z = np.array([GAMMA**2, GAMMA, -1.0])
        expected = (1 - w) * z + w * np.array([0.5, -0.25, 0.75])
        np.testing.assert_allclose(np.asarray(batch.value_target[:3]), expected, rtol=1e-6)
        assert np.asarray(valid).tolist() == [True, True, True, False, False, False]


def test_self_play_records_the_search_root_value(double_move_run):
    _, states, _ = double_move_run
    sp = states[1].selfplay  # two positions into each game
    values = np.asarray(sp.root_value[:, :2])
    assert np.all(np.abs(values) <= 1.0) and np.any(values != 0.0)


def test_playout_cap_leaves_cheap_positions_without_a_policy_target():
    """p = 0.5: each move of the batch is searched in full or cheaply (one draw for all B
    games); a cheap search's positions reach replay with an all-zero policy, a full one's
    with a distribution over the legal moves, and every position of a finished game is
    written with its value target, cheap or not."""
    env = envs.make("tic_tac_toe")
    config = config_lib.apply_overrides(
        presets.get_preset("tic_tac_toe"),
        {
            "search.num_simulations": 8,
            "selfplay.batch_size": 32,
            "selfplay.moves_per_iteration": 4,
            "selfplay.full_search_share": 0.5,
            "selfplay.cheap_simulations": 2,
        },
    )
    network = networks.make_network(config.network, env)
    apply_fn = networks.make_apply_fn(network)
    params = networks.init_params(network, env, jax.random.key(1))
    play = jax.jit(selfplay_fn(config, env, apply_fn))
    sp = selfplay.init_selfplay(env, 32, jax.random.key(2))
    buffer = replay.init_replay(env, 4096)

    # 4 plies, no game over; this key draws u = 0.19, 0.57, 0.90, 0.70: full, then 3 cheap.
    sp, buffer, _, _ = play(params, sp, buffer, jax.random.key(6))
    totals = np.asarray(sp.policy[:, :4]).sum(-1)  # [B, 4] per game and ply
    full = np.isclose(totals, 1.0, rtol=1e-5)
    assert (full | (totals == 0)).all()
    assert (full == full[:1]).all(), "a move's games are searched alike"
    assert full[0].tolist() == [True, False, False, False], full[0]

    written = {"positions": 0, "lengths": 0}
    for k in range(7, 15):  # games end and are written
        sp, buffer, sums, _ = play(params, sp, buffer, jax.random.key(k))
        written["positions"] += int(sums["positions_written"])
        written["lengths"] += int(sums["game_length_sum"])
    n = int(buffer.size)
    assert n == written["positions"] == written["lengths"] > 0
    policy, legal = np.asarray(buffer.policy[:n]), np.asarray(buffer.legal_action_mask[:n])
    totals = policy.sum(-1)
    full = np.isclose(totals, 1.0, rtol=1e-5)
    assert (full | (totals == 0)).all() and 0.2 < full.mean() < 0.8, full.mean()
    assert not (policy > 0)[~legal].any()  # full searches' policies: legal moves only
    assert set(np.unique(np.asarray(buffer.value_target[:n]))) <= {-1.0, 0.0, 1.0}

    with pytest.raises(ValueError, match="needs selfplay.cheap_simulations >= 1"):
        config_lib.SelfPlayConfig(full_search_share=0.5)
    with pytest.raises(ValueError, match="cheap_simulations=8 must be below"):
        config_lib.apply_overrides(config, {"selfplay.cheap_simulations": 8})


def test_max_grad_norm_zero_clips_nothing():
    """optim.max_grad_norm=0 turns clipping off (as the divergence advice reads it), for a
    number and for a traced population value alike; it never zeroes every gradient."""
    import optax

    from jaxzero.core.config import OptimConfig
    from jaxzero.core.learner import make_optimizer

    params = {"w": jnp.ones(3)}
    grads = {"w": jnp.full(3, 5.0)}

    def first_update(max_grad_norm):
        optim = OptimConfig(learning_rate=0.1, schedule="constant", weight_decay=0.0)
        object.__setattr__(optim, "max_grad_norm", max_grad_norm)  # as a population traces it
        optimizer = make_optimizer(optim)
        updates, _ = optimizer.update(grads, optimizer.init(params), params)
        return updates["w"]

    assert jnp.allclose(first_update(0.0), -0.1, atol=1e-3)  # Adam's first step: -lr
    traced = jax.jit(lambda norm: first_update(norm))(jnp.float32(0.0))
    assert jnp.allclose(traced, -0.1, atol=1e-3)
    clipped = optax.clip_by_global_norm(1.0).update(grads, None)[0]["w"]
    assert float(jnp.linalg.norm(clipped)) == pytest.approx(1.0)
