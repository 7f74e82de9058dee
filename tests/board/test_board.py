"""The web board without a browser: its session and JSON API (Starlette's test client), a
run's recorded games, and `jaxzero board` started and stopped as a user would."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from starlette.testclient import TestClient

from envs import pictures
from jaxzero.analysis import position_from_moves
from jaxzero.board.server import ANOTHER_TAB, CROSS_SITE, NO_TAB, make_app
from jaxzero.board.session import BoardError, Session
from jaxzero.measure.roots import principal_variation
from jaxzero.run.agents.agent import load_agent
from jaxzero.run.folder import manifest
from jaxzero.run.folder.layout import GAMES_FILE
from jaxzero.run.life.game_records import (
    GameRecorder,
    RecordedGame,
    first_player_values,
    read_games,
    strip_svg,
)
from jaxzero.run.reports.report import STRIPS, write_report

JAXZERO = str(Path(sys.executable).with_name("jaxzero"))


@pytest.fixture(scope="module")
def session(tiny_run):
    """A board over the tiny run's agent and its recorded games (2 simulations: fast)."""
    agent = load_agent(tiny_run)
    return Session(agent, simulations=2, games=read_games(tiny_run, agent.env.num_actions))


@pytest.fixture
def app(session):
    return make_app(session)


@pytest.fixture
def client(app):
    """A test client whose tab holds the board, over a new game with the human first."""
    client = TestClient(app, base_url="http://127.0.0.1")
    tab = client.post("/api/open").json()["tab"]
    client.headers["X-Board-Tab"] = tab
    assert client.post("/api/new", json={"human": 0}).status_code == 200
    return client


def test_a_move_gets_the_agents_reply_and_its_analysis(client):
    view = client.post("/api/play", json={"action": 4}).json()
    assert "error" not in view
    assert len(view["moves"]) == 2 and view["moves"][0] == "1. 5 (you)"
    assert view["cursor"] == 2 and view["status"] == "your move"
    reply = view["reply"]  # the search the agent played from, on the position before its move
    assert view["moves"][1] == f"2. {reply['chosen']} (agent)"
    assert view["analysis"]["simulations"] == 2  # the position now, searched for the human
    pictures.check_svg(view["board"])
    targets = {int(a) for a in _targets(view["board"])}
    assert targets == {move["action"] for move in view["legal"]} and 4 not in targets
    assert 'stroke="#e03"' in view["board"]  # the agent's move ringed


def test_the_value_graph_draws_the_searches_verdicts_for_the_first_player(client, session):
    """A point per searched position, at the chosen move's Q from X's view: the
    agent's own searches (O to move) negated, the human's (X to move) as they are."""
    view = client.post("/api/play", json={"action": 4}).json()
    graph = view["value_graph"]
    pictures.check_svg(graph)
    assert "value for X, ply by ply" in graph
    drawn = {
        int(p): float(v) for p, v in re.findall(r'data-ply="(\d+)".*?ply \d+: ([-+.\d]+)', graph)
    }
    assert set(drawn) == set(session._analyses) and len(drawn) >= 2  # the reply's and now
    for ply, analysis in session._analyses.items():
        mover = int(analysis.state.current_player)
        expected = analysis.root.chosen_value * (1 if mover == 0 else -1)
        assert abs(drawn[ply] - expected) <= 0.005, (ply, drawn[ply], expected)
    assert 'stroke-dasharray="3 3"' in graph  # the position shown


