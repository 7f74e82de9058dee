"""The Weights & Biases hook (jaxzero.run.reports.wandb_hook), in wandb's offline mode: no
account, no network. What it logged is read back from the run's ``.wandb`` file."""

from __future__ import annotations

import json
import shutil
import struct
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import wandb  # jaxzero[wandb]; the dev extra (`make setup`) installs it
from conftest import TINY_ARGS

from jaxzero.run.reports.report import write_report
from jaxzero.run.reports.wandb_hook import WandbLogger, WandbProblem

BLOCK, HEADER, MAGIC = 32768, 7, b":W&B"  # a .wandb file: a LevelDB log after its header
FULL, LAST = 1, 4  # a record in one chunk, the last chunk of a record


def wandb_records(path: Path) -> list[Any]:
    """The protobuf records of a ``.wandb`` file (LevelDB's log format, 32 KiB blocks of
    chunks, each with a 7-byte header: checksum, length, kind), as wandb writes them."""
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    assert data[:4] == MAGIC
    position, pending, records = HEADER, b"", []
    while position + HEADER <= len(data):
        room = BLOCK - position % BLOCK
        _, length, kind = struct.unpack("<IHB", data[position : position + HEADER])
        if room < HEADER or (length, kind) == (0, 0):  # the block's zero padding
            position += room
            continue
        pending += data[position + HEADER : position + HEADER + length]
        position += HEADER + length
        if kind in (FULL, LAST):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            records.append(record)
            pending = b""
    return records


def logged(records: list[Any]) -> dict[str, Any]:
    """What a run's records hold: its config, history rows by step, the files it saved,
    and its exit code."""
    config, rows, files, exit_code = {}, {}, [], None
    for record in records:
        kind = record.WhichOneof("record_type")
        if kind == "run":
            config |= {item.key: json.loads(item.value_json) for item in record.run.config.update}
        elif kind == "history":
            row = {"/".join(i.nested_key): json.loads(i.value_json) for i in record.history.item}
            rows.setdefault(row.pop("_step"), {}).update(row)
        elif kind == "files":
            files += [item.path for item in record.files.files]
        elif kind == "exit":
            exit_code = record.exit.exit_code
    return {"config": config, "rows": rows, "files": files, "exit_code": exit_code}


@pytest.fixture
def offline(tmp_path, monkeypatch) -> Path:
    """wandb offline, its files in tmp_path/wandb_dir; returns that folder."""
    folder = tmp_path / "wandb_dir"
    folder.mkdir()
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(folder))
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_CONSOLE", "off")  # leaves pytest's capture of stdout alone
    return folder


def test_a_run_logs_its_config_every_row_and_the_report_figures_offline(
    tmp_path, offline, tiny_run, train_run
):
    run = shutil.copytree(tiny_run, tmp_path / "run")
    figures = sorted(p.name for p in write_report(run).glob("*.png"))
    tb_before = set((run / "tb").iterdir())
    train_run(run, resume=True, iterations=6, hooks=[WandbLogger(run, project="jaxzero-test")])
    wandb.teardown()  # its service writes the .wandb file; stopped, the file is complete

    (found,) = offline.glob("wandb/offline-run-*/run-*.wandb")
    log = logged(wandb_records(found))
    config = log["config"]
    assert (config["game"], config["search.num_simulations"]) == ("tic_tac_toe", 4)
    assert (config["train.log_every"], config["start_iteration"]) == (1, 4)
    assert config["run_dir"] == str(run)

    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    written = {int(row["iteration"]): row for row in rows if row["iteration"] > 4}
    assert sorted(log["rows"]) == sorted(written) == [5, 6]  # step = iteration
    for iteration, row in written.items():
        shown = log["rows"][iteration]
        assert {n: shown[n] for n in row if n != "iteration"} == {
            n: v for n, v in row.items() if n != "iteration"
        }

    images = {name.split("/")[1] for name in log["rows"][6] if name.startswith("report/")}
    assert figures and sorted(f"{name}.png" for name in images) == figures  # at the last step
    saved = [name.split("/")[-1] for name in log["files"] if name.startswith("media/images/")]
    assert sorted(name.rsplit("_", 2)[0] + ".png" for name in saved) == figures
    assert log["exit_code"] == 0
    assert set((run / "tb").iterdir()) > tb_before  # TensorBoard as before, beside it
    assert not (run / "wandb").exists()  # wandb's files stay in its own folder


class FakeRun:
    """What close() does with a wandb run: the rows it logs and how it finishes."""

    def __init__(self) -> None:
        self.logged: list[tuple[dict[str, Any], int]] = []
        self.exit_code: int | None = None

    def log(self, row: dict[str, Any], step: int) -> None:
        self.logged.append((row, step))

    def finish(self, exit_code: int) -> None:
        self.exit_code = exit_code


def test_close_uploads_the_reports_own_figures_and_fails_the_run_on_an_error(tmp_path):
    (tmp_path / "report").mkdir()
    (tmp_path / "report" / "losses.png").write_bytes(b"a figure")
    (tmp_path / "secret.png").write_bytes(b"not the report's")
    (tmp_path / "report" / "linked.png").symlink_to(tmp_path / "secret.png")
    hook = WandbLogger(tmp_path, project="p")
    hook._wandb = SimpleNamespace(Image=lambda path: path)
    hook._run, hook._step = FakeRun(), 7
    run = hook._run
    try:
        raise RuntimeError("the run failed")
    except RuntimeError:
        hook.close(None)
    assert run.logged == [({"report/losses": str(tmp_path / "report" / "losses.png")}, 7)]
    assert run.exit_code == 1 and hook._run is None


def test_without_the_extra_the_hook_says_how_to_install_it(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "wandb", None)  # `import wandb` raises ImportError
    with pytest.raises(WandbProblem) as error:
        WandbLogger(tmp_path, project="p")
    message = str(error.value)
    assert "jaxzero[wandb]" in message and "\n" not in message


def test_a_refused_start_is_one_line_saying_what_to_do(monkeypatch, tiny_run, offline):
    def refuse(**settings: Any) -> None:
        raise wandb.errors.UsageError("No API key configured.\nUse `wandb login` to log in.")

    monkeypatch.setattr(wandb, "init", refuse)
    hook = WandbLogger(tiny_run, project="p")
    said = "No API key configured. Use .* log in; run .* WANDB_MODE=offline"
    with pytest.raises(WandbProblem, match=said):
        hook.start(SimpleNamespace(iteration=4))
    missing = WandbLogger(tiny_run / "nowhere", project="p")
    with pytest.raises(WandbProblem, match="cannot read the run's config .*nowhere"):
        missing.start(SimpleNamespace(iteration=0))


def test_the_command_line_logs_with_wandb_and_says_when_the_extra_is_missing(
    tmp_path, offline, monkeypatch
):
    from typer.testing import CliRunner

    from jaxzero.cli import app

    tiny = [*TINY_ARGS, "evaluation.every=0"]
    args = ["train", "tic_tac_toe", *tiny, "--iterations", "1", "--wandb", "jz"]
    done = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "run")])
    assert done.exit_code == 0, done.output
    assert list(offline.glob("wandb/offline-run-*/*.wandb")), list(offline.rglob("*"))
    monkeypatch.setitem(sys.modules, "wandb", None)
    refused = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "other")])
    assert refused.exit_code == 2 and "jaxzero[wandb]" in refused.output, refused.output
    assert not (tmp_path / "other").exists()
