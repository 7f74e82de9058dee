"""`lz-analyze`, as Sabaki and Lizzie speak it: the reply opens with `=`, one line of
`info` entries follows, and the next command ends it with a blank line."""

from __future__ import annotations

import io
import re

import pytest

from envs.go import gtp_to_action
from jaxzero.go.gtp import COMMANDS, GtpEngine
from jaxzero.run.agents.agent import load_agent

SIMULATIONS = 8


@pytest.fixture(scope="module")
def engine() -> GtpEngine:
    return GtpEngine(load_agent("go_6x6"), num_simulations=SIMULATIONS)  # the shipped agent


class Typed:
    """stdin typed a line at a time: before each line after the first, what the engine
    had written so far is kept, as a controller would have read it by then."""

    def __init__(self, lines: list[str], out: io.StringIO):
        self.lines, self.out, self.seen = list(lines), out, []

    def readline(self, size: int = -1) -> str:
        self.seen.append(self.out.getvalue())
        return self.lines.pop(0) if self.lines else ""


def _analysis(line: str) -> list[dict[str, str]]:
    """An `info` line read as Sabaki reads it: entries split at `info`, each a run of
    key-value pairs whose `pv` takes the rest of the entry."""
    moves = []
    for entry in re.split(r"\s*info\s+", line)[1:]:
        head, pv = entry.split(" pv ")
        words = head.split()
        moves.append(dict(zip(words[::2], words[1::2], strict=True)) | {"pv": pv})
    return moves


def test_lz_analyze_stays_open_until_the_next_command_which_it_then_answers(engine):
    out = io.StringIO()
    stdin = Typed(["clear_board\n", "play b C3\n", "7 lz-analyze 50\n", "name\n"], out)
    engine.serve(stdin, out)
    # when `name` was sent, the analysis was written and its reply still open
    before_name = stdin.seen[3]
    assert before_name.endswith("\n") and not before_name.endswith("\n\n")
    replies = out.getvalue().split("\n\n")
    assert replies[:2] == ["=", "="] and replies[3:] == ["= jaxzero", ""]
    head, line = replies[2].split("\n")
    assert head == "=7" and line.startswith("info move ")
    moves = _analysis(line)
    assert [int(m["order"]) for m in moves] == list(range(len(moves)))
    assert sum(int(m["visits"]) for m in moves) == SIMULATIONS  # one root child each
    legal = engine.state.legal_action_mask
    for m in moves:
        assert bool(legal[gtp_to_action(m["move"], 6)]), m  # White's moves after b C3
        assert 0 <= int(m["winrate"]) <= 10000 and 0 <= int(m["prior"]) <= 10000
        assert m["pv"].split()[0] == m["move"]


def test_the_win_rate_is_the_analysed_colours(engine):
    # After b C3, the shipped agent thinks Black is ahead: for White to move, below
    # half; for Black to move (a pass inserted for White, nothing played), above.
    def top(colour: str) -> int:
        out = io.StringIO()
        engine.serve(io.StringIO(f"clear_board\nplay b C3\nlz-analyze {colour} 10\n"), out)
        line = out.getvalue().split("\n\n")[2].split("\n")[1]
        return int(_analysis(line)[0]["winrate"])

    assert top("w") < 5000 < top("b")
    assert len(engine.history) == 2  # the analysis played nothing


def test_lz_analyze_is_listed_and_its_bad_tags_and_a_finished_game_answered(engine):
    assert "lz-analyze" in COMMANDS
    out = io.StringIO()
    script = "lz-analyze dance\nplay b pass\nplay w pass\nlz-analyze b\nquit\n"
    engine.serve(io.StringIO("clear_board\nknown_command lz-analyze\n" + script), out)
    replies = out.getvalue().split("\n\n")
    assert replies[1] == "= true"
    assert replies[2] == "? cannot parse analyze tags: dance is not a colour or interval"
    assert replies[5:] == ["=", "=", ""]  # the game is over: an empty analysis, then quit
