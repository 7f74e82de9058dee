"""A resume continues the run its checkpoint holds, or says in one line why it cannot:
swapped checkpoint folders, an edited config.json, a metrics.jsonl that is no file; and
keep_every's history checkpoints keep the network only, still read by every command."""

import json
import shutil

import jax
import numpy as np
import pytest
from helpers import checkpointed_run, error_line
from typer.testing import CliRunner

from jaxzero.cli import app
from jaxzero.run.agents.agent import load_agent, load_agents
from jaxzero.run.life.checkpoint import Checkpointer, CheckpointError

runner = CliRunner()


@pytest.fixture
def run(tiny_run, tmp_path):
    """A copy of the session's 4-iteration tic-tac-toe run (checkpoints 2 and 4)."""
    copy = tmp_path / "run"
    shutil.copytree(tiny_run, copy)
    return copy


def _edit_config(run, **changes):
    path = run / "config.json"
    config = json.loads(path.read_text())
    for key, value in changes.items():
        *sections, name = key.split("__")
        node = config
        for section in sections:
            node = node[section]
        node[name] = value
    path.write_text(json.dumps(config))


def test_swapped_checkpoint_folders_are_refused_naming_both_numbers(run, train_run):
    folders = run / "checkpoints"
    (folders / "2").rename(folders / "swap")
    (folders / "4").rename(folders / "2")
    (folders / "swap").rename(folders / "4")
    with pytest.raises(CheckpointError, match="holds iteration 2, not 4") as error:
        train_run(run, resume=True, iterations=6)
    assert "\n" not in str(error.value)
    with pytest.raises(CheckpointError, match="holds iteration 2, not 4"):
        load_agent(run)  # eval, play and export would take it for iteration 4's network


@pytest.mark.parametrize(
    "edits, named",
    [
        ({"game": "connect_four"}, ["game: 'tic_tac_toe' saved, 'connect_four' in config.json"]),
        ({"seed": 5}, ["seed: 0 saved, 5 in config.json"]),
        (
            {"seed": 5, "selfplay__batch_size": 16, "optim__learning_rate": 0.5},
            ["seed: 0 saved", "selfplay.batch_size: 8", "optim.learning_rate: 0.003 saved, 0.5"],
        ),
    ],
)
def test_an_edited_config_is_named_field_by_field_on_resume(run, edits, named):
    _edit_config(run, **edits)
    line = error_line(
        runner.invoke(app, ["train", "--resume", "--iterations", "6", "--out", str(run)])
    )
    assert "checkpoint 4 in" in line and "was written under another config" in line
    for text in named:
        assert text in line
    assert line.index(named[0]) <= line.index(named[-1])  # every field, in order
    original = run / "checkpoints" / "4" / "config" / "metadata"
    assert f"compare the run's config.json with {original} and restore it" in line
    assert "another jaxzero version" not in line


def test_settings_outside_the_compiled_iteration_may_change_on_resume(run, train_run):
    _edit_config(run, train__log_every=3, evaluation__games=4, gate__every=7)
    assert train_run(run, resume=True, iterations=4).iterations == 4  # nothing to refuse


def test_a_folder_in_place_of_metrics_jsonl_is_one_line(run):
    (run / "metrics.jsonl").unlink()
    (run / "metrics.jsonl").mkdir()
    line = error_line(
        runner.invoke(app, ["train", "--resume", "--iterations", "6", "--out", str(run)])
    )
    assert f"{run / 'metrics.jsonl'} is a folder" in line


@pytest.fixture(scope="module")
def history(tmp_path_factory, ttt_config, trainers):
    """A run directory whose checkpoints 1..7 were saved with keep_every=2: 5, 6 and 7 the
    newest, 2 and 4 history."""
    run = tmp_path_factory.mktemp("history") / "run"
    checkpointed_run(run, ttt_config, trainers(ttt_config), range(1, 8), keep_every=2)
    with Checkpointer(run, read_only=True) as checkpointer:
        assert checkpointer.steps() == [2, 4, 5, 6, 7]
    return run


def _bytes(folder) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def test_history_checkpoints_keep_the_network_only(history):
    folders = history / "checkpoints"
    for step in (2, 4):
        assert not (folders / str(step) / "state").exists()
        assert _bytes(folders / str(step)) * 3 < _bytes(folders / "6"), step
    for step in (5, 6, 7):
        assert (folders / str(step) / "state").is_dir()


def test_history_checkpoints_still_play_export_and_rate(history, tmp_path, ttt_config, trainers):
    agent = load_agent(history, step=2)
    expected = trainers(ttt_config).init(jax.random.key(2)).best_params
    assert agent.iteration == 2
    for x, y in zip(jax.tree.leaves(agent.params), jax.tree.leaves(expected), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    names = [name for name, _, _ in load_agents([history])]  # what eval rates
    assert names == ["run@2", "run@4", "run@5", "run@6", "run@7"]
    out = tmp_path / "agent"
    result = runner.invoke(app, ["export", str(history / "checkpoints" / "4"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert load_agent(out).iteration == 4


def test_a_history_checkpoint_is_not_resumed(history, tmp_path, train_run):
    run = tmp_path / "run"
    shutil.copytree(history, run)
    for step in (5, 6, 7):
        shutil.rmtree(run / "checkpoints" / str(step))
    with pytest.raises(CheckpointError, match="checkpoint 4 in .* keeps only its network") as e:
        train_run(run, resume=True, iterations=8)
    assert "\n" not in str(e.value)
