"""Planning with a learned model (MuZero): the switch, the networks, the search over
latents, replay's sequences, the unrolled learner, reanalyse, n-step targets, the
diagnostics, and a learned model's run downstream (agents, populations)."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import error_line
from typer.testing import CliRunner

import envs
from jaxzero.cli import app
from jaxzero.core import model as model_lib
from jaxzero.core import model_networks, replay, selfplay, unroll
from jaxzero.core.config import Config, apply_overrides
from jaxzero.core.population import make_population, member
from jaxzero.core.search import SearchOptions, run_search
from jaxzero.run.agents.agent import load_agent

runner = CliRunner()
K = 3
LEARNED = {"model.kind": "learned", "model.unroll_steps": K, "model.reanalyse": 0.25}


@pytest.fixture(scope="module")
def learned_config(ttt_config) -> Config:
    return apply_overrides(ttt_config, LEARNED)


@pytest.fixture(scope="module")
def learned_run(tmp_path_factory, learned_config, train_run):
    """A finished 4-iteration learned-model tic-tac-toe run (reanalysing a quarter of each
    minibatch): every part of the learned iteration compiled once."""
    run = tmp_path_factory.mktemp("learned") / "run"
    train_run(run, learned_config, iterations=4)
    return run


def test_a_learned_run_is_one_compiled_iteration_with_the_model_diagnostics(
    learned_run, learned_config, trainers
):
    trainer = trainers(learned_config)
    assert trainer.iteration._cache_size() == 1
    assert trainer.options.model is not None
    assert model_networks.is_learned_network(trainer.network)
    rows = [json.loads(line) for line in (learned_run / "metrics.jsonl").read_text().splitlines()]
    last = rows[-1]
    assert last["updated"] == 1.0 and np.isfinite(last["policy_loss"])
    for k in range(1, K + 1):
        for name in ("value_error", "policy_distance", "reward_error"):
            assert np.isfinite(last[f"model/{name}_{k}"]), (name, k)
    assert f"model/value_error_{K + 1}" not in last
    assert 0.0 <= last["model/off_rules"] <= 1.0
    assert last["reward_loss"] > 0.0
    # the model must have searched somewhere: an untrained one wanders off the rules
    assert max(row["model/off_rules"] for row in rows) > 0.0


def test_a_learned_run_resumes_bit_exactly(
    tmp_path, learned_run, learned_config, train_run, trainers
):
    """Two iterations, a resume to four: the state of the four straight (replay's
    sequences, the selfplay games' recorded moves, the model) to the bit."""
    from helpers import restored_state

    run = tmp_path / "run"
    train_run(run, learned_config, iterations=2)
    assert train_run(run, resume=True, iterations=4).iterations == 4
    trainer = trainers(learned_config)
    a, b = restored_state(learned_run, trainer), restored_state(run, trainer)
    assert a.replay.remaining is not None and a.selfplay.action is not None
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_the_rules_run_keeps_its_pytree(ttt_config, trainers):
    """``model.kind=rules`` (the default) adds nothing to the state: old checkpoints
    restore, and tests/test_pinned_behaviour.py pins the numbers."""
    state = jax.eval_shape(trainers(ttt_config).init, jax.random.key(0))
    assert state.replay.action is None and state.selfplay.action is None
    assert trainers(ttt_config).options.model is None


def test_an_agent_of_a_learned_run_plans_with_its_model(learned_run):
    agent = load_agent(learned_run)
    assert agent.config.model.kind == "learned"
    player = agent.player
    assert player.options.model is not None
    env = agent.env
    states = jax.vmap(env.init)(jax.random.split(jax.random.key(0), 4))
    states = jax.vmap(env.step)(states, jnp.array([0, 4, 8, 2]))
    actions = player.jitted(agent.params, states, jax.random.key(1))
    legal = np.asarray(states.legal_action_mask)[np.arange(4), np.asarray(actions)]
    assert legal.all()
    output = player.jitted_search(agent.params, states, jax.random.key(1))
    assert isinstance(output.search_tree.embeddings, model_lib.LatentNode)


def _unrolled_buffer(capacity: int, lengths: list[int], num_actions: int = 9):
    """A buffer holding games of ``lengths`` written one after another: position i of game
    g has observation value 100·g + i, move i, reward g + i/10 and policy one-hot(i)."""
    env = envs.make("tic_tac_toe")
    buffer = replay.init_replay(env, capacity, sequences=True)
    add = jax.jit(replay.add)  # one program a game length, not one a replay op
    for g, n in enumerate(lengths):
        i = np.arange(n)
        obs = np.zeros((n, *env.observation_shape), np.float32)
        obs[:, 0, 0, 0] = 100 * g + i
        batch = replay.Batch(
            observation=jnp.asarray(obs).astype(bool) | True,
            policy=jax.nn.one_hot(i % num_actions, num_actions),
            value_target=jnp.asarray(100.0 * g + i),
            legal_action_mask=jnp.ones((n, num_actions), bool),
            action=jnp.asarray(i % num_actions, jnp.int32),
            reward=jnp.asarray(g + i / 10, jnp.float32),
            remaining=jnp.asarray(n - 1 - i, jnp.int32),
        )
        buffer = add(buffer, batch, jnp.ones((n,), bool))
    return buffer


def test_an_unroll_reads_a_games_next_positions_and_absorbs_past_its_end():
    # 5 + 4 + 4 = 13 positions in a ring of 10: the first game's first three overwritten,
    # the last game wrapping around the ring's end (slots 9, 0, 1, 2)
    buffer = _unrolled_buffer(10, [5, 4, 4])
    sample = jax.jit(lambda b, k: unroll.sample_unroll(b, k, 256, K))(buffer, jax.random.key(0))
    values = np.asarray(sample.value_target)  # 100·g + i where real
    real = np.asarray(sample.real)
    policy = np.asarray(sample.policy)
    for row in range(256):
        first = values[row, 0]
        g, i = divmod(int(first), 100)
        n = [5, 4, 4][g]
        expect_real = [i + k < n for k in range(K + 1)]
        assert list(real[row]) == expect_real, (g, i)
        for k in range(K + 1):
            if expect_real[k]:
                assert values[row, k] == 100 * g + i + k
                assert np.argmax(policy[row, k]) == (i + k) % 9
            else:  # absorbing: uniform policy, value and reward 0
                assert values[row, k] == 0.0
                np.testing.assert_allclose(policy[row, k], 1 / 9)
        for k in range(K):
            if expect_real[k]:
                assert int(sample.action[row, k]) == (i + k) % 9
                assert float(sample.reward[row, k]) == pytest.approx(g + (i + k) / 10)
            else:
                assert float(sample.reward[row, k]) == 0.0
    # all three games are drawn, the overwritten positions never
    assert {int(v) // 100 for v in values[:, 0]} == {0, 1, 2}
    assert min(int(v) % 100 for v in values[:, 0] if v < 100) == 3


def test_a_symmetry_maps_the_moves_with_the_policies():
    env = envs.make("tic_tac_toe")
    buffer = _unrolled_buffer(64, [9, 7])
    sample = jax.jit(lambda b, k: unroll.sample_unroll(b, k, 128, K, env.symmetries))(
        buffer, jax.random.key(3)
    )
    real = np.asarray(sample.real)
    policy_move = np.argmax(np.asarray(sample.policy), axis=-1)  # one-hot(move) mapped
    moved = real[:, :K]
    np.testing.assert_array_equal(np.asarray(sample.action)[moved], policy_move[:, :K][moved])
    assert (np.asarray(sample.action)[moved] != np.tile(np.arange(K), (128, 1))[moved]).any()


def test_n_step_returns_bootstrap_from_the_root_value_n_moves_later():
    env = envs.make("tic_tac_toe")
    sp = selfplay.init_selfplay(env, 1, jax.random.key(0), record_moves=True)
    rewards = jnp.zeros((9,)).at[:6].set(jnp.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]))
    values = jnp.zeros((9,)).at[:6].set(jnp.array([10.0, 20.0, 30.0, 40.0, 50.0, 60.0]))
    sp = sp.replace(reward=rewards[None], root_value=values[None], length=jnp.array([6]))
    got = np.asarray(selfplay.n_step_returns(sp, 2, 0.5))[0, :6]
    # i < 4: r_i + 0.5 r_{i+1} + 0.25 q_{i+2}; i = 4: r_4 + 0.5 r_5 (the end); i = 5: r_5
    want = [1 + 1 + 7.5, 2 + 1.5 + 10, 3 + 2 + 12.5, 4 + 2.5 + 15, 5 + 3, 6]
    np.testing.assert_allclose(got, want)


