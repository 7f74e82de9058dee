"""Faults round 4, links: nothing jaxzero opens, writes or deletes below a folder it was given
goes through a symbolic link (jaxzero.run.folder.nolink); a link is refused in one line naming it,
and what it points at stays as it was."""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

import pytest
from conftest import TINY_ARGS
from helpers import error_line
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from jaxzero.cli import app
from jaxzero.core.config import apply_overrides
from jaxzero.run.folder import nolink
from jaxzero.run.folder.files import FileProblem
from jaxzero.run.life.checkpoint import Checkpointer, CheckpointError
from jaxzero.run.life.driver import RunDirError, lock_run_dir
from jaxzero.run.reports.report import write_report
from jaxzero.run.reports.rows import ReportError
from jaxzero.run.studies.comparison import MARK, Arm, write_comparison
from jaxzero.run.studies.study import make_study, write_study

runner = CliRunner()


def _outside(root: Path) -> Path:
    """A folder of the user's beside the run: a thesis, and photos."""
    outside = root / "outside"
    (outside / "photos" / "2019").mkdir(parents=True)
    (outside / "thesis.txt").write_text("four years of work\n")
    (outside / "photos" / "2019" / "a.jpg").write_bytes(b"\xff\xd8 a photo")
    return outside


def _snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every entry under ``folder``: a file's bytes, a folder as None."""
    found: dict[str, bytes | None] = {}
    for path in sorted(folder.rglob("*")):
        found[path.relative_to(folder).as_posix()] = None if path.is_dir() else path.read_bytes()
    return found


def _copy(tiny_run: Path, tmp_path: Path) -> Path:
    run = tmp_path / "run"
    shutil.copytree(tiny_run, run)
    return run


def _link(path: Path, target: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif os.path.lexists(path):
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target)


# --- H1: the lock ------------------------------------------------------------------------


@pytest.mark.parametrize("name", [".jaxzero-run.json", "config.json"])
def test_a_link_at_a_runs_own_file_is_named_as_a_link(tiny_run, tmp_path, name):
    outside = _outside(tmp_path)
    run = _copy(tiny_run, tmp_path)
    _link(run / name, outside / "thesis.txt")
    for how in (["--resume"], ["tic_tac_toe", *TINY_ARGS, "--force"]):
        args = ["train", *how, "--out", str(run), "--iterations", "5"]
        line = error_line(runner.invoke(app, args))
        assert f"{name} is a symbolic link" in line, (how, line)


@pytest.mark.parametrize("how", [["--resume"], ["tic_tac_toe", *TINY_ARGS, "--force"]])
def test_the_run_lock_never_truncates_what_a_link_points_at(tiny_run, tmp_path, how):
    outside = _outside(tmp_path)
    run = _copy(tiny_run, tmp_path)
    _link(run / ".lock", outside / "thesis.txt")
    line = error_line(runner.invoke(app, ["train", *how, "--out", str(run), "--iterations", "5"]))
    assert "error:" in line and ".lock is a symbolic link" in line
    assert (outside / "thesis.txt").read_text() == "four years of work\n"
    with pytest.raises(RunDirError, match="symbolic link"):
        lock_run_dir(run)


# --- H2: reports -------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["report/summary.md", "report/losses.png", "report"])
def test_a_report_writes_nothing_through_a_link(tiny_run, tmp_path, where):
    outside = _outside(tmp_path)
    run = _copy(tiny_run, tmp_path)
    target = outside / "photos" if where == "report" else outside / "thesis.txt"
    _link(run / where, target)
    before = _snapshot(outside)
    inside = _snapshot(run)
    line = error_line(runner.invoke(app, ["report", str(run)]))
    assert "is a symbolic link" in line
    assert _snapshot(outside) == before
    assert _snapshot(run) == inside  # refused before a figure was drawn: "nothing was written"


def test_a_comparison_writes_nothing_through_a_link(tiny_run, tmp_path):
    outside = _outside(tmp_path)
    out = tmp_path / "compared"
    out.mkdir()
    (out / MARK).write_text("written by jaxzero report\n")  # an earlier comparison's folder
    _link(out / "summary.md", outside / "thesis.txt")
    before = _snapshot(outside)
    arms = [Arm("a", (tiny_run,)), Arm("b", (tiny_run,))]
    with pytest.raises(ReportError, match="summary.md is a symbolic link"):
        write_comparison(out, arms, "Compared", [])
    _link(out, outside / "photos")  # the report folder itself, below the folder given
    with pytest.raises(ReportError, match="compared is a symbolic link"):
        write_comparison(out, arms, "Compared", [])
    assert _snapshot(outside) == before


