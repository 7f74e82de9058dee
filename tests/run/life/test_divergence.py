"""A diverged run: caught at once, nothing non-finite saved, logged or loaded."""

import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import TINY
from helpers import checkpointed_run
from typer.testing import CliRunner

from jaxzero.cli import app
from jaxzero.run.agents.agent import load_agent
from jaxzero.run.life import hooks
from jaxzero.run.life.checkpoint import Checkpointer, CheckpointError
from jaxzero.run.reports.report import write_report
from jaxzero.run.reports.rows import read_metrics

runner = CliRunner()
DIVERGING = ["optim.learning_rate=1e30", "optim.max_grad_norm=0"]


def _error_lines(result) -> list[str]:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output, result.output
    return [line for line in result.output.splitlines() if line.startswith("error: ")]


def _strict_rows(path):
    def refuse(token):
        raise ValueError(f"{token} is not JSON")

    return [json.loads(line, parse_constant=refuse) for line in path.read_text().splitlines()]


def _finite(tree) -> bool:
    return all(np.isfinite(np.asarray(leaf)).all() for leaf in jax.tree.leaves(tree))


def test_a_diverging_run_stops_at_once_keeping_its_last_finite_checkpoint(tmp_path):
    run = tmp_path / "run"
    settings = [f"{k}={v}" for k, v in TINY.items()] + ["train.checkpoint_every=1"]
    args = ["train", "tic_tac_toe", "--out", str(run), "--iterations", "8"]
    errors = _error_lines(runner.invoke(app, [*args, *settings, *DIVERGING]))
    assert len(errors) == 1, errors
    assert "diverged at iteration 3" in errors[0], errors
    assert "checkpoint 2 is the newest and the last finite one" in errors[0], errors
    assert "policy_loss" in errors[0] and "grad_norm" in errors[0], errors
    with Checkpointer(run, read_only=True) as checkpointer:
        assert checkpointer.latest_step() == 2  # nothing of iteration 3 or later
    rows = _strict_rows(run / "metrics.jsonl")  # strict JSON: no NaN token
    assert [row["iteration"] for row in rows] == [1, 2]
    agent = load_agent(run)
    assert agent.iteration == 2 and _finite(agent.params)


@pytest.fixture(scope="module")
def nan_run(tmp_path_factory, ttt_config, trainers):
    """Checkpoints 10 (finite) and 20 (best_params NaN), as a jaxzero that saved a
    diverged state left them."""
    config = ttt_config
    run = tmp_path_factory.mktemp("nan") / "run"

    def diverged_at_20(step, state):
        if step < 20:
            return state
        nan = jax.tree.map(lambda x: x * jnp.nan, state.best_params)
        return state.replace(params=nan, best_params=nan)

    return checkpointed_run(run, config, trainers(config), [10, 20], edit=diverged_at_20)


def test_every_loader_refuses_non_finite_parameters_naming_an_earlier_checkpoint(nan_run):
    with pytest.raises(CheckpointError, match="checkpoint 20 in .* non-finite") as error:
        load_agent(nan_run)
    assert "load an earlier checkpoint (10)" in str(error.value)
    assert load_agent(nan_run, step=10).iteration == 10
    for command in (
        ["play", "--checkpoint", str(nan_run)],
        ["analyze", "tic_tac_toe", "--checkpoint", str(nan_run)],
        ["eval", str(nan_run), "--games", "2", "--opponents", "random"],
        ["export", str(nan_run), "--out", str(nan_run.parent / "agent")],
        ["train", "--resume", "--out", str(nan_run)],
    ):
        errors = _error_lines(runner.invoke(app, command, input=""))
        assert len(errors) == 1 and "checkpoint 20 in" in errors[0], (command, errors)
        assert "non-finite" in errors[0] and "checkpoint (10)" in errors[0], command
    assert not (nan_run.parent / "agent").exists()


def _step(iteration, finite, state=None):
    loss = 1.0 if finite else math.nan
    metrics = {"finite": jnp.float32(finite), "policy_loss": jnp.float32(loss)}
    return hooks.Step(iteration, state or {"w": jnp.ones(2)}, metrics, {}, hooks.Clock())


def test_the_guard_stops_the_run_and_the_checkpoint_hook_never_saves_past_it(tmp_path):
    checkpointer = Checkpointer(tmp_path)
    guard = hooks.FiniteGuard(checkpointer)
    saving = hooks.CheckpointHook(checkpointer, every=2, config={}, guard=guard)
    for i in (1, 2):
        guard(_step(i, True))
        saving(_step(i, True))
    bad = _step(3, False)
    bad.row = {"iteration": 3}  # a logged iteration: the host holds it
    with pytest.raises(hooks.Diverged, match="diverged at iteration 3.*checkpoint 2 is the newest"):
        guard(bad)
    saving.close(bad)  # the run stops: no save of the diverged state
    with Checkpointer(tmp_path, read_only=True) as reader:
        assert reader.steps() == [2]


def test_a_divergence_between_logged_rows_is_caught_before_the_next_save(tmp_path):
    checkpointer = Checkpointer(tmp_path)
    guard = hooks.FiniteGuard(checkpointer)
    saving = hooks.CheckpointHook(checkpointer, every=4, config={}, guard=guard)
    for i, finite in ((1, True), (2, True), (3, False), (4, False)):
        step = _step(i, finite)
        guard.observe(step)  # no row logged: nothing read on the host until the save
        if i == 4:
            with pytest.raises(hooks.Diverged, match="diverged at iteration 3"):
                saving(step)
        else:
            saving(step)
    saving.close(_step(4, False))
    with Checkpointer(tmp_path, read_only=True) as reader:
        assert reader.steps() == []


def test_metrics_rows_stay_strict_json_and_the_report_reads_null(tmp_path):
    writer = hooks.JsonlWriter(tmp_path / "metrics.jsonl")
    step = _step(1, True)
    step.row = {"iteration": 1, "value_loss": math.nan, "grad_norm": math.inf, "policy_loss": 0.5}
    writer(step)
    writer.close(step)
    rows = _strict_rows(tmp_path / "metrics.jsonl")
    assert rows == [{"iteration": 1, "value_loss": None, "grad_norm": None, "policy_loss": 0.5}]
    read, skipped = read_metrics(tmp_path)
    assert read == rows and skipped == []
    summary = (write_report(tmp_path) / "summary.md").read_text()
    assert "| value_loss | not finite |" in summary and "| policy_loss | 0.5 |" in summary
