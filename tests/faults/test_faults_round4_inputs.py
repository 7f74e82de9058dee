"""Faults round 4 (issue 56), what users hand jaxzero: an SGF file that is a FIFO or huge,
bad lines in games.jsonl, a huge games.jsonl, huge board requests, a board's Host, a huge
GTP line. Each failed on the code before its fix."""

from __future__ import annotations

import io
import json
import os
import shutil
import threading
import tracemalloc
from pathlib import Path
from types import SimpleNamespace

import pytest
from helpers import error_line
from starlette.testclient import TestClient
from typer.testing import CliRunner

from jaxzero.board import hosts
from jaxzero.board.server import make_app
from jaxzero.board.session import Session
from jaxzero.cli import app
from jaxzero.run.agents.agent import load_agent
from jaxzero.run.folder.layout import GAMES_FILE
from jaxzero.run.life import game_records
from jaxzero.run.life.game_records import read_games
from jaxzero.run.reports.report import write_report

runner = CliRunner()

GOOD = {"iteration": 3, "kind": "self-play", "players": ["jaxzero"] * 2, "moves": [4, 0]}
BAD_GAMES = [
    GOOD | {"returns": []},  # max() of nothing
    GOOD | {"kind": "eval vs random", "players": ["jaxzero"], "returns": [-1, 1]},  # short
    GOOD | {"iteration": 1e400, "returns": [1, -1]},  # inf: int() overflows
    GOOD | {"iteration": "3", "returns": [1, -1]},
    GOOD | {"iteration": True, "returns": [1, -1]},
    GOOD | {"iteration": 2.5, "returns": [1, -1]},
    GOOD | {"iteration": -1, "returns": [1, -1]},
    GOOD | {"moves": "40", "returns": [1, -1]},  # a string: its characters
    GOOD | {"moves": [4.5], "returns": [1, -1]},
    GOOD | {"moves": [True], "returns": [1, -1]},
    GOOD | {"moves": [-1], "returns": [1, -1]},
    GOOD | {"players": "ab", "returns": [1, -1]},
    GOOD | {"players": [1, 2], "returns": [1, -1]},
    GOOD | {"kind": 5, "returns": [1, -1]},
    GOOD | {"kind": "x" * 5000, "returns": [1, -1]},
    GOOD | {"returns": ["1", "-1"]},
    GOOD | {"returns": [True, False]},
    GOOD | {"returns": [1e400, 0]},
    [GOOD | {"returns": [1, -1]}],
]


def _write_games(path: Path, rows: list) -> None:
    text = "\n".join(json.dumps(row) for row in rows)
    path.write_text(text.replace("Infinity", "1e400") + "\n")


def test_read_games_skips_every_line_that_is_not_a_whole_game(tmp_path):
    good = GOOD | {"returns": [1, -1], "iteration": 4}
    _write_games(tmp_path / GAMES_FILE, [*BAD_GAMES, good, '{"cut": '])
    games = read_games(tmp_path, num_actions=9)
    assert [(g.iteration, g.moves, g.returns) for g in games] == [(4, (4, 0), (1.0, -1.0))]
    assert games[0].label == "self-play, iteration 4: 2 moves, player 0 won"


@pytest.fixture(scope="module")
def bad_run(tiny_run, tmp_path_factory) -> Path:
    """The tiny run with every bad line appended to its games."""
    run = tmp_path_factory.mktemp("bad") / "run"
    shutil.copytree(tiny_run, run)
    with (run / GAMES_FILE).open("a") as file:
        for row in BAD_GAMES:
            file.write(json.dumps(row).replace("Infinity", "1e400") + "\n")
    return run


def test_report_and_board_skip_bad_game_lines(bad_run):
    summary = (write_report(bad_run) / "summary.md").read_text()
    assert "![self-play, iteration" in summary
    agent = load_agent(bad_run)
    games = read_games(bad_run, agent.env.num_actions)
    client = TestClient(make_app(Session(agent, simulations=2, games=games)), "http://127.0.0.1")
    client.headers["X-Board-Tab"] = client.post("/api/open").json()["tab"]
    labels = client.get("/api/games")
    assert labels.status_code == 200 and len(labels.json()) == len(games) > 0