# --- H3: a study's arms, a population's members ------------------------------------------


def test_a_study_arm_that_is_a_link_is_refused_and_its_target_kept(tiny_run, tmp_path, ttt_config):
    mine = _copy(tiny_run, tmp_path)  # the user's own run
    before = _snapshot(mine)
    shared = tmp_path / "shared"
    config = apply_overrides(ttt_config, {"search.kind": "puct"})
    write_study(shared, make_study(config, seeds=2, grid={"search.kind": ["puct", "gumbel"]}))
    _link(shared / "arms" / "kind-puct", Path("..") / ".." / "run")
    args = ["train", "tic_tac_toe", *TINY_ARGS, "--seeds", "2", "--grid", "search.kind=puct,gumbel"]
    line = error_line(runner.invoke(app, [*args, "--force", "--out", str(shared)]))
    assert "kind-puct is a symbolic link" in line
    assert _snapshot(mine) == before


def test_a_member_folder_that_is_a_link_is_refused_and_its_target_kept(tiny_run, tmp_path):
    mine = _copy(tiny_run, tmp_path)
    before = _snapshot(mine)
    population = tmp_path / "population"
    shutil.copytree(tiny_run, population)
    _link(population / "members" / "0", Path("..") / ".." / "run")
    args = ["train", "tic_tac_toe", *TINY_ARGS, "--seeds", "2", "--force", "--out", str(population)]
    line = error_line(runner.invoke(app, args))
    assert "members/0 is a symbolic link" in line
    assert _snapshot(mine) == before


# --- H4: checkpoints/ and tb/ ------------------------------------------------------------


@pytest.mark.parametrize("where", ["checkpoints", "tb", "checkpoints/4"])
def test_a_linked_folder_of_the_run_is_refused_before_anything_is_deleted(
    tiny_run, tmp_path, where
):
    outside = _outside(tmp_path)
    run = _copy(tiny_run, tmp_path)
    _link(run / where, outside / "photos")
    before, kept = _snapshot(outside), _snapshot(run)
    for how in (["tic_tac_toe", *TINY_ARGS, "--force"], ["--resume"]):
        args = ["train", *how, "--out", str(run), "--iterations", "5"]
        line = error_line(runner.invoke(app, args))
        assert f"{where} is a symbolic link" in line, how
    assert _snapshot(outside) == before
    assert _snapshot(run) == kept  # refused before --force deleted a file


def test_the_checkpointer_refuses_a_linked_checkpoints_folder(tmp_path):
    outside = _outside(tmp_path)
    run = tmp_path / "run"
    run.mkdir()
    _link(run / "checkpoints", outside / "photos")
    with pytest.raises(CheckpointError, match="checkpoints is a symbolic link"):
        Checkpointer(run)
    assert (outside / "photos" / "2019" / "a.jpg").exists()


# --- M1: a dangling link -----------------------------------------------------------------


@pytest.mark.parametrize("name", ["metrics.jsonl", "games.jsonl"])
def test_a_dangling_link_is_refused_and_its_target_never_made(tiny_run, tmp_path, name):
    outside = _outside(tmp_path)
    run = _copy(tiny_run, tmp_path)
    _link(run / name, outside / "made-by-jaxzero.txt")
    args = ["train", "--resume", "--out", str(run), "--iterations", "5"]
    line = error_line(runner.invoke(app, args))
    assert f"{name} is a symbolic link" in line
    assert not (outside / "made-by-jaxzero.txt").exists()
    with pytest.raises(nolink.LinkRefused):
        nolink.open_append(run, run / name)


# --- every path a run and a report write, any link -----------------------------------------


