"""A run is what jaxzero wrote: RUN/.jaxzero-run.json lists it, --force deletes exactly
that, and a config.json without the manifest is no run (issue 45, items 2 and 3)."""

from __future__ import annotations

import json
import shutil
import types
from pathlib import Path

import pytest
from helpers import error_line
from typer.testing import CliRunner

from jaxzero.cli import app
from jaxzero.core.presets import get_preset
from jaxzero.run.agents.agent import load_agent
from jaxzero.run.folder import manifest
from jaxzero.run.life.driver import RunDirError, prepare_run_dir
from jaxzero.run.life.members import write_population
from jaxzero.run.reports.report import write_report

runner = CliRunner()
USERS = {  # the files of the user's, inside a run's own folders
    "members/NOTES.txt": "which member was which\n",
    "members/1/my_analysis.py": "print('mine')\n",
    "checkpoints/README.txt": "do not delete\n",
    "report/my_figure_notes.md": "figure 2 is wrong\n",
}


def _snapshot(folder: Path) -> dict[str, bytes | str]:
    """Every path below ``folder``: a file's bytes, a link's target, a folder as '/'."""
    shot: dict[str, bytes | str] = {}
    for path in folder.rglob("*"):
        name = str(path.relative_to(folder))
        if path.is_symlink():
            shot[name] = f"-> {path.readlink()}"
        elif path.is_file():
            shot[name] = path.read_bytes()
        else:
            shot[name] = "/"
    return shot


@pytest.fixture(scope="module")
def finished(tmp_path_factory, ttt_config, train_run):
    """A 4-iteration tic-tac-toe run (checkpoints 2 and 4) with its report, never modified."""
    run = tmp_path_factory.mktemp("manifest") / "run"
    train_run(run, ttt_config, iterations=4)
    write_report(run)
    return run


def _copy(finished: Path, tmp_path: Path) -> Path:
    run = tmp_path / "run"
    shutil.copytree(finished, run, symlinks=True)
    return run


def _add_users_files(run: Path) -> None:
    for name, text in USERS.items():
        (run / name).parent.mkdir(parents=True, exist_ok=True)
        (run / name).write_text(text)


@pytest.mark.parametrize("config", ['{"seed": 42}', "{}"])
def test_force_refuses_a_config_json_without_our_manifest(tmp_path, config):
    (tmp_path / "config.json").write_text(config)
    (tmp_path / "checkpoints" / "epoch_10").mkdir(parents=True)
    (tmp_path / "checkpoints" / "epoch_10" / "model.pt").write_bytes(b"weights")
    (tmp_path / "report").mkdir()
    (tmp_path / "report" / "paper.md").write_text("# paper\n")
    before = _snapshot(tmp_path)
    args = ["train", "tic_tac_toe", "--force", "--out", str(tmp_path), "--iterations", "1"]
    line = error_line(runner.invoke(app, args))
    assert "is not a jaxzero run (its config.json lacks game" in line
    assert "checkpoints/, config.json, report/" in line and "nothing was changed" in line
    assert _snapshot(tmp_path) == before
    line = error_line(runner.invoke(app, args[:2] + args[3:]))  # nor without --force
    assert "is not a jaxzero run" in line and "already holds a run" not in line
    assert _snapshot(tmp_path) == before


def test_every_file_a_run_writes_is_in_its_manifest(finished):
    found = manifest.read_manifest(finished)
    assert found is not None
    data = json.loads((finished / manifest.MANIFEST_FILE).read_text())
    assert data["format"] == 1 and data["jaxzero"]
    steps = {s for s in found.checkpoints}
    assert steps == {"checkpoints/2", "checkpoints/4"}
    unlisted = [
        name
        for path in finished.rglob("*")
        if path.is_file()
        and (name := path.relative_to(finished).as_posix()) not in found.files
        and not any(name.startswith(f"{s}/") for s in steps)
    ]
    assert sorted(unlisted) == [manifest.MANIFEST_FILE, ".lock"]
    assert {"checkpoints", "tb", "report"} <= found.folders
    assert {"config.json", "metrics.jsonl", "report/summary.md"} <= found.files


