"""Populations: member k of ``make_population`` is the single run of seed k and its own
hyperparameters, number for number; one compile; refusals; the run directory of members."""

import json

import jax
import numpy as np
import pytest
from typer.testing import CliRunner

from jaxzero.cli import app
from jaxzero.core.config import apply_overrides
from jaxzero.core.population import make_population, member
from jaxzero.run.agent import load_agent
from jaxzero.run.checkpoint import Checkpointer, CheckpointError
from jaxzero.run.driver import train
from jaxzero.run.members import member_folder

runner = CliRunner()
ITERATIONS = 3


def _run(iteration, state, n=ITERATIONS):
    metrics = []
    for _ in range(n):
        state, m, _ = iteration(state)
        metrics.append(m)
    return state, metrics


def _assert_member_is_single_run(population, state, metrics, k, trainers):
    """Member k against ``make_trainer(members[k])`` from ``key(seeds[k])``: parameters
    to 1e-5, replay, game and position counts exactly."""
    trainer = trainers(population.members[k])
    single, single_metrics = _run(
        trainer.iteration, trainer.init(jax.random.key(population.seeds[k]))
    )
    mine = member(state, k)
    for a, b in zip(jax.tree.leaves(single.params), jax.tree.leaves(mine.params), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-5)
    for a, b in zip(jax.tree.leaves(single.replay), jax.tree.leaves(mine.replay), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    for name in ("env_steps", "positions_written", "updates", "iteration"):
        assert int(getattr(single, name)) == int(getattr(mine, name)), name
    games = [float(m["games_finished"]) for m in single_metrics]
    assert games == [float(m["games_finished"][k]) for m in metrics]


@pytest.fixture(scope="module")
def ttt_population(ttt_config):
    """Three tic-tac-toe members, the second with learning rate 0, run ITERATIONS."""
    population = make_population(
        ttt_config,
        seeds=[3, 4, 5],
        hyper={"optim.learning_rate": [1e-3, 0.0, 3e-3], "selfplay.temperature": [1.0, 1.0, 0.5]},
    )
    first = population.init()
    state, metrics = _run(population.iteration, first)
    return population, first, state, metrics


def test_members_are_single_runs_of_their_seeds(ttt_population, trainers):
    population, _, state, metrics = ttt_population
    assert population.members[2].optim.learning_rate == 3e-3
    assert population.members[2].selfplay.temperature == 0.5
    assert [m.seed for m in population.members] == [3, 4, 5]
    assert metrics[-1]["policy_loss"].shape == (3,)
    for k in (0, 2):
        _assert_member_is_single_run(population, state, metrics, k, trainers)


def test_members_vmapped_together_compute_the_same(ttt_config, ttt_population):
    """All three members in one vmap (an accelerator's default; the search loops end
    together over the members axis) against one at a time (a CPU's default)."""
    population, _, state, _ = ttt_population
    together = make_population(
        ttt_config, seeds=population.seeds, hyper=population.hyper, members_at_once=3
    )
    vmapped, _ = _run(together.iteration, together.init())
    for a, b in zip(jax.tree.leaves(state.params), jax.tree.leaves(vmapped.params), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-5)
    np.testing.assert_array_equal(state.replay.observation, vmapped.replay.observation)
    np.testing.assert_array_equal(state.positions_written, vmapped.positions_written)


def test_population_compiles_once(ttt_population):
    population = ttt_population[0]
    assert population.step._cache_size() == 1


def test_learning_rate_zero_keeps_the_initial_network(ttt_population):
    _, first, state, metrics = ttt_population
    assert float(metrics[-1]["updated"][1]) == 1.0  # it did take its updates
    for k, moved in ((0, True), (1, False), (2, True)):
        before, after = member(first, k).params, member(state, k).params
        same = all(
            np.array_equal(a, b)
            for a, b in zip(jax.tree.leaves(before), jax.tree.leaves(after), strict=True)
        )
        assert same != moved, k


def test_connect_four_puct_members(c4_config, trainers):
    config = apply_overrides(c4_config, {"search.kind": "puct"})
    population = make_population(
        config,
        seeds=[1, 2],
        hyper={"search.pb_c_init": [1.25, 2.5], "search.dirichlet_alpha": [0.3, 1.0]},
    )
    state, metrics = _run(population.iteration, population.init(), 2)
    assert population.members[1].search.pb_c_init == 2.5
    trainer = trainers(population.members[1])
    single, single_metrics = _run(trainer.iteration, trainer.init(jax.random.key(2)), 2)
    mine = member(state, 1)
    np.testing.assert_array_equal(single.replay.observation, mine.replay.observation)
    assert int(single.positions_written) == int(mine.positions_written)
    for a, b in zip(jax.tree.leaves(single.params), jax.tree.leaves(mine.params), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-5)


@pytest.mark.parametrize(
    "hyper, message",
    [
        ({"selfplay.batch_size": [8, 16]}, "selfplay.batch_size fixes an array's shape"),
        ({"search.kind": ["puct", "gumbel"]}, "search.kind fixes an array's shape"),
        ({"seed": [1, 2]}, "the seeds are the population's"),
        ({"optim.learning_rte": [1e-3, 2e-3]}, "'optim.learning_rte' cannot be"),
        ({"optim.learning_rate": [1e-3, 2e-3, 3e-3]}, "3 values for a population of 2"),
        ({"optim.learning_rate": [1e-3, -1.0]}, "optim.learning_rate must be >= 0"),
        ({"search.pb_c_init": [1.0, 2.0]}, "search.pb_c_init is not a setting of the Gumbel"),
    ],
)
def test_refusals_name_the_setting(ttt_config, hyper, message):
    with pytest.raises(ValueError, match=message):
        make_population(ttt_config, seeds=[0, 1], hyper=hyper)


def test_gate_and_devices_refused(ttt_config):
    with pytest.raises(ValueError, match="set gate.enabled=false"):
        make_population(apply_overrides(ttt_config, {"gate.enabled": True}), seeds=[0, 1])
    with pytest.raises(ValueError, match="set search.reuse_tree=false"):
        make_population(apply_overrides(ttt_config, {"search.reuse_tree": True}), seeds=[0])
    with pytest.raises(ValueError, match="at least one seed"):
        make_population(ttt_config, seeds=[])


def test_member_seeds_stay_in_the_keys_range(ttt_config):
    # jax.random.key(2**32) is key(0): member 1 would have been member 0 again
    with pytest.raises(ValueError, match="seed must be between 0 and 4294967295"):
        make_population(ttt_config, seeds=[0, 2**32])
    with pytest.raises(ValueError, match="search.dirichlet_alpha must be > 0"):  # on the axis
        puct = apply_overrides(ttt_config, {"search.kind": "puct"})
        make_population(puct, seeds=[0, 1], hyper={"search.dirichlet_alpha": [0.3, 0.0]})


@pytest.fixture(scope="module")
def run_population(ttt_config):
    # evaluation.every: each member's raw-policy share of the solved positions, no matches
    config = apply_overrides(ttt_config, {"evaluation.every": 2, "train.checkpoint_every": 2})
    return make_population(config, seeds=[0, 1], hyper={"optim.learning_rate": [1e-3, 2e-3]})


def _restore(run, population):
    with Checkpointer(run) as checkpointer:
        return checkpointer.restore(jax.eval_shape(population.init))[0]


def test_population_run_resumes_exactly_and_members_load(tmp_path, run_population):
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    train(straight, trainer=run_population, iterations=4)
    train(resumed, trainer=run_population, iterations=2)
    assert train(resumed, trainer=run_population, resume=True, iterations=4).iterations == 4
    a, b = _restore(straight, run_population), _restore(resumed, run_population)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    for k in range(2):
        rows = [
            (member_folder(run, k) / "metrics.jsonl").read_text().splitlines()
            for run in (straight, resumed)
        ]
        strip = [[_without_time(line) for line in lines] for lines in rows]
        assert strip[0] == strip[1] and len(strip[0]) == 4
        assert [("eval/raw_optimal" in row) for row in strip[0]] == [False, True, False, True]
        assert not any("eval/vs_random" in row for row in strip[0])
    config = json.loads((member_folder(resumed, 1) / "config.json").read_text())
    assert config["seed"] == 1 and config["optim"]["learning_rate"] == 2e-3

    agent = load_agent(member_folder(resumed, 1))
    assert agent.iteration == 4 and agent.config.optim.learning_rate == 2e-3
    for x, y in zip(
        jax.tree.leaves(agent.params), jax.tree.leaves(member(b, 1).best_params), strict=True
    ):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    with pytest.raises(CheckpointError, match="population of 2 members"):
        load_agent(resumed)

    shown = str(member_folder(resumed, 1))
    evaluated = runner.invoke(app, ["eval", shown, "--opponents", "random", "--games", "2"])
    assert evaluated.exit_code == 0, evaluated.output
    played = runner.invoke(app, ["play", "--checkpoint", shown], input="1\n2\n3\n4\n5\n6\n7\n")
    assert played.exit_code == 0, played.output
    reported = runner.invoke(app, ["report", str(resumed)])
    assert reported.exit_code == 0, reported.output
    summary = (resumed / "report" / "summary.md").read_text()
    assert "optim.learning_rate=0.002 | 1 |" in summary

    edited = json.loads((resumed / "population.json").read_text())
    edited["hyper"]["optim.learning_rate"][1] = 5e-3
    (resumed / "population.json").write_text(json.dumps(edited))
    with pytest.raises(ValueError, match=r"member 1 .* optim.learning_rate=0.002, but .*=0.005"):
        train(resumed, resume=True, iterations=5)


def _without_time(line: str) -> dict:
    row = json.loads(line)
    return {k: v for k, v in row.items() if k not in ("elapsed", "positions_per_second")}


def test_cli_seeds_and_grid(tmp_path):
    out = tmp_path / "run"
    args = ["train", "tic_tac_toe", "--seeds", "2", "--grid", "optim.learning_rate=1e-3,3e-3"]
    args += ["--iterations", "1", "--out", str(out), "evaluation.every=0"]
    args += ["selfplay.batch_size=4", "selfplay.moves_per_iteration=2", "search.num_simulations=2"]
    args += ["replay.capacity=64", "replay.min_size=8", "optim.minibatch_size=8"]
    args += ["network.hidden_size=8", "optim.updates_per_iteration=1"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    population = json.loads((out / "population.json").read_text())
    assert population == {
        "seeds": [0, 1, 0, 1],
        "hyper": {"optim.learning_rate": [1e-3, 1e-3, 3e-3, 3e-3]},
    }
    assert f"--checkpoint{out}/members/0" in "".join(result.output.split())
    refused = runner.invoke(app, ["train", "--seeds", "2", "--grid", "network.channels=8,16"])
    assert refused.exit_code == 2 and "network.channels fixes" in refused.output


def test_a_population_beyond_memory_is_refused_before_compiling(ttt_config, trainers):
    from jaxzero.core.memory import check_memory, memory_needs

    trainer = trainers(ttt_config)
    one = sum(memory_needs(trainer).values())
    check_memory(trainer, available=8 * one, members=8)  # fits
    with pytest.raises(ValueError, match="the population of 9 members needs about .* free: lower"):
        check_memory(trainer, available=8 * one, members=9)


def test_population_json_is_strict_json(tmp_path):
    # An infinite value was written as `Infinity`, which no JSON reader but Python's takes
    from types import SimpleNamespace

    from jaxzero.run.members import write_population

    population = SimpleNamespace(seeds=(0, 1), hyper={"optim.learning_rate": [1e-3, np.inf]})
    with pytest.raises(ValueError, match="population.json would hold a NaN or infinite number"):
        write_population(tmp_path, population)
    assert not (tmp_path / "population.json").exists()
