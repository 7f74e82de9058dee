"""The GTP engine: protocol replies, errors that keep it running, full games against GNU Go."""

import io
import json
import shutil
import sys
from pathlib import Path

import jax
import pytest
from conftest import tiny_config
from gtp_referee import GNUGO_RULES, GtpClient, play_match

from jaxzero.core.config import config_to_dict
from jaxzero.core.loop import make_trainer
from jaxzero.go.gtp import GtpEngine
from jaxzero.run.agent import load_agent
from jaxzero.run.checkpoint import Checkpointer

GNUGO = shutil.which("gnugo") or shutil.which("gnugo", path="/usr/games")


@pytest.fixture(scope="module")
def go_run(tmp_path_factory) -> Path:
    """A run directory holding an (untrained) 6x6 agent's checkpoint."""
    config = tiny_config("go_6x6", evaluation__simulations=8)
    run = tmp_path_factory.mktemp("go") / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps(config_to_dict(config)))
    state = make_trainer(config).init(jax.random.key(0))
    with Checkpointer(run) as checkpointer:
        checkpointer.save(0, state, config_to_dict(config))
    return run


@pytest.fixture(scope="module")
def engine(go_run) -> GtpEngine:
    return GtpEngine(load_agent(go_run), num_simulations=4)


def _session(engine: GtpEngine, script: str) -> list[str]:
    out = io.StringIO()
    engine.serve(io.StringIO(script), out)
    return out.getvalue().split("\n\n")[:-1]


def test_protocol_replies_and_errors(engine):
    replies = _session(
        engine,
        "protocol_version\n7 name\nknown_command genmove\nknown_command dance\n"
        "boardsize 9\nboardsize six\nboardsize 6\nkomi 3.5\nkomi lots\n"
        "play black C3\nplay white C3\nplay white Z9\nplay purple D4\n"
        "# a comment line\n\nfrobnicate\nplay\nlist_commands\nundo\nundo\nundo\nquit\n",
    )
    assert replies[:4] == ["= 2", "=7 jaxzero", "= true", "= false"]
    assert replies[4:9] == [
        "? unacceptable size",
        "? boardsize not an integer",
        "=",
        "=",
        "? komi not a float",
    ]
    assert replies[9:13] == ["=", "? illegal move", "? invalid coordinate", "? invalid color"]
    assert replies[13:15] == ["? unknown command", "? syntax error: play needs 2 argument(s)"]
    assert "genmove" in replies[15] and "final_score" in replies[15]
    assert replies[16:19] == ["=", "? cannot undo", "? cannot undo"]
    assert replies[19] == "="


def test_out_of_turn_moves_pass_for_the_other_colour(engine):
    replies = _session(engine, "clear_board\nplay b C3\nplay b D4\nshowboard\nfinal_score\n")
    assert replies[:3] == ["=", "=", "="]
    rows = replies[3].split("\n")[2:8]  # "=", the column letters, then rows 6..1
    assert sum(row.count("X") for row in rows) == 2
    assert sum(row.count("O") for row in rows) == 0
    assert replies[4] == "= B+32.5"  # 36 points of area for Black, komi 3.5


def test_komi_changes_the_score(engine):
    replies = _session(engine, "clear_board\nkomi 0\nplay b C3\nfinal_score\nkomi 3.5\n")
    assert replies[3] == "= B+36"


def test_agent_moves_are_legal_vertices(engine):
    replies = _session(engine, "clear_board\ngenmove black\ngenmove white\n")
    for reply in replies[1:]:
        assert reply.startswith("= ")
        move = reply[2:]
        assert move in ("pass", "resign") or (move[0] in "ABCDEF" and move[1:] in "123456")


@pytest.mark.skipif(GNUGO is None, reason="needs gnugo: run `make system-deps`")
def test_full_games_against_gnugo(go_run):
    ours = [
        sys.executable,
        "-m",
        "jaxzero.cli",
        "gtp",
        "--checkpoint",
        str(go_run),
        "--simulations",
        "8",
        "--resign",
        "-2",
    ]
    gnugo = [GNUGO, "--mode", "gtp", "--boardsize", "6", "--komi", "3.5", "--level", "1"]
    gnugo += list(GNUGO_RULES)  # area scoring and positional superko, as ours
    agent, gnu = GtpClient(ours), GtpClient(gnugo)
    try:
        for ours_black in (True, False):  # one engine process each, both colours
            black, white = (agent, gnu) if ours_black else (gnu, agent)
            judge = "white" if ours_black else "black"  # GNU Go scores
            result = play_match(
                black, white, size=6, komi=3.5, max_moves=72, judge=judge, opening=["C3", "D4"]
            )
            assert result.moves[:2] == ["c3", "d4"]  # the opening, then the engines
            assert result.winner in ("black", "white")
            assert result.reason in ("score", "resign", "move cap")
            assert len(result.moves) >= 2
    finally:
        agent.close()
        gnu.close()


def test_undo_takes_back_the_pass_inserted_for_an_out_of_turn_move(engine):
    """`play w c3` on an empty board inserts a pass for Black; `undo` removes both, so
    Black is to move again on an empty board (issue 18, item 6)."""
    replies = _session(engine, "clear_board\nplay w c3\nundo\nplay b d4\ngenmove w\nundo\nquit\n")
    assert replies[:4] == ["=", "=", "=", "="]
    assert replies[4].startswith("= ") and replies[5] == "="
    assert len(engine.history) == 2 and int(engine.state.current_player) == 1  # after b d4


def test_komi_must_be_a_finite_number(engine):
    replies = _session(engine, "komi nan\nkomi inf\nkomi -inf\nkomi 3.5\nquit\n")
    assert replies[:3] == ["? komi must be a finite number"] * 3 and replies[3] == "="
