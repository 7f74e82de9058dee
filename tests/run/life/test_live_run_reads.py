"""Reading a run that is still training: its checkpoint retention deletes steps meanwhile.

The trainer keeps its newest checkpoints and deletes older ones after each save; `eval`,
`export`, `play` and the library's loaders list a run's steps first and read them later,
so a step may vanish in between, or while it is read. Such a step is skipped and named,
never taken for a damaged one.
"""

import shutil

import jax
import orbax.checkpoint as ocp
import pytest
from helpers import checkpointed_run
from typer.testing import CliRunner

from jaxzero.cli import app
from jaxzero.run.agents import agent as agent_lib
from jaxzero.run.agents.agent import load_agent, load_agents
from jaxzero.run.life import checkpoint as checkpoint_lib
from jaxzero.run.life.checkpoint import Checkpointer, CheckpointError, CheckpointRemoved

runner = CliRunner()


@pytest.fixture(scope="module")
def saved_run(tmp_path_factory, ttt_config, trainers):
    """A run directory with checkpoints 10, 20 and 30, untrained."""
    config = ttt_config
    run = tmp_path_factory.mktemp("live") / "run"
    return checkpointed_run(run, config, trainers(config), [10, 20, 30])


@pytest.fixture
def live(saved_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(saved_run, run)
    return run


def _retention(run, step):
    """What the trainer's retention does to ``step``: its folder is gone."""
    shutil.rmtree(run / "checkpoints" / str(step))


def test_a_step_removed_after_the_listing_is_skipped_and_named(live, monkeypatch):
    listed = agent_lib.checkpoint_steps

    def listing_then_retention(run_dir):
        steps = listed(run_dir)
        _retention(run_dir, steps[0])
        return steps

    monkeypatch.setattr(agent_lib, "checkpoint_steps", listing_then_retention)
    args = ["eval", str(live), "--opponents", "random", "--games", "2", "--simulations", "2"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output and "start a new run" not in result.output
    skipped = f"checkpoint 10 in {live}/checkpoints was removed while reading"
    lines = [line for line in result.output.splitlines() if skipped in line]
    assert len(lines) == 1 and lines[0].endswith("(the run is still training): skipped"), lines
    players = {line.split()[1] for line in result.stdout.splitlines()[1:] if line.strip()}
    assert players == {"random", "run@20", "run@30"}


def _removed_while_read(monkeypatch, run, step):
    """Retention removes ``step`` while orbax restores it."""
    restore = ocp.CheckpointManager.restore

    def retention_meanwhile(manager, at, *args, **kwargs):
        if at == step and (run / "checkpoints" / str(step)).exists():
            _retention(run, step)
        return restore(manager, at, *args, **kwargs)

    monkeypatch.setattr(ocp.CheckpointManager, "restore", retention_meanwhile)


def test_a_step_removed_while_it_is_read_is_named_removed_not_damaged(live, monkeypatch, capsys):
    _removed_while_read(monkeypatch, live, 10)
    loaded = load_agents([live])
    assert [name for name, _, _ in loaded] == ["run@20", "run@30"]
    err = capsys.readouterr().err
    assert f"checkpoint 10 in {live}/checkpoints was removed while reading" in err
    assert "skipped" in err and "damaged" not in err and "unreadable" not in err

    _removed_while_read(monkeypatch, live, 20)
    with pytest.raises(CheckpointRemoved) as error:
        load_agent(live, step=20)
    message = str(error.value)
    assert isinstance(error.value, CheckpointError)
    assert "was removed while reading" in message and "checkpoints/30" in message
    assert "damaged" not in message and "start a new run" not in message


def test_the_latest_step_removed_while_it_is_read_falls_back_to_the_new_latest(live, monkeypatch):
    _removed_while_read(monkeypatch, live, 30)
    assert load_agent(live).iteration == 20


def test_a_step_removed_while_orbax_lists_the_run_is_not_a_traceback(live, monkeypatch):
    step_format = type(ocp.path.step.standard_name_format())
    find_all = step_format.find_all

    def listing_then_retention(name_format, base_path):
        found = list(find_all(name_format, base_path))
        if (live / "checkpoints" / "10").exists():
            _retention(live, 10)
        return found

    monkeypatch.setattr(step_format, "find_all", listing_then_retention)
    with Checkpointer(live, read_only=True) as checkpointer:
        assert checkpointer.steps() == [20, 30]


def test_a_step_removed_between_orbaxs_exists_and_is_dir_is_not_a_traceback(live, monkeypatch):
    """orbax checks a step's metadata path with exists() then is_dir(): a step moved out
    in between is its NotADirectoryError (tools/faults.py's live eval met it)."""
    from orbax.checkpoint._src.metadata import checkpoint as metadata

    sanitize = metadata._sanitize_metadata_path

    def removed_in_between(path):
        if str(path).endswith("/10") and (live / "checkpoints" / "10").exists():
            _retention(live, 10)
            raise NotADirectoryError(f"Path is not a directory: {path}")
        return sanitize(path)

    monkeypatch.setattr(metadata, "_sanitize_metadata_path", removed_in_between)
    with Checkpointer(live, read_only=True) as checkpointer:
        assert checkpointer.steps() == [20, 30]


def test_retention_moves_a_step_out_at_once_then_deletes_it(tmp_path, monkeypatch):
    state = {"w": jax.numpy.ones(3)}
    with Checkpointer(tmp_path, max_to_keep=1) as checkpointer:
        checkpointer.save(1, state, {})
        monkeypatch.setattr(checkpoint_lib, "empty_removed", lambda directory: None)
        checkpointer.save(2, state, {})  # retention: step 1 leaves in one rename
        folder = tmp_path / "checkpoints"
        assert not (folder / "1").exists() and (folder / ".removed" / "1" / "state").is_dir()
        monkeypatch.undo()
        checkpointer.save(3, state, {})
    assert sorted(p.name for p in folder.iterdir()) == ["3"]


def test_retention_waits_for_a_reader_of_the_step_it_would_remove(live, monkeypatch):
    trainer = Checkpointer(live, max_to_keep=2)  # the run, saving while 10 is read
    restore = ocp.CheckpointManager.restore

    def a_save_meanwhile(manager, step, *args, **kwargs):
        trainer.save(40, {"w": jax.numpy.ones(3)}, {})  # 10, 20 out of the newest two
        return restore(manager, step, *args, **kwargs)

    monkeypatch.setattr(ocp.CheckpointManager, "restore", a_save_meanwhile)
    assert load_agent(live, step=10).iteration == 10  # held while read: not removed
    monkeypatch.undo()
    folder = live / "checkpoints"
    assert sorted(p.name for p in folder.iterdir()) == ["10", "30", "40"]
    trainer.save(50, {"w": jax.numpy.ones(3)}, {})  # read no more: retention takes it
    trainer.close()
    assert sorted(p.name for p in folder.iterdir()) == ["40", "50"]