def test_the_dynamics_gets_half_the_gradient():
    grad = jax.grad(lambda x: (3.0 * unroll.scale_gradient(x, 0.5)).sum())(jnp.ones(4))
    np.testing.assert_allclose(grad, 1.5)
    np.testing.assert_allclose(unroll.scale_gradient(jnp.arange(3.0), 0.5), jnp.arange(3.0))


@pytest.fixture(scope="module")
def ttt_model(learned_config):
    env = envs.make("tic_tac_toe")
    network = model_lib.make_network(learned_config, env)
    params = network.init(jax.random.key(0), jnp.zeros((1, *env.observation_shape)))
    return env, network, params


def test_the_learned_search_flags_moves_off_the_rules_and_passes_the_turn(ttt_model):
    env, network, params = ttt_model
    model = model_lib.LearnedModel(network, num_players=2)
    states = jax.vmap(env.init)(jax.random.split(jax.random.key(0), 2))
    states = jax.vmap(env.step)(states, jnp.array([4, 4]))  # the centre taken
    root = jax.jit(model.root)(params, states)
    step = jax.jit(model.recurrent_fn(env))
    out, node = step(params, jax.random.key(1), jnp.array([0, 4]), root.embedding)
    assert list(np.asarray(node.off_rules)) == [False, True]  # 4 again: illegal
    np.testing.assert_array_equal(out.discount, [-1.0, -1.0])
    assert node.latent.shape == root.embedding.latent.shape
    assert float(node.latent.min()) >= 0.0 and float(node.latent.max()) <= 1.0
    _, after = step(params, jax.random.key(2), jnp.array([1, 1]), node)
    assert list(np.asarray(after.off_rules)) == [False, True]  # off once, off below


