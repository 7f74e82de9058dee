"""A folder someone sent you can hold a FIFO, a device, a symlink to /dev/zero or a sparse
file of gigabytes where jaxzero expects its own files: every read refuses them in one line,
within seconds, never hanging or filling memory (issue 45, item 8)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from jaxzero.core import presets
from jaxzero.core.config import config_to_dict
from jaxzero.run.agents.agent import load_agent
from jaxzero.run.agents.agent_files import shipped_root
from jaxzero.run.folder import reads
from jaxzero.run.folder.files import FileProblem
from jaxzero.run.life.checkpoint import CheckpointError, damaged_file
from jaxzero.run.life.driver import RunDirError, load_run_config
from jaxzero.run.life.hooks import JsonlWriter
from jaxzero.run.life.members import read_population
from jaxzero.run.reports.rows import ReportError, read_metrics

ROW = b'{"iteration": 1, "total_loss": 0.5}\n'


def _agent(tmp_path: Path, name: str = "agent") -> Path:
    """A copy of the shipped tic-tac-toe agent, without its checksums (an agent exported
    before them still loads, so its files are read as they are)."""
    folder = tmp_path / name
    shutil.copytree(shipped_root() / "tic_tac_toe", folder)
    (folder / "checksums.sha256").unlink()
    return folder


def _jaxzero(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """The real CLI; a command that hangs fails the test at the timeout instead."""
    command = [sys.executable, "-m", "jaxzero.cli", *args]
    return subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
    )


def _one_error_line(done: subprocess.CompletedProcess, *needles: str) -> str:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, done.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def _replace(path: Path, kind: str) -> None:
    path.unlink(missing_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")


def test_play_refuses_a_config_json_linked_to_dev_zero(tmp_path):
    folder = _agent(tmp_path)
    _replace(folder / "config.json", "zero")
    done = _jaxzero("play", "--checkpoint", "agent", cwd=tmp_path)
    _one_error_line(done, "agent/config.json is a symlink to /dev/zero, outside agent")


def test_eval_refuses_a_config_json_that_is_a_fifo(tmp_path):
    run = tmp_path / "run"
    (run / "checkpoints" / "2").mkdir(parents=True)
    _replace(run / "config.json", "fifo")
    done = _jaxzero("eval", "run", cwd=tmp_path)
    _one_error_line(done, "run/config.json is a FIFO, not a regular file")


@pytest.mark.parametrize("kind", ["zero", "fifo"])
def test_report_refuses_a_metrics_file_that_never_ends(tmp_path, kind):
    run = tmp_path / "run"
    run.mkdir()
    _replace(run / "metrics.jsonl", kind)
    done = _jaxzero("report", "run", cwd=tmp_path)
    _one_error_line(done, "run/metrics.jsonl is a")


def test_load_agent_refuses_sparse_files_over_their_cap_before_reading_them(tmp_path):
    folder = _agent(tmp_path)
    os.truncate(folder / "params.msgpack", 1 << 30)  # sparse: a gigabyte of no disk
    with pytest.raises(CheckpointError, match="params.msgpack holds 1,073,741,824 bytes, more"):
        load_agent(folder)
    os.truncate(folder / "config.json", 1 << 30)
    with pytest.raises(CheckpointError, match="config.json holds 1,073,741,824 bytes, more"):
        load_agent(folder)


def test_a_run_config_is_read_only_inside_the_run(tmp_path):
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps(config_to_dict(presets.get_preset("tic_tac_toe"))))
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").symlink_to(elsewhere)
    with pytest.raises(RunDirError, match="is a symlink to .*elsewhere.json, outside"):
        load_run_config(run)
    (run / "config.json").unlink()
    (run / "kept.json").write_text(elsewhere.read_text())
    (run / "config.json").symlink_to("kept.json")  # a link inside the folder is followed
    assert load_run_config(run).game == "tic_tac_toe"


def test_population_json_is_read_only_inside_the_run(tmp_path):
    elsewhere = tmp_path / "population.json"
    elsewhere.write_text(json.dumps({"seeds": [0, 1], "hyper": {}}))
    run = tmp_path / "run"
    run.mkdir()
    (run / "population.json").symlink_to(elsewhere)
    with pytest.raises(ValueError, match="population.json is a symlink to .*, outside"):
        read_population(run)


def test_a_checkpoint_step_with_a_fifo_counts_as_damaged_before_orbax_opens_it(tmp_path):
    step = tmp_path / "checkpoints" / "4"
    (step / "state").mkdir(parents=True)
    (step / "state" / "data").write_bytes(b"x")
    (step / "checksums.sha256").write_text(
        f"{reads.sha256_inside(step / 'state' / 'data', step)}  state/data\n"
    )
    assert damaged_file(step) is None
    os.mkfifo(step / "state" / "_METADATA")  # listed nowhere: orbax would open it
    assert "state/_METADATA is a FIFO, not a regular file" in damaged_file(step)


def test_report_streams_metrics_and_skips_a_line_too_long_to_be_a_row(tmp_path):
    long_row = json.dumps({"iteration": 2, **{f"m{i}": 0.0 for i in range(200_000)}})
    assert len(long_row) > reads.LINE
    (tmp_path / "metrics.jsonl").write_bytes(ROW + long_row.encode() + b"\n" + ROW)
    rows, skipped = read_metrics(tmp_path)
    assert [row["iteration"] for row in rows] == [1, 1] and skipped == [2]


def test_report_refuses_a_sparse_metrics_file_over_its_cap(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_bytes(ROW)
    os.truncate(path, reads.METRICS + 1)
    with pytest.raises(ReportError, match="metrics.jsonl holds 536,870,913 bytes, more than"):
        read_metrics(tmp_path)


def test_a_resumed_run_reads_no_metrics_file_outside_its_folder(tmp_path):
    elsewhere = tmp_path / "elsewhere.jsonl"
    elsewhere.write_bytes(ROW * 3)
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.jsonl").symlink_to(elsewhere)
    with pytest.raises(FileProblem, match="metrics.jsonl is a symlink to .*, outside"):
        JsonlWriter(run / "metrics.jsonl").start(type("State", (), {"iteration": 0})())
    assert elsewhere.read_bytes() == ROW * 3


def test_a_fifo_is_refused_without_blocking_and_nothing_else_is_read(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(reads.FileRefused, match="pipe is a FIFO, not a regular file"):
        reads.read_text(tmp_path / "pipe", tmp_path)
    (tmp_path / "sub").mkdir()
    with pytest.raises(reads.FileRefused, match="sub is a folder, not a regular file"):
        reads.read_text(tmp_path / "sub", tmp_path)
    (tmp_path / "small").write_bytes(b"12345")
    assert reads.read_bytes(tmp_path / "small", tmp_path, 5) == b"12345"
    with pytest.raises(reads.FileRefused, match="holds 5 bytes, more than the 4 it may hold"):
        reads.read_bytes(tmp_path / "small", tmp_path, 4)


def test_a_fifo_at_the_top_of_a_checkpoint_step_is_refused_before_orbax_lists_it(tmp_path):
    """orbax opens each step's _CHECKPOINT_METADATA as it lists the steps: a FIFO there
    hung every load. A child process, so that a hang fails the test instead of the suite."""
    step = tmp_path / "run" / "checkpoints" / "4"
    step.mkdir(parents=True)
    os.mkfifo(step / "_CHECKPOINT_METADATA")
    code = (
        "import sys\nfrom jaxzero.run.life.checkpoint import Checkpointer, CheckpointError\n"
        f"try:\n    Checkpointer({str(tmp_path / 'run')!r}, read_only=True)\n"
        "except CheckpointError as error:\n    print(error)\n    sys.exit(2)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr[-500:]
    assert "checkpoint 4" in done.stdout and "_CHECKPOINT_METADATA is a FIFO" in done.stdout


def test_a_malformed_divergence_record_is_no_record(tmp_path):
    from jaxzero.run.life.members import read_diverged

    good = {"member": 1, "seed": 1, "iteration": 3, "hyper": {"optim.learning_rate": 1.0}}
    bad = [good | {"hyper": [1]}, good | {"iteration": "x"}, good | {"member": True}, 7]
    (tmp_path / "population.json").write_text(
        json.dumps({"seeds": [0, 1], "hyper": {}, "diverged": [good, *bad]})
    )
    assert read_diverged(tmp_path) == {1: good}


def test_a_checksummed_file_is_capped_before_it_is_hashed(tmp_path):
    folder = tmp_path / "agent"
    shutil.copytree(shipped_root() / "tic_tac_toe", folder)  # its checksums kept
    os.truncate(folder / "agent.json", 1 << 40)  # sparse: a terabyte to hash, before
    with pytest.raises(CheckpointError, match="agent.json holds 1,099,511,627,776 bytes, more"):
        load_agent(folder)
