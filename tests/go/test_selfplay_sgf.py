"""`jaxzero train --sgf DIR`: every finished self-play Go game lands on disk as SGF."""

import json

import pytest
from conftest import tiny_config

import envs
from jaxzero.go.records import SelfPlayRecorder
from jaxzero.go.sgf import read_sgf
from jaxzero.measure.positions import make_replayer


def _games_finished(run):
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    return round(sum(r["games_finished"] for r in rows if "games_finished" in r))


def test_train_writes_every_finished_go_game_and_resume_continues(tmp_path, train_run):
    config = tiny_config(
        "go_6x6", network__channels=4, selfplay__batch_size=4, selfplay__moves_per_iteration=40,
        replay__capacity=1024, replay__min_size=64, optim__updates_per_iteration=1,
        search__num_simulations=2, evaluation__simulations=2,
    )  # fmt: skip
    run, sgf = tmp_path / "run", tmp_path / "sgf"
    env = envs.make("go_6x6")
    replay = make_replayer(env)  # one compiled replay for both recorders
    train_run(run, config, iterations=4, hooks=[SelfPlayRecorder(env, sgf, replay=replay)])
    first = sorted(sgf.glob("selfplay_*.sgf"))
    # A fresh run records every game from its first move: one file per finished game.
    assert len(first) == _games_finished(run) > 0
    for path in first:
        record = read_sgf(path.read_text())
        assert record.size == 6 and record.komi == 3.5
        assert 0 < len(record.moves) <= 2 * 6 * 6
        assert record.result  # B+..., W+..., or Void at the move cap

    resumed = SelfPlayRecorder(env, sgf, replay=replay)
    train_run(run, None, iterations=6, resume=True, hooks=[resumed])
    after = sorted(sgf.glob("selfplay_*.sgf"))
    # Games under way at the resume are skipped (their first moves were not seen), so the
    # new files are at most the games finished since; numbering continues, nothing is
    # overwritten.
    assert after[: len(first)] == first
    assert [p.read_text() for p in first] == [p.read_text() for p in after[: len(first)]]
    assert len(after) - len(first) <= _games_finished(run) - len(first)
    assert after[-1].name == f"selfplay_{len(after):06d}.sgf"


def test_sgf_for_a_game_that_is_not_go_is_refused_before_training(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from jaxzero.cli import app

    with pytest.raises(ValueError, match="Go only"):
        SelfPlayRecorder(envs.make("tic_tac_toe"), tmp_path / "sgf")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["train", "tic_tac_toe", "--sgf", "sgf", "--iterations", "1"])
    assert (
        result.exit_code == 2 and "self-play SGF records are written for Go only" in result.output
    )
    assert not (tmp_path / "runs").exists()  # nothing created: the same command can be rerun