def test_bad_requests_get_a_message_and_change_nothing(client):
    before = client.post("/api/play", json={"action": 0}).json()
    cases = [
        ({"action": 0}, "illegal move: 1 is not legal here"),
        ({"action": 9}, "tic_tac_toe has actions 0 to 8, not 9"),
        ({"action": "4"}, "a move is an action number, not '4'"),
        ({"move": "ten"}, "'ten' is not a move of tic_tac_toe"),
        ({}, "say which move"),
        ([4], "not a JSON object"),
    ]
    for body, message in cases:
        answer = client.post("/api/play", json=body)
        assert answer.status_code == 400 and message in answer.json()["error"], body
        assert answer.json()["moves"] == before["moves"]
    answer = client.post("/api/play", content=b"{not json", headers={"Content-Type": "x"})
    assert answer.status_code == 400 and answer.json()["error"] == "the request's body is not JSON"
    assert client.post("/api/goto", json={"ply": 7}).json()["error"].startswith("the line has")
    assert (
        "SGF records are Go games" in client.post("/api/load", json={"sgf": "(;)"}).json()["error"]
    )
    assert client.get("/api/view").json()["moves"] == before["moves"]  # still serving


def test_a_finished_game_refuses_moves_until_undone(client):
    view = client.post("/api/load", json={"moves": "1 4 2 5 3"}).json()  # X wins the top row
    assert view["over"] and view["status"].startswith("game over")
    answer = client.post("/api/play", json={"action": 8})
    assert answer.status_code == 400
    assert answer.json()["error"] == "the game is over: start a new game, undo, or step back"
    view = client.post("/api/goto", json={"ply": 4}).json()  # back one: X to move, and play on
    assert not view["over"] and view["cursor"] == 4 and len(view["moves"]) == 5
    view = client.post("/api/play", json={"action": 8}).json()  # a new line from there
    assert view["moves"][4] == "5. 9 (you)" and view["human"] == 0
    illegal = client.post("/api/load", json={"moves": "1 1"}).json()["error"]
    assert illegal == "move 2 ('1') is illegal in that position"


def test_undo_takes_back_the_humans_move_and_the_reply(client):
    client.post("/api/play", json={"action": 4})
    view = client.post("/api/play", json={"action": _free(client)}).json()
    assert len(view["moves"]) == 4
    view = client.post("/api/undo", json={}).json()
    assert len(view["moves"]) == 2 and view["cursor"] == 2 and view["status"] == "your move"
    view = client.post("/api/undo", json={}).json()
    assert view["moves"] == [] and view["cursor"] == 0
    assert (
        client.post("/api/undo", json={}).json()["error"]
        == "there is no move of yours to take back"
    )


def test_undo_with_no_move_of_the_humans_behind_is_refused(client):
    view = client.post("/api/new", json={"human": 1}).json()  # the agent opened
    assert len(view["moves"]) == 1
    refused = client.post("/api/undo", json={})
    assert refused.json()["error"] == "there is no move of yours to take back"
    assert len(refused.json()["moves"]) == 1


def test_the_agent_plays_the_side_to_move_when_asked(client):
    view = client.post("/api/load", json={"moves": "5 1"}).json()
    assert view["status"] == "your move" and view["human"] == 0 and not view["versus"]
    view = client.post("/api/agent", json={}).json()  # the agent takes X's side here
    assert len(view["moves"]) == 3 and view["moves"][2].endswith("(agent)")
    assert view["human"] == 1 and view["status"] == "your move"


def test_a_long_or_huge_request_is_refused_quickly(client):
    begin = time.monotonic()
    view = client.post("/api/load", json={"moves": "x " * 3000}).json()  # was cubic: 43 s
    assert view["error"].startswith("3000 words are more than a game of tic_tac_toe holds")
    view = client.post("/api/load", json={"moves": "x" * 100_000}).json()
    assert view["error"].startswith("move 1: ") and len(view["error"]) <= 300
    assert time.monotonic() - begin < 5
    big = client.post("/api/load", content=b'{"moves": "' + b"1" * (2 << 20) + b'"}')
    assert big.status_code == 400 and "larger than the 1048576 bytes" in big.json()["error"]


def test_a_seat_or_position_of_the_wrong_type_is_refused(client):
    for seat in (1.0, True, "1", -1):
        answer = client.post("/api/new", json={"human": seat})
        assert answer.status_code == 400 and "seat is 0 to 1" in answer.json()["error"], seat
    assert "whole number" in client.post("/api/goto", json={"ply": 1.0}).json()["error"]


