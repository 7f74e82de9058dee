"""A komi the engine cannot score with is a GTP error, not an overflow in float32."""

import io

import pytest

from jaxzero.go.gtp import GtpEngine
from jaxzero.run.agents.agent import load_agent


@pytest.fixture(scope="module")
def engine() -> GtpEngine:
    return GtpEngine(load_agent("go_6x6"), num_simulations=2)  # the shipped 6x6 agent


def _session(engine: GtpEngine, script: str) -> list[str]:
    out = io.StringIO()
    engine.serve(io.StringIO(script), out)
    return out.getvalue().split("\n\n")[:-1]


def test_a_komi_beyond_the_board_is_refused_and_the_old_one_kept(engine):
    replies = _session(engine, "komi 5.5\nkomi 1e308\nkomi -1e39\nkomi 36.5\nfinal_score\n")
    assert replies[0] == "="
    assert replies[1:4] == ["? komi must be between -36 and 36 (the board's points)"] * 3
    assert engine.env.komi == 5.5 and replies[4] == "= W+5.5"  # an empty board


def test_a_komi_as_large_as_the_board_is_taken(engine):
    replies = _session(engine, "komi -36\nfinal_score\nkomi 36\nfinal_score\nkomi 3.5\n")
    assert replies == ["=", "= B+36", "=", "= W+36", "="]
