"""Faults and bad input around a run directory: one writer, one-line errors, nothing lost."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

from jaxzero.cli import app
from jaxzero.run.driver import RunDirError, load_run_config, lock_run_dir, prepare_run_dir

runner = CliRunner()
HOLD = (
    "import sys, time; from pathlib import Path; from jaxzero.run.driver import lock_run_dir;"
    "lock = lock_run_dir(Path(sys.argv[1])); print('locked', flush=True); time.sleep(600)"
)


def _error_line(result) -> str:
    assert result.exit_code == 2, result.output
    return [line for line in result.output.splitlines() if line.strip()][-1]


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
        line = _error_line(runner.invoke(app, ["train", "--resume", "--out", str(run)]))
        assert line.startswith("error:") and f"(pid {os.getpid()})" in line
        line = _error_line(
            runner.invoke(app, ["train", "tic_tac_toe", "--force", "--out", str(run)])
        )
        assert "being written by another jaxzero process" in line
    finally:
        held.close()
    assert (run / "config.json").exists()  # --force deleted nothing while the run was held


def test_resuming_under_another_game_is_refused(tmp_path, ttt_config):
    run = tmp_path / "run"
    prepare_run_dir(run, ttt_config, resume=False, force=False)
    line = _error_line(runner.invoke(app, ["train", "go_6x6", "--resume", "--out", str(run)]))
    assert "holds a tic_tac_toe run, not go_6x6: drop the game to resume it" in line


def test_a_truncated_config_is_named_in_one_line(tmp_path, ttt_config):
    run = tmp_path / "run"
    prepare_run_dir(run, ttt_config, resume=False, force=False)
    text = (run / "config.json").read_text()
    (run / "config.json").write_text(text[: len(text) // 2])
    with pytest.raises(RunDirError, match="config.json is not a readable config"):
        load_run_config(run)
    line = _error_line(runner.invoke(app, ["train", "--resume", "--out", str(run)]))
    assert str(run / "config.json") in line and "not a readable config" in line
    json.loads(text)  # the test's own copy was whole