def test_read_games_keeps_the_newest_games_in_bounded_memory(tmp_path, monkeypatch):
    """A huge games.jsonl is read a line at a time and only the newest games it can keep
    in about ``GAMES_MEMORY`` bytes are kept (the file here is ~4 MB: 20 times that)."""
    monkeypatch.setattr(game_records, "GAMES_MEMORY", 200_000, raising=False)
    row = {"kind": "self-play", "players": ["jaxzero"] * 2, "returns": [1, -1]}
    lines = [json.dumps(row | {"iteration": i, "moves": [i % 9] * 200}) for i in range(5000)]
    (tmp_path / GAMES_FILE).write_text("\n".join(reversed(lines)) + "\n")  # newest first
    tracemalloc.start()
    try:
        games = read_games(tmp_path, num_actions=9)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000, peak
    iterations = [game.iteration for game in games]
    assert 10 < len(games) < 5000 and iterations == list(range(5000 - len(games), 5000))


def test_read_games_gives_all_of_a_normal_file_in_order(tmp_path):
    row = {"kind": "self-play", "players": ["jaxzero"] * 2, "returns": [0, 0]}
    order = [3, 1, 2, 1, 5]
    lines = [row | {"iteration": it, "moves": [k]} for k, it in enumerate(order)]
    _write_games(tmp_path / GAMES_FILE, lines)
    games = read_games(tmp_path, num_actions=9)
    assert [(g.iteration, g.moves[0]) for g in games] == [(1, 1), (1, 3), (2, 2), (3, 0), (5, 4)]


# -- jaxzero analyze --sgf ----------------------------------------------------------------


def test_analyze_refuses_an_sgf_fifo_without_waiting_on_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    fifo = tmp_path / "game.sgf"
    os.mkfifo(fifo)
    results = []
    command = threading.Thread(
        target=lambda: results.append(runner.invoke(app, ["analyze", "go_6x6", "--sgf", str(fifo)]))
    )
    command.start()
    command.join(60)
    hung = command.is_alive()
    if hung:  # the old code waits for a writer: be one, so that the thread ends
        os.close(os.open(fifo, os.O_WRONLY))
        command.join(60)
    assert not hung, "analyze --sgf waited on a FIFO"
    line = error_line(results[0])
    assert line.startswith("error: ") and "is a FIFO, not a regular file" in line
    assert "--sgf" in line


