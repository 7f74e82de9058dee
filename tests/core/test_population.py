"""Populations: member k of ``make_population`` is the single run of seed k and its own
hyperparameters, number for number; one compile; refusals; the run directory of members."""

import dataclasses
import json

import jax
import numpy as np
import pytest
from conftest import TINY
from typer.testing import CliRunner

from jaxzero.cli import app
from jaxzero.core.config import apply_overrides
from jaxzero.core.population import make_population, member
from jaxzero.run.agents.agent import load_agent
from jaxzero.run.folder.layout import member_folder
from jaxzero.run.life.checkpoint import Checkpointer, CheckpointError
from jaxzero.run.life.driver import train
from jaxzero.run.life.game_records import read_games

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
        members_at_once=1,
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
    """All three members in one vmap (the search loops end together over the members
    axis) against one at a time."""
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
        members_at_once=1,  # a convolution vmapped over members is slow on a CPU
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
    # each member's own games; a resumed run's are the uninterrupted run's, less the game
    # under way at the resume (begun before it: not seen whole)
    games = [[read_games(member_folder(run, k)) for k in range(2)] for run in (straight, resumed)]
    assert games[0][0] and games[0][0] != games[0][1]
    for k in range(2):
        assert set(games[1][k]) <= set(games[0][k])
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
    """The command line trains a grid's population: one seed, two learning rates
    vmapped together, ``diverging``'s program (compiled once for the module). A grid
    crossed with several seeds: test_study (make_study, which the command line calls)."""
    out = tmp_path / "run"
    args = ["train", "tic_tac_toe", "--seeds", "1", "--grid", "optim.learning_rate=1e-3,3e-3"]
    args += ["--members-at-once", "2", "--iterations", "1", "--out", str(out)]
    args += [*(f"{key}={value}" for key, value in TINY.items()), "evaluation.every=0"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    population = json.loads((out / "population.json").read_text())
    assert population == {"seeds": [0, 0], "hyper": {"optim.learning_rate": [1e-3, 3e-3]}}
    assert f"--checkpoint{out}/members/0" in "".join(result.output.split())
    refused = runner.invoke(app, ["train", "--seeds", "2", "--grid", "network.nope=8,16"])
    assert refused.exit_code == 2 and "'network.nope' cannot be" in refused.output


def test_a_population_beyond_memory_is_refused_before_compiling(ttt_config, trainers):
    from jaxzero.core.memory import check_memory, memory_needs

    trainer = trainers(ttt_config)
    one = sum(memory_needs(trainer).values())
    check_memory(trainer, available=8 * one, members=8)  # fits
    with pytest.raises(ValueError, match="the population of 9 members needs about .* free: lower"):
        check_memory(trainer, available=8 * one, members=9)


@pytest.fixture(scope="module")
def diverging(ttt_config):
    """Two members, the second's learning rate so large that its third iteration (its
    second of updates) is not finite."""
    config = apply_overrides(ttt_config, {"evaluation.every": 2, "train.log_every": 1})
    return make_population(config, seeds=[0, 1], hyper={"optim.learning_rate": [1e-3, 1e30]})


def _leaves_equal(a, b) -> bool:
    return all(
        np.array_equal(np.asarray(x), np.asarray(y))
        for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True)
    )


def _rates(population, rates):
    """Other learning rates for the population's compiled step (placed as its own)."""
    placed = population.values["optim.learning_rate"]
    return {"optim.learning_rate": jax.device_put(np.float32(rates), placed.sharding)}


def _finite(tree) -> bool:
    return all(np.isfinite(np.asarray(x)).all() for x in jax.tree.leaves(tree))


def test_a_diverging_member_is_frozen_and_the_others_train_on(diverging):
    """Member 1 diverges at iteration 3: its state stays the one after iteration 2,
    finite, marked; member 0 trains on exactly as beside a member that stays finite (the
    same compiled program, member 1's learning rate 1e-3)."""
    first = diverging.init()
    states, state = [first], first
    for _ in range(5):
        state, metrics, _ = diverging.iteration(state)
        states.append(state)
    assert np.asarray(state.diverged_at).tolist() == [0, 3]
    assert np.asarray(metrics["finite"]).tolist() == [1.0, 0.0]
    assert np.asarray(state.iteration).tolist() == [5, 2]
    frozen = member(state, 1).train_state()
    assert _leaves_equal(frozen, member(states[2], 1).train_state()) and _finite(frozen)
    assert _finite(state)  # what a checkpoint saves

    healthy = _rates(diverging, [1e-3, 1e-3])
    beside = first
    for _ in range(5):
        beside, _, _ = diverging.step(beside, healthy)
    assert np.asarray(beside.diverged_at).tolist() == [0, 0]
    assert _leaves_equal(member(state, 0).train_state(), member(beside, 0).train_state())
    assert not _leaves_equal(member(first, 0).params, member(state, 0).params)
    assert diverging.step._cache_size() == 1