def test_inner_legal_masks_the_models_prior_with_the_true_rules(ttt_model):
    env, network, params = ttt_model
    states = jax.vmap(env.init)(jax.random.split(jax.random.key(0), 1))
    free = model_lib.LearnedModel(network, 2).recurrent_fn(env)
    masked = model_lib.LearnedModel(network, 2, inner_legal=True).recurrent_fn(env)
    root = model_lib.LearnedModel(network, 2).root(params, states)
    plain, _ = free(params, jax.random.key(1), jnp.array([4]), root.embedding)
    legal, _ = masked(params, jax.random.key(1), jnp.array([4]), root.embedding)
    assert float(plain.prior_logits[0, 4]) > -1e30  # the model's own prior: unmasked
    assert float(legal.prior_logits[0, 4]) < -1e30  # the centre is taken by the rules
    np.testing.assert_allclose(legal.prior_logits[0, :4], plain.prior_logits[0, :4])


def test_a_learned_search_runs_from_the_observation(ttt_model, learned_config):
    env, network, params = ttt_model
    from jaxzero.core.policies import make_search

    options = SearchOptions.of(
        learned_config.search, model_lib.learned_model(learned_config, env, network)
    )
    states = jax.vmap(env.init)(jax.random.split(jax.random.key(0), 3))
    search = jax.jit(
        lambda params, states, key: run_search(
            params, states, key, env, network.apply, make_search(learned_config.search),
            num_simulations=8, options=options, noise=False,
        )
    )  # fmt: skip
    output = search(params, states, jax.random.key(1))
    assert output.action_weights.shape == (3, 9)
    np.testing.assert_allclose(output.action_weights.sum(-1), 1.0, rtol=1e-5)
    with pytest.raises(ValueError, match="reuse_tree"):
        run_search(
            params, states, jax.random.key(1), env, network.apply,
            make_search(learned_config.search), num_simulations=8, options=options,
            tree=object(),
        )  # fmt: skip


def test_reanalyse_gives_fresh_targets_to_the_first_rows_only(ttt_model, learned_config):
    env, network, params = ttt_model
    from jaxzero.core.policies import make_search

    model = model_lib.LearnedModel(network, 2)
    buffer = _unrolled_buffer(64, [9, 7])
    sample = jax.jit(lambda b, k: unroll.sample_unroll(b, k, 8, K))(buffer, jax.random.key(5))
    fresh = jax.jit(
        lambda params, sample, key: unroll.reanalyse(
            params, sample, key, model=model, env=env,
            policy=make_search(learned_config.search), num_simulations=4, rows=3,
        )
    )(params, sample, jax.random.key(6))  # fmt: skip
    np.testing.assert_array_equal(fresh.policy[3:], sample.policy[3:])
    np.testing.assert_array_equal(fresh.value_target[3:], sample.value_target[3:])
    real = np.asarray(sample.real[:3])
    changed = np.abs(np.asarray(fresh.policy[:3]) - np.asarray(sample.policy[:3])).sum(-1) > 1e-6
    np.testing.assert_array_equal(changed, real)  # every real position, none past the end
    np.testing.assert_allclose(np.asarray(fresh.policy[:3]).sum(-1), 1.0, rtol=1e-5)


