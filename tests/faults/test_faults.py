"""Faults and bad input around a run directory: one writer, one-line errors, nothing lost."""

import dataclasses
import errno
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
import types

import numpy as np
import orbax.checkpoint as ocp
import pytest
from helpers import error_line
from typer.testing import CliRunner

from jaxzero.cli import app
from jaxzero.run.agents.agent import load_agent
from jaxzero.run.folder import nolink
from jaxzero.run.folder.files import FileProblem, os_reason
from jaxzero.run.life import driver
from jaxzero.run.life import hooks as hooks_lib
from jaxzero.run.life.checkpoint import CheckpointError
from jaxzero.run.life.driver import RunDirError, load_run_config, lock_run_dir, prepare_run_dir
from jaxzero.run.reports import elo_files

runner = CliRunner()
HOLD = (
    "import sys, time; from pathlib import Path; from jaxzero.run.life.driver import lock_run_dir;"
    "lock = lock_run_dir(Path(sys.argv[1])); print('locked', flush=True); time.sleep(600)"
)


def test_a_second_writer_is_refused_naming_the_holder(tmp_path, ttt_config):
    run = tmp_path / "run"
    held = lock_run_dir(run)
    with pytest.raises(
        RunDirError, match=f"being written by another jaxzero process .pid {os.getpid()}"
    ):
        lock_run_dir(run)
    held.close()
    lock_run_dir(run).close()  # released: free again


def test_a_killed_writer_leaves_no_lock_behind(tmp_path):
    run = tmp_path / "run"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(run)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(RunDirError, match=f"pid {holder.pid}"):
            lock_run_dir(run)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    deadline = time.monotonic() + 10
    while True:  # the OS releases the lock of a dead process
        try:
            lock_run_dir(run).close()
            break
        except RunDirError:
            assert time.monotonic() < deadline
            time.sleep(0.1)


def test_train_refuses_a_run_directory_another_process_writes(tmp_path, ttt_config, monkeypatch):
    run = tmp_path / "run"
    prepare_run_dir(run, ttt_config, resume=False, force=False)
    held = lock_run_dir(run)
    try:
        line = error_line(runner.invoke(app, ["train", "--resume", "--out", str(run)]))
        assert line.startswith("error:") and f"(pid {os.getpid()})" in line
        line = error_line(
            runner.invoke(app, ["train", "tic_tac_toe", "--force", "--out", str(run)])
        )
        assert "being written by another jaxzero process" in line
    finally:
        held.close()
    assert (run / "config.json").exists()  # --force deleted nothing while the run was held


def test_resuming_under_another_game_is_refused(tmp_path, ttt_config):
    run = tmp_path / "run"
    prepare_run_dir(run, ttt_config, resume=False, force=False)
    line = error_line(runner.invoke(app, ["train", "go_6x6", "--resume", "--out", str(run)]))
    assert "holds a tic_tac_toe run, not go_6x6: drop the game to resume it" in line