def test_force_keeps_the_users_files_inside_a_run(tmp_path, finished, ttt_config):
    run = _copy(finished, tmp_path)
    population = types.SimpleNamespace(seeds=[0, 1], hyper={}, members=[ttt_config] * 2)
    write_population(run, population)  # members/K, as a population writes them
    _add_users_files(run)
    with pytest.raises(RunDirError, match="already holds a run"):
        prepare_run_dir(run, ttt_config, resume=False, force=False)
    prepare_run_dir(run, ttt_config, resume=False, force=True)
    left = _snapshot(run)
    for name, text in USERS.items():
        assert left.pop(name) == text.encode(), name
    assert left.pop("config.json") and left.pop(manifest.MANIFEST_FILE) and left.pop(".lock")
    # what remains: the folders holding the user's files, and the new run's checkpoints/
    assert left == {"members": "/", "members/1": "/", "checkpoints": "/", "report": "/"}
    fresh = manifest.read_manifest(run)
    assert fresh == manifest.Manifest(files=frozenset({"config.json"}))


@pytest.mark.parametrize("older", [False, True])
def test_a_report_that_links_elsewhere_is_refused_and_its_target_kept(
    tmp_path, finished, ttt_config, older
):
    run = _copy(finished, tmp_path)
    if older:
        (run / manifest.MANIFEST_FILE).unlink()
    outside = tmp_path / "outside"
    shutil.move(run / "report", outside)  # the same names jaxzero wrote, now someone's
    (run / "report").symlink_to(outside, target_is_directory=True)
    before = _snapshot(outside)
    with pytest.raises(RunDirError, match="report is a symbolic link"):
        prepare_run_dir(run, ttt_config, resume=False, force=True)
    assert _snapshot(outside) == before and (outside / "summary.md").is_file()
    assert (run / "metrics.jsonl").exists()  # refused before --force deleted a file
    assert (run / "report").is_symlink()  # jaxzero made no link: it stays


def test_an_older_run_resumes_loads_and_force_deletes_only_our_names(
    tmp_path, finished, ttt_config, train_run
):
    run = _copy(finished, tmp_path)
    (run / manifest.MANIFEST_FILE).unlink()  # as a jaxzero before the manifest left it
    result = train_run(run, resume=True, iterations=6)
    assert result.iterations == 6 and not (run / manifest.MANIFEST_FILE).exists()
    assert load_agent(run).iteration == 6
    _add_users_files(run)
    mine = {"checkpoints/epoch_10/model.pt": "w", "report/paper.md": "p", "tb/notes.txt": "t"}
    for name, text in mine.items():
        (run / name).parent.mkdir(parents=True, exist_ok=True)
        (run / name).write_text(text)
    prepare_run_dir(run, ttt_config, resume=False, force=True)
    left = {n for n, v in _snapshot(run).items() if v != "/"}
    assert left == {*USERS, *mine, "config.json", manifest.MANIFEST_FILE, ".lock"}
    assert not (run / "checkpoints" / "6").exists() and not (run / "metrics.jsonl").exists()


def test_a_manifest_naming_a_path_outside_the_run_is_refused(tmp_path, finished, ttt_config):
    run = _copy(finished, tmp_path)
    (tmp_path / "precious.txt").write_text("keep")
    data = json.loads((run / manifest.MANIFEST_FILE).read_text())
    data["files"].append("../precious.txt")
    (run / manifest.MANIFEST_FILE).write_text(json.dumps(data))
    before = _snapshot(tmp_path)
    with pytest.raises(RunDirError, match="not a path inside the run directory"):
        prepare_run_dir(run, ttt_config, resume=False, force=True)
    assert _snapshot(tmp_path) == before