def test_analyze_refuses_an_sgf_file_over_its_size_cap(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "game.sgf"
    path.write_text("(;GM[1]SZ[9]C[" + "x" * (2 << 20) + "])")  # refused before it is parsed
    line = error_line(runner.invoke(app, ["analyze", "go_6x6", "--sgf", str(path)]))
    assert "more than the 1,048,576 it may hold" in line and str(path) in line


def test_analyze_follows_an_sgf_link_the_user_typed(tmp_path, monkeypatch):
    """A link to a record elsewhere is the user's own choice: read, not refused."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "game.sgf").write_text("(;GM[1]SZ[6];B[];W[])")
    (tmp_path / "here").mkdir()
    (tmp_path / "here" / "game.sgf").symlink_to(tmp_path / "elsewhere" / "game.sgf")
    args = ["analyze", "go_6x6", "--sgf", str(tmp_path / "here" / "game.sgf")]
    assert "the game is over at the end of the record" in error_line(runner.invoke(app, args))


# -- the board: echoed requests, Host --------------------------------------------------------


@pytest.fixture(scope="module")
def board(tiny_run):
    session = Session(load_agent(tiny_run), simulations=2, games=read_games(tiny_run, 9))
    client = TestClient(make_app(session), base_url="http://127.0.0.1")
    client.headers["X-Board-Tab"] = client.post("/api/open").json()["tab"]
    return client


@pytest.mark.parametrize(
    "url, field",
    [
        ("/api/new", "human"),
        ("/api/play", "action"),
        ("/api/play", "move"),
        ("/api/goto", "ply"),
        ("/api/load", "game"),
        ("/api/load", "moves"),
    ],
)
def test_board_errors_echo_no_more_than_a_few_hundred_characters(board, url, field):
    for huge in ("x" * 900_000, ["y" * 1000] * 800, {"z" * 500_000: 1}, 10**4000):
        answer = board.post(url, json={field: huge})
        assert answer.status_code == 400, (url, field)
        assert len(answer.json()["error"]) <= 400, (url, field, answer.json()["error"][:500])


def _status(app, host: str) -> int:
    return TestClient(app, base_url=f"http://{host}").get("/").status_code


@pytest.mark.parametrize("bound", ["127.0.0.2", "0.0.0.0", "::", "192.0.2.7"])
def test_the_board_checks_the_host_whatever_address_it_is_bound_to(bound):
    web = make_app(SimpleNamespace(), host=bound)  # the page alone needs no session
    assert _status(web, "evil.example:8765") == 400  # DNS rebinding
    assert _status(web, "evil.example") == 400
    shown = f"[{bound}]" if ":" in bound else bound
    if bound not in ("0.0.0.0", "::"):
        assert _status(web, f"{shown}:8765") == 200
    loopback = bound.startswith("127.") or bound in ("0.0.0.0", "::")
    assert (_status(web, "localhost:8765") == 200) == loopback
    assert (_status(web, "[::1]:8765") == 200) == loopback


@pytest.mark.parametrize("bound", ["127.0.0.1", "127.0.0.2", "::1", "192.0.2.7"])
def test_a_bound_board_answers_its_own_port_only(bound):
    web = make_app(SimpleNamespace(), host=bound, port=8765)
    shown = f"[{bound}]" if ":" in bound else bound
    assert _status(web, f"{shown}:8765") == 200
    assert _status(web, f"{shown}:9999") == 400  # another port: not this board
    assert _status(web, shown) == 400  # no port: 80, not this board


def test_a_board_bound_to_every_address_answers_this_machines_names(monkeypatch):
    def unknown(*args, **kwargs):
        raise OSError("no such name")  # and no DNS server asked

    monkeypatch.setattr(hosts.socket, "gethostname", lambda: "mybox")
    monkeypatch.setattr(hosts.socket, "getfqdn", lambda name="": "mybox.lan.example")
    monkeypatch.setattr(hosts.socket, "getaddrinfo", unknown)
    web = make_app(SimpleNamespace(), host="0.0.0.0", port=8765, allow_hosts=("board.example",))
    for name in ("mybox", "MyBox.local", "mybox.lan.example", "board.example", "127.0.0.1"):
        assert _status(web, f"{name}:8765") == 200, name
    assert _status(web, "otherbox:8765") == 400


def test_only_a_non_loopback_address_is_warned_about():
    assert hosts.exposure("127.0.0.2") is None and hosts.exposure("::1") is None
    assert hosts.exposure("localhost") is None
    for host in ("0.0.0.0", "192.0.2.7", "::"):
        assert "whoever reaches this machine" in (hosts.exposure(host) or ""), host


# -- GTP ---------------------------------------------------------------------------------------


def test_gtp_reads_a_huge_line_in_bounded_pieces(go_run):
    from jaxzero.go.gtp import GtpEngine

    engine = GtpEngine(load_agent(go_run), num_simulations=2)
    out = io.BytesIO()
    script = b"1 name\n2 " + b"x" * (8 << 20) + b"\n3 name\n4 " + b"play b " * 300_000
    tracemalloc.start()
    try:
        engine.serve(io.BytesIO(script), out)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    replies = out.getvalue().decode().split("\n\n")[:-1]
    assert replies[0] == "=1 jaxzero" and replies[2] == "=3 jaxzero"
    assert replies[1] == "?2 command line longer than 65536 bytes"
    assert replies[3] == "?4 command line longer than 65536 bytes"  # no end of line
    assert len(replies) == 4 and peak < 4 << 20, peak
