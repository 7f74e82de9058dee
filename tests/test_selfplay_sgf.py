"""`jaxzero train --sgf DIR`: every finished self-play Go game lands on disk as SGF."""

import json

import pytest

from jaxzero.core.config import apply_overrides, get_preset
from jaxzero.go.sgf import read_sgf
from jaxzero.run.driver import train

TINY_GO = {
    "network.num_blocks": 1,
    "network.channels": 4,
    "selfplay.batch_size": 4,
    "selfplay.moves_per_iteration": 40,
    "replay.capacity": 1024,
    "replay.min_size": 64,
    "optim.minibatch_size": 16,
    "optim.updates_per_iteration": 1,
    "search.num_simulations": 2,
    "search.eval_simulations": 2,
    "train.log_every": 1,
    "train.checkpoint_every": 2,
}


def _games_finished(run):
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    return round(sum(r["games_finished"] for r in rows if "games_finished" in r))


def test_train_writes_every_finished_go_game_and_resume_continues(tmp_path):
    config = apply_overrides(get_preset("go_6x6"), TINY_GO)
    run, sgf = tmp_path / "run", tmp_path / "sgf"
    train(run, config, iterations=4, sgf=sgf)
    first = sorted(sgf.glob("selfplay_*.sgf"))
    # A fresh run records every game from its first move: one file per finished game.
    assert len(first) == _games_finished(run) > 0
    for path in first:
        record = read_sgf(path.read_text())
        assert record.size == 6 and record.komi == 3.5
        assert 0 < len(record.moves) <= 2 * 6 * 6
        assert record.result  # B+..., W+..., or Void at the move cap

    train(run, None, iterations=6, resume=True, sgf=sgf)
    after = sorted(sgf.glob("selfplay_*.sgf"))
    # Games under way at the resume are skipped (their first moves were not seen), so the
    # new files are at most the games finished since; numbering continues, nothing is
    # overwritten.
    assert after[: len(first)] == first
    assert [p.read_text() for p in first] == [p.read_text() for p in after[: len(first)]]
    assert len(after) - len(first) <= _games_finished(run) - len(first)
    assert after[-1].name == f"selfplay_{len(after):06d}.sgf"


def test_sgf_for_a_game_that_is_not_go_is_refused_before_training(tmp_path):
    with pytest.raises(ValueError, match="Go only"):
        train(tmp_path / "run", get_preset("tic_tac_toe"), iterations=1, sgf=tmp_path / "sgf")
    assert not (tmp_path / "run").exists()  # nothing created: the same command can be rerun