def test_a_file_of_the_users_in_a_step_folder_stops_force_before_any_deletion(
    tmp_path, finished, ttt_config
):
    run = _copy(finished, tmp_path)
    (run / "checkpoints" / "4" / "notes.txt").write_text("mine")
    before = _snapshot(run)
    with pytest.raises(RunDirError, match=r"checkpoints/4 holds notes.txt, which jaxzero did"):
        prepare_run_dir(run, ttt_config, resume=False, force=True)
    assert _snapshot(run) == before


@pytest.mark.parametrize("config", ["{}", '{"seed": 42}'])
def test_resume_refuses_a_config_json_without_our_manifest(tmp_path, config):
    (tmp_path / "config.json").write_text(config)
    (tmp_path / "model.pt").write_text("weights")
    before = _snapshot(tmp_path)
    line = error_line(runner.invoke(app, ["train", "--resume", "--out", str(tmp_path)]))
    assert "is not a jaxzero run" in line
    with pytest.raises(RunDirError, match="is not a jaxzero run"):
        prepare_run_dir(tmp_path, None, resume=True, force=False)
    assert _snapshot(tmp_path) == before


def test_a_config_that_reads_as_ours_beside_a_metrics_row_is_still_not_a_run(tmp_path):
    """{"seed": 42} reads as a config (every key has a default) and many tools log an
    `iteration`: neither makes the folder an older jaxzero run for --force to empty."""
    (tmp_path / "config.json").write_text('{"seed": 42}')
    (tmp_path / "metrics.jsonl").write_text('{"iteration": 0, "loss": 1.0}\n')
    (tmp_path / "elo.json").write_text("{}")
    (tmp_path / "report").mkdir()
    (tmp_path / "report" / "summary.md").write_text("theirs")
    before = _snapshot(tmp_path)
    line = error_line(runner.invoke(app, ["train", "--force", "--out", str(tmp_path)]))
    assert "is not a jaxzero run" in line and "lacks game, search, train" in line
    assert _snapshot(tmp_path) == before


def test_a_new_run_never_writes_into_files_of_our_names_that_are_not_ours(tmp_path):
    (tmp_path / "metrics.jsonl").write_text('{"step": 5, "loss": 0.1}\n')  # someone's log
    before = _snapshot(tmp_path)
    with pytest.raises(RunDirError, match="holds metrics.jsonl but no jaxzero run"):
        prepare_run_dir(tmp_path, get_preset("tic_tac_toe"), resume=False, force=False)
    line = error_line(runner.invoke(app, ["train", "tic_tac_toe", "--out", str(tmp_path)]))
    assert "holds metrics.jsonl but no jaxzero run" in line
    assert _snapshot(tmp_path) == before


def test_a_manifest_nested_past_parsing_is_one_line(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / manifest.MANIFEST_FILE).write_text("[" * 200_000)
    line = error_line(runner.invoke(app, ["train", "--force", "--out", str(tmp_path)]))
    assert "is not a jaxzero run" in line


def test_an_elo_file_written_into_a_member_is_recorded_in_the_runs_manifest(tmp_path, monkeypatch):
    from jaxzero.run.reports import elo_files

    run = tmp_path / "run"
    prepare_run_dir(run, get_preset("tic_tac_toe"), resume=False, force=False)
    member = run / "members" / "0"
    manifest.make_folders(run, member)
    monkeypatch.setattr(elo_files, "elo_rows", lambda table, run_dir: [])
    one = types.SimpleNamespace(players=["m@2"], elo=[0.0], lower=[0.0], upper=[0.0],
                                games=[2], score=[0.5])  # fmt: skip
    table = types.SimpleNamespace(
        entrants=[types.SimpleNamespace(run_dir=member)], ratings=one, games=2
    )
    elo_files.write_elo_files(table)  # what `jaxzero eval RUN/members/0` writes
    assert "members/0/elo.json" in manifest.read_manifest(run).files
    manifest.remove_run_files(run)
    assert not (member / "elo.json").exists()