def test_a_diverged_member_stays_frozen_in_the_run_its_resume_and_refuses_to_load(
    tmp_path, diverging, capsys
):
    run = tmp_path / "run"
    assert train(run, trainer=diverging, iterations=4).iterations == 4
    said = capsys.readouterr().err
    assert f"member 1 of {run} diverged at iteration 3 (optim.learning_rate=1e+30), seed 1" in said

    def no_constant(name):
        raise ValueError(f"not strict JSON: {name}")

    record = json.loads((run / "population.json").read_text(), parse_constant=no_constant)
    assert record["diverged"] == [
        {"member": 1, "seed": 1, "iteration": 3, "hyper": {"optim.learning_rate": 1e30}}
    ]
    rows = [(member_folder(run, k) / "metrics.jsonl").read_text().splitlines() for k in (0, 1)]
    assert [json.loads(r)["iteration"] for r in rows[1]] == [1, 2]  # its rows stop there
    assert len(rows[0]) == 4
    saved = _restore(run, diverging)
    assert np.asarray(saved.diverged_at).tolist() == [0, 3] and _finite(saved)

    assert train(run, trainer=diverging, resume=True, iterations=6).iterations == 6
    resumed = _restore(run, diverging)
    assert np.asarray(resumed.diverged_at).tolist() == [0, 3]
    assert _leaves_equal(member(resumed, 1), member(saved, 1))  # still frozen
    assert np.asarray(resumed.iteration).tolist() == [6, 2]

    refusal = f"error: member 1 of {run} diverged at iteration 3 (optim.learning_rate=1e+30); "
    shown = str(member_folder(run, 1))
    exported = runner.invoke(app, ["export", shown, "--out", str(tmp_path / "agent")])
    evaluated = runner.invoke(app, ["eval", shown, "--opponents", "random", "--games", "2"])
    for result in (exported, evaluated):
        assert result.exit_code == 2 and result.output.startswith(refusal), result.output
        assert len(result.output.strip().splitlines()) == 1, result.output
    assert not (tmp_path / "agent").exists()
    reported = runner.invoke(app, ["report", str(run)])
    assert reported.exit_code == 0, reported.output
    summary = (run / "report" / "summary.md").read_text()
    assert "Diverged (left out of their arms): member 1 of" in summary
    assert "| optim.learning_rate=1e+30 | 0 (diverged) |" in summary
    assert "| optim.learning_rate=0.001 | 1 |" in summary


def test_every_member_diverging_stops_the_run(tmp_path, diverging):
    """Both members' learning rates huge (the same compiled program): the run stops as a
    single run does, naming each member, that iteration not saved."""
    from jaxzero.run.life.hooks import Diverged

    huge = dataclasses.replace(
        diverging,
        members=tuple(apply_overrides(m, {"optim.learning_rate": 1e30}) for m in diverging.members),
        hyper={"optim.learning_rate": (1e30, 1e30)},
        values=_rates(diverging, [1e30, 1e30]),
    )
    with pytest.raises(Diverged, match=r"every member .*\(member 0 at iteration 3, member 1 at"):
        train(tmp_path / "run", trainer=huge, iterations=6)
    with Checkpointer(tmp_path / "run") as checkpointer:
        assert checkpointer.latest_step() == 2


def test_a_population_checkpoint_without_divergence_flags_resumes(tmp_path, diverging):
    """A checkpoint of a jaxzero before members failed alone (no ``diverged_at``) restores
    with no member diverged."""
    state = diverging.init()
    with Checkpointer(tmp_path) as checkpointer:
        checkpointer.save(0, state.train_state(), {})
    with Checkpointer(tmp_path) as checkpointer:
        restored = checkpointer.restore(jax.eval_shape(diverging.init))[0]
    assert np.asarray(restored.diverged_at).tolist() == [0, 0]
    assert _leaves_equal(restored.train_state().params, state.params)


def test_population_json_is_strict_json(tmp_path):
    # An infinite value was written as `Infinity`, which no JSON reader but Python's takes
    from types import SimpleNamespace

    from jaxzero.run.life.members import write_population

    population = SimpleNamespace(seeds=(0, 1), hyper={"optim.learning_rate": [1e-3, np.inf]})
    with pytest.raises(ValueError, match="population.json would hold a NaN or infinite number"):
        write_population(tmp_path, population)
    assert not (tmp_path / "population.json").exists()
