"""Faults round 4, bounds: a checkpoint step is hashed only up to what a checkpoint of its
run can hold (M2); ``--force`` deletes a large manifest listing each folder once (LOW)."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from typer.testing import CliRunner

from jaxzero.cli import app
from jaxzero.run.agents.agent import load_agent
from jaxzero.run.folder import manifest
from jaxzero.run.life.checkpoint import CheckpointError

runner = CliRunner()


def test_a_huge_file_in_a_checkpoint_is_refused_before_it_is_hashed(tiny_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(tiny_run, run)
    listed = run / "checkpoints" / "4" / "state" / "manifest.ocdbt"  # in its checksums
    with open(listed, "r+b") as file:
        file.truncate(1 << 30)  # a sparse gigabyte: no disk, a minute of hashing at 20 GB
    with pytest.raises(CheckpointError, match="checkpoint 4 .* more than the .* this run holds"):
        load_agent(run)
    result = runner.invoke(app, ["train", "--resume", "--out", str(run), "--iterations", "5"])
    assert result.exit_code == 2, result.output
    assert "more than the" in result.output and "this run holds" in result.output


def test_force_deletes_a_large_manifest_listing_each_folder_once(tmp_path, monkeypatch):
    run = tmp_path / "run"
    (run / "report").mkdir(parents=True)
    names = [f"report/figure_{k}.png" for k in range(3000)]
    for name in names[:10]:
        (run / name).write_text("made by jaxzero")
    (run / "report" / "mine.txt").write_text("the user's")
    data = {"format": 1, "jaxzero": "0", "files": names, "folders": ["report"], "checkpoints": []}
    (run / manifest.MANIFEST_FILE).write_text(json.dumps(data))
    listed = []
    listdir = os.listdir

    def counted(path):
        listed.append(path)
        return listdir(path)

    monkeypatch.setattr(manifest.os, "listdir", counted)
    manifest.remove_run_files(run)
    assert len(listed) < 20  # once a folder, not once an entry (a million took 2 min 44 s)
    assert sorted(p.name for p in (run / "report").iterdir()) == ["mine.txt"]
    assert not (run / manifest.MANIFEST_FILE).exists()