def test_a_truncated_config_is_named_in_one_line(tmp_path, ttt_config):
    run = tmp_path / "run"
    prepare_run_dir(run, ttt_config, resume=False, force=False)
    text = (run / "config.json").read_text()
    (run / "config.json").write_text(text[: len(text) // 2])
    with pytest.raises(RunDirError, match="config.json is not a readable config"):
        load_run_config(run)
    line = error_line(runner.invoke(app, ["train", "--resume", "--out", str(run)]))
    assert str(run / "config.json") in line and "not a readable config" in line
    json.loads(text)  # the test's own copy was whole


# --- checkpoints: unwritable, failing mid-run, damaged ---------------------------------


@pytest.fixture
def straight(tiny_run):
    """The session's 4-iteration tic-tac-toe run (checkpoints 2 and 4), never modified."""
    return tiny_run


def _copy(straight, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(straight, run)
    return run


def _rows(run):
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    volatile = ("elapsed", "positions_per_second")
    return [{k: v for k, v in row.items() if k not in volatile} for row in rows]


def test_a_file_in_place_of_the_checkpoint_folder_fails_at_once(tmp_path, straight):
    run = _copy(straight, tmp_path)
    shutil.rmtree(run / "checkpoints")
    (run / "checkpoints").write_text("not a folder")
    begin = time.monotonic()
    line = error_line(runner.invoke(app, ["train", "--resume", "--out", str(run)]))
    assert "cannot write checkpoints" in line and "move that file away" in line
    assert time.monotonic() - begin < 60  # it used to hang after 800 lines of tracebacks
    assert (run / "checkpoints").read_text() == "not a folder"


def test_a_save_that_fails_stops_training_with_the_previous_checkpoint_intact(
    tmp_path, straight, train_run, monkeypatch
):
    run = _copy(straight, tmp_path)
    real_save = ocp.CheckpointManager.save

    def full_disk(manager, step, *args, **kwargs):
        if step == 6:
            (manager.directory / f"{step}.orbax-checkpoint-tmp-9").mkdir()  # a half-written save
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_save(manager, step, *args, **kwargs)

    monkeypatch.setattr(ocp.CheckpointManager, "save", full_disk)
    with pytest.raises(CheckpointError, match="No space left on device; the disk is full") as e:
        train_run(run, resume=True, iterations=10)
    assert "checkpoint 4 is intact" in str(e.value)
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["2", "4"]
    assert _rows(run)[-1]["iteration"] == 6  # stopped at once, not at 10
    monkeypatch.setattr(ocp.CheckpointManager, "save", real_save)
    assert train_run(run, resume=True, iterations=6).iterations == 6  # from 4, once fixed
    assert [r["iteration"] for r in _rows(run)] == [1, 2, 3, 4, 5, 6]


def _flip_a_byte_of_the_weights(run, step):
    data = run / "checkpoints" / str(step) / "state"
    biggest = max((p for p in data.rglob("*") if p.is_file()), key=lambda p: p.stat().st_size)
    raw = bytearray(biggest.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    biggest.write_bytes(bytes(raw))


def test_damaged_weights_are_refused_by_every_command(tmp_path, straight, train_run):
    run = _copy(straight, tmp_path)
    _flip_a_byte_of_the_weights(run, 4)
    for command in (
        ["analyze", "tic_tac_toe", "--checkpoint", str(run)],
        ["play", "--checkpoint", str(run)],
        ["eval", str(run / "checkpoints" / "4"), "--games", "2", "--opponents", "random"],
        ["train", "--resume", "--out", str(run)],
    ):
        line = error_line(runner.invoke(app, command, input="5\n"))
        assert "checkpoint 4 in" in line and "is damaged" in line, command
        assert "checkpoint 2 is intact" in line, command
    with pytest.raises(CheckpointError, match="is damaged"):
        load_agent(run)
    assert load_agent(run / "checkpoints" / "2").iteration == 2  # the fallback named


# --- metrics.jsonl equals an uninterrupted run's -----------------------------------------


def test_rows_after_the_restored_checkpoint_are_dropped_on_resume(
    tmp_path, straight, train_run, caplog
):
    run = _copy(straight, tmp_path)
    # killed after writing iteration 4's row but before its checkpoint, mid-way through a row
    shutil.rmtree(run / "checkpoints" / "4")
    with open(run / "metrics.jsonl", "a") as file:
        file.write('{"iteration": 5, "policy_lo')
    with caplog.at_level(logging.WARNING, logger="absl"):
        assert train_run(run, resume=True, iterations=4).iterations == 4
    assert _rows(run) == _rows(straight)
    assert "Metadata file does not exist" not in caplog.text  # resuming warns of nothing


def test_a_config_that_no_longer_matches_its_checkpoint_is_named(tmp_path, straight, monkeypatch):
    run = _copy(straight, tmp_path)
    config = json.loads((run / "config.json").read_text())
    config["network"]["hidden_size"] *= 2  # edited by hand after training
    (run / "config.json").write_text(json.dumps(config))
    monkeypatch.chdir(tmp_path)  # a relative --out, as users type it
    line = error_line(runner.invoke(app, ["train", "--resume", "--out", "run"]))
    assert "was written under another config" in line and "saved," in line
    assert "compare the run's config.json with" in line and "TensorStore" not in line


def test_sigterm_during_the_hooks_keeps_the_row_of_its_iteration(
    tmp_path, ttt_config, train_run, monkeypatch
):
    row_of = hooks_lib.MetricsRow.__call__

    def terminated_while_logging(hook, step):
        row_of(hook, step)
        if step.iteration == 2:
            os.kill(os.getpid(), signal.SIGTERM)  # arrives before the row is written

    monkeypatch.setattr(hooks_lib.MetricsRow, "__call__", terminated_while_logging)
    run = tmp_path / "run"
    result = train_run(run, ttt_config, iterations=10)
    assert result.interrupted and result.iterations == 2
    assert [r["iteration"] for r in _rows(run)] == [1, 2]
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["2"]


class _FakeClock(hooks_lib.Clock):
    now: float = 0.0

    def elapsed(self) -> float:
        return self.now


@dataclasses.dataclass
class _SlowEvaluation:
    clock: _FakeClock
    seconds: float
    calls: int = 0

    def __call__(self, params, key):
        self.calls += 1
        self.clock.now += self.seconds
        return {}

    def metrics(self, results):
        return {"eval/vs_random": 1.0}


def test_an_evaluation_that_would_overrun_the_time_budget_is_skipped():
    clock = _FakeClock(deadline=10.0)
    evaluation = _SlowEvaluation(clock, seconds=3.0)
    hook = hooks_lib.EvaluationHook(evaluation, every=1, seed=0)
    state = types.SimpleNamespace(best_params=np.zeros(3))
    ran = []
    for iteration in (1, 2, 3, 4):
        clock.now += 1.0  # the iteration itself
        before = evaluation.calls
        hook(hooks_lib.Step(iteration, state, {}, {}, clock))
        ran.append(evaluation.calls > before)
    # evaluations end at 4 s and 8 s; at 9 s another 3 s would end past the 10 s budget
    assert ran == [True, True, False, False]


# --- files a run writes or reads ---------------------------------------------------------


def test_a_new_run_that_cannot_be_written_leaves_nothing_behind(
    tmp_path, ttt_config, train_run, monkeypatch
):
    write = nolink.write_atomic

    def full_disk(root, path, data, **options):  # the manifest fits, config.json does not
        if path.name == "config.json":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        write(root, path, data, **options)

    monkeypatch.setattr(nolink, "write_atomic", full_disk)
    with pytest.raises(RunDirError, match="No space left on device .*config.json.*disk is full"):
        train_run(tmp_path / "run", ttt_config, iterations=2)
    assert not (tmp_path / "run").exists()


def test_losing_the_race_for_a_new_run_directory_deletes_nothing(
    tmp_path, ttt_config, train_run, monkeypatch
):
    run = tmp_path / "run"

    def another_process_got_there_first(run_dir):
        run_dir.mkdir()
        (run_dir / "config.json").write_text("{}")  # the winner's files
        raise RunDirError(f"{run_dir} is being written by another jaxzero process (pid 1)")

    monkeypatch.setattr(driver, "lock_run_dir", another_process_got_there_first)
    with pytest.raises(RunDirError, match="another jaxzero process"):
        train_run(run, ttt_config, iterations=2)
    assert (run / "config.json").read_text() == "{}"


def test_read_only_run_directories_are_named_in_one_line(tmp_path, straight, monkeypatch):
    run = _copy(straight, tmp_path)

    def read_only(root, folder, what):
        raise FileProblem(
            f"cannot write {what} in {folder}: {os_reason(OSError(errno.EROFS, 'x'))}"
        )

    monkeypatch.setattr(nolink, "check_writable", read_only)
    for command in (["train", "--resume", "--out", str(run)], ["report", str(run)]):
        line = error_line(runner.invoke(app, command))
        assert "Read-only file system; the file system is read-only" in line, command
    eval_ = ["eval", str(run), "--games", "2", "--opponents", "random"]
    line = error_line(runner.invoke(app, eval_))
    assert "cannot write the ratings (elo.json)" in line  # before playing, not after


def test_a_full_disk_while_logging_is_one_line(tmp_path, straight, monkeypatch):
    run = _copy(straight, tmp_path)
    writer = hooks_lib.JsonlWriter(run / "metrics.jsonl")
    writer._file = open("/dev/full", "w")  # noqa: SIM115 (every write: ENOSPC)
    step = hooks_lib.Step(5, None, {}, {}, hooks_lib.Clock(), row={"iteration": 5})
    with pytest.raises(FileProblem, match="No space left on device"):
        writer(step)
    writer.close(step)  # nothing left to flush: no second error on the way out


def test_eval_keeps_the_previous_ratings_when_the_new_cannot_be_written(tmp_path, monkeypatch):
    run = tmp_path / "run"
    run.mkdir()
    (run / "elo.json").write_text('{"rows": []}')
    table = types.SimpleNamespace(
        entrants=[types.SimpleNamespace(run_dir=run, name="a", iteration=1, fixed=False)],
        ratings=types.SimpleNamespace(
            players=["a"], elo=[0.0], lower=[-1.0], upper=[1.0], games=[2], score=[0.5]
        ),
        games=2,
    )

    def full_disk(fd, name, flags):  # every write: ENOSPC
        return os.open("/dev/full", os.O_WRONLY)

    monkeypatch.setattr(nolink, "_create", full_disk)
    with pytest.raises(OSError):
        elo_files.write_elo_files(table)
    monkeypatch.undo()
    assert (run / "elo.json").read_text() == '{"rows": []}'
    assert sorted(p.name for p in run.iterdir()) == ["elo.json"]


def test_report_skips_unreadable_rows_and_names_them(tmp_path, straight):
    run = _copy(straight, tmp_path)
    with open(run / "metrics.jsonl", "ab") as file:
        file.write(b'{"iteration": 5, "value_loss": 0.5}\n\xff\xfe garbage\n{"iteration": 6, "va')
    result = runner.invoke(app, ["report", str(run)])
    assert result.exit_code == 0, result.output
    summary = (run / "report" / "summary.md").read_text()
    assert "2 unreadable lines of metrics.jsonl skipped: 6, 7." in summary
    assert "last at iteration 5" in summary