def test_a_page_of_another_site_cannot_take_the_board(client, app):
    other = {"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}
    for headers in (other, {"Sec-Fetch-Site": "cross-site"}, {"Origin": "http://evil.example"}):
        answer = TestClient(app, base_url="http://127.0.0.1").post("/api/open", headers=headers)
        assert answer.status_code == 403 and answer.json()["error"] == CROSS_SITE
    assert client.post("/api/play", json={"action": 4}).status_code == 200  # still ours
    bare = TestClient(app, base_url="http://127.0.0.1").post("/api/play", json={"action": 0})
    assert bare.status_code == 400 and bare.json()["error"] == NO_TAB


def test_the_agent_opens_when_the_human_plays_second(client):
    view = client.post("/api/new", json={"human": 1}).json()
    assert len(view["moves"]) == 1 and view["human"] == 1 and view["status"] == "your move"
    assert client.post("/api/new", json={"human": 2}).json()["error"].startswith("the human's seat")


def test_a_second_tab_takes_the_board_and_the_first_is_told(client, app):
    second = TestClient(app, base_url="http://127.0.0.1")
    second.headers["X-Board-Tab"] = second.post("/api/open").json()["tab"]
    stale = client.post("/api/play", json={"action": 4})
    assert stale.status_code == 409 and stale.json() == {"error": ANOTHER_TAB, "stale": True}
    assert client.get("/api/view").status_code == 409
    assert second.post("/api/play", json={"action": 4}).status_code == 200


def test_only_requests_to_the_loopback_address_are_served(session):
    client = TestClient(make_app(session), base_url="http://evil.example")
    assert client.get("/").status_code == 400  # DNS rebinding: the Host is not ours
    page = TestClient(make_app(session), base_url="http://localhost:8765").get("/")
    assert page.status_code == 200 and "<title>jaxzero board</title>" in page.text
    assert "http" not in page.text.replace("http-equiv", "")  # nothing fetched from elsewhere


def test_a_runs_recorded_games_step_through(client, tiny_run, session):
    games = read_games(tiny_run, 9)
    assert games and all(game.kind == "self-play" for game in games)
    assert (tiny_run / GAMES_FILE).read_text().count("\n") == len(games)
    for game in games:  # the search's verdict before each move, for its mover
        assert len(game.values) == len(game.moves) and all(-1 <= v <= 1 for v in game.values)
    labels = client.get("/api/games").json()
    marks = ("X", "O")  # the winner called as the board draws them, not "player 0"
    assert labels[0] == {"index": len(games) - 1, "label": games[-1].describe(marks)}
    assert not any("player" in label["label"] for label in labels)
    view = client.post("/api/load", json={"game": 0}).json()
    assert view["title"] == games[0].describe(marks) and view["cursor"] == 0
    assert not view["versus"]
    assert len(view["moves"]) == len(games[0].moves)
    # the run's own values drawn over the whole game, before the board searched it
    assert view["value_graph"].count('class="value"') == len(games[0].moves)
    view = client.post("/api/goto", json={"ply": len(games[0].moves)}).json()
    assert view["over"]
    assert (
        client.post("/api/load", json={"game": 99}).json()["error"].startswith("the run has games")
    )


def test_read_games_skips_lines_that_are_not_games(tmp_path):
    lines = [
        {
            "iteration": 1,
            "kind": "self-play",
            "players": ["a", "b"],
            "moves": [4, 0],
            "returns": [1, -1],
        },
        {
            "iteration": 2,
            "kind": "self-play",
            "players": ["a", "b"],
            "moves": [9],
            "returns": [0, 0],
        },
        {"iteration": 3, "moves": [1]},
        {
            "iteration": 4,
            "kind": "self-play",
            "players": ["a", "b"],
            "moves": [4, 0],
            "returns": [1, -1],
            "values": [0.5],  # one short
        },
        "not a game",
    ]
    (tmp_path / GAMES_FILE).write_text("\n".join(map(json.dumps, lines)) + "\n{cut")
    games = read_games(tmp_path, num_actions=9)
    assert [game.moves for game in games] == [(4, 0)]
    assert games[0].label == "self-play, iteration 1: 2 moves, player 0 won"
    assert games[0].describe(("X", "O")) == "self-play, iteration 1: 2 moves, X won"


def test_session_refuses_a_seat_the_game_lacks(session):
    with pytest.raises(BoardError, match="seat is 0 to 1"):
        session.new(3)


def test_the_command_serves_the_page_refuses_a_taken_port_and_stops_on_ctrl_c():
    command = [JAXZERO, "board", "tic_tac_toe", "--simulations", "2", "--port"]
    process = subprocess.Popen(
        [*command, "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        url = _url(process)
        assert url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(url) as page:
            assert b"jaxzero board" in page.read()
        port = url.rsplit(":", 1)[1].strip("/")
        second = subprocess.run([*command, port], capture_output=True, text=True, timeout=180)
        assert second.returncode == 2
        assert f"error: cannot serve on 127.0.0.1:{port}: Address already in use" in second.stderr
        assert "Traceback" not in second.stderr
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 0, err
    assert err.strip().endswith("board stopped") and "Traceback" not in err
    assert "SIGINT: stopping the board" in err


def _url(process: subprocess.Popen) -> str:
    """The page's address from `jaxzero board`'s first line (it prints it once bound)."""
    deadline = time.monotonic() + 180
    assert process.stdout is not None
    line = process.stdout.readline()
    assert time.monotonic() < deadline and line.startswith("board: "), line
    return line.split()[1]


def _targets(svg: str) -> list[str]:
    import re

    return re.findall(r'data-action="(\d+)"', svg)


def _free(client) -> int:
    return client.get("/api/view").json()["legal"][0]["action"]


def test_the_main_line_ends_with_the_game(session):
    """The search visits a finished game's absorbing children; they are no moves."""
    state = position_from_moves(session.env, "1 2 3 5 4 6 8 7")  # one move left: 9
    root = session.agent.analyze(state, num_simulations=8).root
    assert principal_variation(root, session.env) == ["9"]


def test_the_report_draws_the_runs_games_move_by_move(tiny_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(tiny_run, run)
    out = write_report(run)
    summary = (out / "summary.md").read_text()
    assert "## Games" in summary and "![self-play, iteration" in summary
    strip = (out / "game_1.svg").read_text()
    pictures.check_svg(strip)
    assert "1. jaxzero " in strip and "start" in strip  # each move under its position
    plies = len(read_games(run, 9)[-1].moves)  # game 1: the last self-play game
    assert strip.count('class="value"') == plies and "value for X, ply by ply" in strip
    assert "report/game_1.svg" in (run / ".jaxzero-run.json").read_text()  # --force's to delete
    assert {f"game_{k}.svg" for k in range(1, STRIPS + 1)} <= set(manifest.OLDER_REPORT)


def test_the_recorder_writes_whole_games_of_the_first_slot_only():
    """Slot 0's games, stitched across iterations; a resumed run skips the game under way."""

    def steps(recorder, start_iteration):
        recorder.start(SimpleNamespace(iteration=start_iteration))
        # slot 0 plays [a, b | c] then [d, e], slot 1 noise: T = 3 moves an iteration
        action = np.array([[[1, 9], [2, 9], [3, 9]], [[4, 9], [5, 9], [6, 9]]])
        done = np.array([[[0, 1], [0, 0], [1, 0]], [[0, 0], [1, 0], [0, 0]]], bool)
        reward = np.zeros((2, 3, 2, 2))
        reward[0, 2, 0] = [1, -1]
        value = action / 10  # slot 0's: 0.1, 0.2, ...
        for k in range(2):
            moves = {"action": action[k], "done": done[k], "reward": reward[k], "value": value[k]}
            recorder(SimpleNamespace(iteration=start_iteration + k + 1, moves=moves))
        recorder.close(SimpleNamespace())

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / GAMES_FILE
        steps(GameRecorder(path, every=1), 0)
        games = read_games(folder)
        assert [g.moves for g in games] == [(1, 2, 3), (4, 5)]
        assert [g.values for g in games] == [(0.1, 0.2, 0.3), (0.4, 0.5)]
        assert games[0].returns == (1.0, -1.0) and games[1].result == "draw"
        path.unlink()
        steps(GameRecorder(path, every=5), 4)  # resumed: the first game began before it
        assert [g.moves for g in read_games(folder)] == [(4, 5)]


def test_an_sgf_record_loads_as_a_line_to_step_through():
    agent = load_agent("go_6x6")
    session = Session(agent, simulations=2)
    session.load_sgf("(;GM[1]SZ[6]KM[7.5]AB[aa];W[cc];B[dd];W[];B[])")  # ends with two passes
    view = session.view()
    assert view["cursor"] == 4 and view["over"] and view["status"] == "game over: White won"
    assert view["title"] == (
        "loaded: an SGF record of 4 moves (komi 7.5 in the record, 3.5 in the agent's games)"
    )
    session.goto(1)
    assert ": Black to move</text>" in session.view()["board"]  # as a person sees the stones
    assert session.view()["moves"][0] == "1. C4" and " 6 X . " in session.env.render(
        session.states[0]
    )
    with pytest.raises(BoardError, match="the record is 9x9; go_6x6 is not"):
        session.load_sgf("(;GM[1]SZ[9];B[cc])")
    with pytest.raises(BoardError, match="move 2 \\(C4\\) is illegal"):
        session.load_sgf("(;GM[1]SZ[6];B[cc];W[cc])")


def test_the_main_line_starts_with_the_chosen_move(session):
    state = session.states[0]
    root = session.agent.analyze(state, num_simulations=4).root
    tied = dataclasses.replace(root, chosen=int(np.argsort(root.visits)[-2]))  # not the most
    assert principal_variation(tied, session.env)[0] == session.env.action_to_text(tied.chosen)


def test_a_games_values_are_drawn_for_the_first_player():
    """Each value is its mover's: the second player's are negated for the first's graph."""
    states = [SimpleNamespace(current_player=np.int32(k % 2)) for k in range(4)]
    assert first_player_values(states, [0.5, 0.25, -0.75]) == {0: 0.5, 1: -0.25, 2: -0.75}


@pytest.mark.parametrize("columns", [10, 3])
def test_a_strips_values_sit_under_their_boards_when_the_boards_fit_a_row(ttt, columns):
    """Ply k's value under board k (the start is board 0) in a strip of one row; over the
    strip's width, evenly, when the boards wrap."""
    game = RecordedGame(0, "self-play", ("jaxzero",) * 2, (4, 0, 8), (0.0, 0.0), (0.1, -0.2, 0.3))
    strip = strip_svg(ttt, game, columns=columns)
    boards = [  # each board's x and width inside the strip's row of pictures
        (float(x), float(w))
        for x, w in re.findall(
            r'<svg x="([\d.]+)" y="0.0" [^>]*width="(\d+)" height="1[45]\d"', strip
        )
    ]
    assert len(boards) == min(columns, 4), boards  # the first row's
    graph = strip[strip.index("value for X") - 3000 :]
    cx = {int(p): float(x) for p, x in re.findall(r'data-ply="(\d+)" cx="([\d.]+)"', graph)}
    assert sorted(cx) == [0, 1, 2]
    centres = [x + w / 2 for x, w in boards]
    if columns == 10:
        assert [round(cx[p], 1) for p in range(3)] == [round(c, 1) for c in centres[:3]]
    else:  # two rows: plies 0..3 spread over the strip's width
        assert cx[0] < cx[1] < cx[2] and cx[2] - cx[1] == pytest.approx(cx[1] - cx[0], abs=0.2)
        assert round(cx[1], 1) != round(centres[1], 1)
