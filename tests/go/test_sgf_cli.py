"""SGF through the command line: `jaxzero analyze go_6x6 --sgf FILE`, `jaxzero eval --sgf DIR`."""

import re

import pytest
from conftest import untrained_run
from helpers import error_line
from typer.testing import CliRunner

import envs
from jaxzero.cli import app
from jaxzero.go.sgf import read_sgf, to_state

runner = CliRunner()


# Black A6 and B5 set up, then White C4, Black D3, a White pass, Black E2; a variation
# (White F1) that is not on the main line.
RECORD = "(;GM[1]FF[4]SZ[6]KM[6.5]AB[aa][bb];W[cc];B[dd];W[](;B[ee])(;B[ff]))"


def test_analyze_searches_the_end_of_the_main_line(go_run, tmp_path):
    path = tmp_path / "game.sgf"
    path.write_text(RECORD)
    args = ["analyze", "go_6x6", "--sgf", str(path), "--checkpoint", str(go_run)]
    result = runner.invoke(app, [*args, "--simulations", "4"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[1:7] == [
        " 6 X . . . . . 6",
        " 5 . X . . . . 5",
        " 4 . . O . . . 4",
        " 3 . . . X . . 3",
        " 2 . . . . X . 2",
        " 1 . . . . . . 1",
    ]
    assert lines[8] == "White (O) to play" and lines[9].startswith("player 1 to move")
    assert "4 moves after 2 setup stones; komi 6.5 in the record, 3.5 in the search" in (
        result.output
    )
    header = lines.index(next(line for line in lines if line.startswith("move")))
    rows = lines[header + 1 : -1]
    assert len(rows) == 36 - 5 + 1  # every empty point and pass
    assert not {"A6", "B5", "C4", "D3", "E2"} & {r.split()[0] for r in rows}
    assert sum(int(r.split()[2]) for r in rows) == 4


@pytest.mark.parametrize(
    "game, text, extra, message",
    [
        ("tic_tac_toe", RECORD, [], "--sgf loads Go records; tic_tac_toe is not Go"),
        ("go_6x6", RECORD.replace("SZ[6]", "SZ[9]"), [], "is a 9x9 game; go_6x6 is played on 6x6"),
        ("go_6x6", "not a record", [], "not an SGF record: it must start with '(;'"),
        ("go_6x6", b"(;GM[1]SZ[6]C[\xff\xfe])", [], "cannot read"),
        ("go_6x6", None, [], "cannot read {path}: No such file or directory"),
        ("go_6x6", "(;GM[1]SZ[6];B[cc];W[cc])", [], "move 2 ('C4') is illegal here"),
        ("go_6x6", "(;GM[1]SZ[6];B[];W[])", [], "the game is over at the end of the record"),
        ("go_6x6", RECORD, ["--moves", "D4"], "give --moves or --sgf, not both"),
    ],
)
def test_analyze_sgf_mistakes_are_one_line_errors(
    tmp_path, monkeypatch, game, text, extra, message
):
    monkeypatch.chdir(tmp_path)  # no runs/GAME here: nothing is loaded before the record
    path = tmp_path / "game.sgf"
    if isinstance(text, bytes):
        path.write_bytes(text)
    elif text is not None:
        path.write_text(text)
    result = runner.invoke(app, ["analyze", game, "--sgf", str(path), *extra])
    assert message.format(path=path) in error_line(result)


def test_eval_writes_every_go_game_as_sgf(go_run, tmp_path):
    out = tmp_path / "games"
    args = ["eval", str(go_run), "--opponents", "random", "--games", "4", "--simulations", "2"]
    result = runner.invoke(app, [*args, "--sgf", str(out)])
    assert result.exit_code == 0, result.output
    assert f"4 games written to {out} as SGF" in result.output
    files = sorted(out.iterdir())
    assert [f.name for f in files] == [f"go_6x6@5_vs_random_00{i}.sgf" for i in (1, 2, 3, 4)]
    records = [read_sgf(f.read_text()) for f in files]
    # Games i and i + 2 share their random opening with the colours swapped.
    assert [(r.black, r.white) for r in records] == [("go_6x6@5", "random")] * 2 + [
        ("random", "go_6x6@5")
    ] * 2
    assert records[0].moves[:2] == records[2].moves[:2] != records[1].moves[:2]
    env = envs.make("go_6x6")
    agent_wins = 0
    for r in records:
        assert (r.size, r.komi) == (6, 3.5)
        assert re.fullmatch(r"[BW]\+\d+(\.5)?|Void", r.result), r.result
        assert bool(to_state(env, r).terminated) == (r.result != "Void")
        agent_wins += r.result.startswith("B+" if r.black == "go_6x6@5" else "W+")
    match = re.search(r"go_6x6@5 vs random: \+(\d+) =(\d+) -(\d+) of 4", result.output)
    assert match and int(match.group(1)) == agent_wins


def test_eval_sgf_is_for_go_only(tmp_path):
    run = untrained_run(tmp_path, "tic_tac_toe", {"network.hidden_size": 8}, random_network=False)
    result = runner.invoke(app, ["eval", str(run), "--sgf", str(tmp_path / "games")])
    assert "--sgf game records are written for Go only" in error_line(result)
    assert not (tmp_path / "games").exists()