def test_a_learned_population_runs_its_members_in_one_program(learned_config):
    population = make_population(
        apply_overrides(learned_config, {"model.reanalyse": 0.0}),
        seeds=[0, 1],
        hyper={"optim.learning_rate": [1e-3, 0.0]},
        members_at_once=0,
    )
    state = population.init()
    for _ in range(3):
        state, metrics, _ = population.iteration(state)
    assert population.step._cache_size() == 1  # one program for both members
    assert metrics["model/value_error_1"].shape == (2,)
    frozen = member(population.init(), 1).params
    kept = member(state, 1).params  # learning rate 0: the second member's network stays
    for a, b in zip(jax.tree.leaves(frozen), jax.tree.leaves(kept), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        (["tic_tac_toe", "model.kind=dreamt"], "model.kind: expected one of rules, learned"),
        (["tic_tac_toe", "model.unroll_steps=0"], "model.unroll_steps must be >= 1"),
        (
            [
                "tic_tac_toe",
                "model.kind=learned",
                "model.unroll_steps=999",
                "replay.capacity=500",
                "replay.min_size=100",
            ],
            "model.unroll_steps=999 unrolls 1000 consecutive positions",
        ),
        (["tic_tac_toe", "network.value_bins=0"], "network.value_bins must be >= 3"),
        (["tic_tac_toe", "model.reanalyse=1.5"], "model.reanalyse must be between 0 and 1"),
        (["tic_tac_toe", "model.kind=learned", "search.reuse_tree=true"], "search.reuse_tree"),
        (["pgx/2048", "model.kind=learned", "search.chance_nodes=true"], "search.chance_nodes"),
        (["tic_tac_toe", "model.td_steps=5"], "two-player game"),
        (["star_duel", "model.kind=learned"], "may move twice running"),
        (
            [
                "tic_tac_toe",
                "model.kind=learned",
                "network.kind=jaxzero.core.networks:MLP",
                'network.args={"hidden_size": 8, "num_layers": 1}',
            ],
            "has no represent, step, predict",
        ),
        (
            ["tic_tac_toe", "model.kind=learned", "model.inner_legal=true", "model.reanalyse=0.5"],
            "model.inner_legal",
        ),
    ],
)
def test_a_setting_a_learned_model_cannot_honour_is_one_error_line(tmp_path, arguments, says):
    out = tmp_path / "run"
    result = runner.invoke(app, ["train", *arguments, "--out", str(out), "--iterations", "1"])
    assert says in error_line(result)
    assert not out.exists()


def test_a_learned_model_needs_a_network_with_the_models_methods(learned_config):
    with pytest.raises(ValueError, match="has no represent, step, predict"):
        model_lib.check_learned_network(envs, "mine")  # anything without the methods


def test_an_exported_learned_agent_names_its_model_and_plays_back(learned_run, tmp_path):
    from jaxzero.run.agents.agent import export_agent

    export_agent(learned_run, tmp_path / "agent")
    card = (tmp_path / "agent" / "MODEL_CARD.md").read_text()
    assert "Plans with: a learned model (MuZero" in card and f"unrolls of {K} moves" in card
    assert "MLP of" in card  # the trunk the three networks are built on
    agent = load_agent(tmp_path / "agent")
    assert agent.player.options.model is not None


def test_a_learned_runs_report_draws_the_model_diagnostics(learned_run, tmp_path, tiny_run):
    import shutil

    from jaxzero.run.reports.report import write_report

    run = tmp_path / "run"
    shutil.copytree(learned_run, run)
    write_report(run)
    assert (run / "report" / "model.png").is_file()
    assert "model/value_error_1" in (run / "report" / "summary.md").read_text()
    rules = tmp_path / "rules"
    shutil.copytree(tiny_run, rules)
    write_report(rules)
    assert not (rules / "report" / "model.png").exists()  # a rules run has no model