# What a run, its resume, --force and its report write (files and folders), the existing
# and the new alike.
WRITTEN = (
    ".lock", ".jaxzero-run.json", "config.json", "metrics.jsonl", "games.jsonl", "elo.json",
    "checkpoints", "checkpoints/2", "checkpoints/4", "checkpoints/4/state",
    "checkpoints/4/checksums.sha256", "checkpoints/.removed", "tb", "report",
    "report/summary.md", "report/losses.png", "report/game_1.svg",
)  # fmt: skip


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_a_link_anywhere_below_a_run_changes_nothing_outside(
    data, tiny_run, tmp_path_factory, train_run, ttt_config
):
    root = tmp_path_factory.mktemp("links")
    outside = _outside(root)
    run = _copy(tiny_run, root)
    events = [p.relative_to(run).as_posix() for p in (run / "tb").iterdir()]
    where = data.draw(st.sampled_from([*WRITTEN, *events]), label="where")
    target = data.draw(
        st.sampled_from(["thesis.txt", "photos", "photos/2019", "missing", "photos/missing.txt"]),
        label="target",
    )
    command = data.draw(st.sampled_from(["resume", "force", "report"]), label="command")
    _link(run / where, outside / target)
    before = _snapshot(outside)
    with contextlib.suppress(RunDirError, CheckpointError, FileProblem, ReportError, ValueError):
        if command == "resume":
            train_run(run, resume=True, iterations=5)
        elif command == "force":
            train_run(run, ttt_config, force=True, iterations=1)
        else:
            write_report(run)
    assert _snapshot(outside) == before, (where, target, command)
    assert not (outside / "missing").exists() and not (outside / "photos/missing.txt").exists()


STUDY_WRITTEN = (
    "study.json", "arms", "arms/kind-puct", "arms/kind-gumbel", "report", "report/summary.md",
    "report/.jaxzero-comparison", "report/policy_loss.png", "report/eval_raw_optimal.png",
)  # fmt: skip


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_a_link_anywhere_below_a_study_changes_nothing_outside(
    data, tiny_run, tmp_path_factory, ttt_config
):
    from jaxzero.run.studies.comparison import write_study_report
    from jaxzero.run.studies.study import open_study

    root = tmp_path_factory.mktemp("links")
    outside = _outside(root)
    study = make_study(ttt_config, seeds=1, grid={"search.kind": ["puct", "gumbel"]})
    shared = root / "shared"
    write_study(shared, study)
    for arm in study.arms:  # each arm a run of one seed, as the report reads it
        shutil.copytree(tiny_run, study.folder(shared, arm))
    (shared / "report").mkdir()
    (shared / "report" / MARK).write_text("written by jaxzero report\n")  # an earlier report's
    where = data.draw(st.sampled_from(STUDY_WRITTEN), label="where")
    target = data.draw(st.sampled_from(["thesis.txt", "photos", "missing"]), label="target")
    command = data.draw(st.sampled_from(["report", "rewrite"]), label="command")
    _link(shared / where, outside / target)
    before = _snapshot(outside)
    with contextlib.suppress(RunDirError, FileProblem, ReportError, ValueError):
        if command == "report":
            write_study_report(shared)
        else:
            open_study(shared, study, force=True)
    assert _snapshot(outside) == before, (where, target, command)
    assert not (outside / "missing").exists()


# --- the primitives ------------------------------------------------------------------------


def test_the_folder_given_may_be_a_link_but_nothing_below_it(tmp_path):
    outside = _outside(tmp_path)
    real = tmp_path / "real"
    real.mkdir()
    typed = tmp_path / "typed"
    typed.symlink_to(real)  # the user's own choice: followed
    nolink.write_atomic(typed, typed / "a" / "config.json", "{}")
    assert (real / "a" / "config.json").read_text() == "{}"
    assert nolink.make_folders(typed, typed / "b" / "c") == [typed / "b", typed / "b" / "c"]
    (real / "d").symlink_to(outside / "photos")
    for write in (
        lambda: nolink.write_atomic(typed, typed / "d" / "x.txt", "x"),
        lambda: nolink.make_folders(typed, typed / "d" / "e"),
        lambda: nolink.open_append(typed, typed / "d" / "x.txt"),
        lambda: nolink.check_writable(typed, typed / "d", "files"),
    ):
        with pytest.raises(nolink.LinkRefused, match="d is a symbolic link"):
            write()
    assert sorted(p.name for p in (outside / "photos").iterdir()) == ["2019"]


def test_a_write_that_fails_keeps_the_old_file_whole(tmp_path, monkeypatch):
    (tmp_path / "config.json").write_text("old")

    def full_disk(fd, name, flags):
        return os.open("/dev/full", os.O_WRONLY)

    monkeypatch.setattr(nolink, "_create", full_disk)
    with pytest.raises(OSError):
        nolink.write_atomic(tmp_path, tmp_path / "config.json", "new" * 10000)
    assert (tmp_path / "config.json").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.json"]
