"""`jaxzero eval` (round robin, Elo table, elo.json for the report) and `jaxzero analyze`."""

import json
import re
import shutil

import jax
import numpy as np
import pytest
from helpers import checkpointed_run, error_line
from typer.testing import CliRunner

from jaxzero.cli import app
from jaxzero.run.agents.agent import export_agent, load_agent
from jaxzero.run.life.checkpoint import CheckpointError
from jaxzero.run.reports.report import write_report

runner = CliRunner()


@pytest.fixture(scope="module")
def run(tmp_path_factory, ttt_config, trainers):
    """A run directory with checkpoints 10 and 20 (two different networks), untrained."""
    config = ttt_config
    run = tmp_path_factory.mktemp("eval") / "run"
    checkpointed_run(run, config, trainers(config), [10, 20])
    rows = [{"iteration": i, "policy_loss": 2.0 - 0.05 * i} for i in (10, 20)]
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return run


def test_eval_prints_an_elo_table_and_writes_elo_json(run):
    args = ["eval", str(run), "--opponents", "one_ply", "--games", "8", "--simulations", "4"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    table = [line for line in result.stdout.splitlines() if line.strip()]
    assert table[0].split()[:4] == ["#", "player", "Elo", "95%"]
    players = {line.split()[1] for line in table[1:]}
    assert players == {"random", "one_ply", "run@10", "run@20"}
    anchor = next(line for line in table if " random " in line)
    assert "(anchor)" in anchor and re.search(r"\s0\s", anchor)
    assert all(line.split()[-2] == "24" for line in table[1:])  # 3 pairings of 8 games each

    data = json.loads((run / "elo.json").read_text())
    assert data["anchor"] == "random" and data["players"]["random"]["elo"] == 0.0
    assert [r["iteration"] for r in data["rows"]] == [10, 20]
    for row in data["rows"]:
        assert row["elo_lower"] < row["elo"] < row["elo_upper"]
        assert row["elo/one_ply"] == data["players"]["one_ply"]["elo"]

    out = write_report(run)  # the report plots the ladder next to the metrics
    assert (out / "elo.png").exists() and (out / "losses.png").exists()
    summary = (out / "summary.md").read_text()
    assert "| checkpoint | Elo | 95% interval |" in summary
    assert all(f"| {r['iteration']} | {r['elo']:.0f} |" in summary for r in data["rows"])

    # A second eval (one checkpoint) writes a new elo.json and keeps the round robin's.
    args = ["eval", str(run / "checkpoints" / "20"), "--opponents", "one_ply", "--games", "2"]
    result = runner.invoke(app, args + ["--simulations", "4"])
    assert result.exit_code == 0, result.output
    assert "the previous ratings are kept as" in result.output
    assert [r["iteration"] for r in json.loads((run / "elo.json").read_text())["rows"]] == [20]
    (kept,) = run.glob("elo-*.json")
    assert json.loads(kept.read_text()) == data


@pytest.mark.parametrize(
    "args, message",
    [
        (["eval", "no/such/run"], "does not exist"),
        (["eval", "{run}", "--opponents", "random,chess"], "unknown opponent 'chess'"),
        (["eval", "{run}", "--games", "7"], "--games must be an even number"),
        (
            ["eval", "{run}", "--every", "0"],
            "'--every': Input should be greater than or equal to 1",
        ),
        (["eval", "{tmp}"], "neither a run directory"),
        (["eval", "{run}", "--set", "network.hidden_size=4"], "cannot change for a trained"),
        (["eval", "{run}", "--set", "search.kind"], "is not KEY=VALUE"),
        (["play", "--checkpoint", "{run}", "--set", "network.hidden_size=4"], "cannot change"),
        (["gtp", "--checkpoint", "{run}", "--set", "seed=3"], "'seed' cannot change"),
        (["analyze", "tic_tac_toe", "--checkpoint", "{run}", "--set", "x"], "is not KEY=VALUE"),
        (["analyze", "tic_tac_toe", "--moves", "5 5"], "move 2 ('5') is illegal"),
        (["analyze", "tic_tac_toe", "--moves", "5 0"], "move 2: '0' is not a cell"),
        (["analyze", "tic_tac_toe", "--moves", "1 4 2 5 3 6"], "the game is over before move 6"),
        (["analyze", "chess"], "unknown game 'chess'"),
        (["play", "chess"], "unknown game 'chess'; choose a preset"),
        (["play", "pgx/kuhn_poker"], "pgx/kuhn_poker has hidden information: a search"),
        (
            ["train", "pgx/minatar-breakout", "search.chance_nodes=true", "--out", "{tmp}/m"],
            "pgx/minatar-breakout does not: set search.chance_nodes=false",
        ),
        (["train", "pgx/no_such_game"], "pgx has no game 'no_such_game'"),
        (["play", "go_9x9"], "no agent in runs/go_9x9 and none shipped for go_9x9: train one"),
        (
            ["play", "star_duel", "--checkpoint", "{run}"],
            "holds a tic_tac_toe agent, not star_duel",
        ),
        (["play", "--checkpoint", "{run}", "--simulations", "0"], "greater than or equal to 1"),
        (["play", "--checkpoint", "{run}", "--simulations", "-5"], "greater than or equal to 1"),
        (
            ["play", "--checkpoint", "{run}", "--search", "foo"],
            "unknown search 'foo'; choose gumbel, puct",
        ),
        (
            ["gtp", "--checkpoint", "{run}", "--search", "foo"],
            "unknown search 'foo'; choose gumbel, puct",
        ),
        (["gtp", "--checkpoint", "{run}", "--simulations", "-5"], "greater than or equal to 1"),
        (["gtp", "--checkpoint", "{run}", "--resign", "nan"], "--resign"),
        (["analyze", "tic_tac_toe", "--seed", "-1"], "greater than or equal to 0"),
        (["eval", "{run}", "--seed", "99999999999999999999"], "less than or equal to"),
        (["report", "{tmp}"], "has no metrics.jsonl"),
    ],
)
def test_mistakes_are_one_line_errors(run, tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    args = [a.format(run=run, tmp=tmp_path) for a in args]
    assert message in error_line(runner.invoke(app, args))


def test_analyze_prints_the_root_and_writes_the_tree(run, tmp_path):
    dot = tmp_path / "tree.dot"
    args = ["analyze", "tic_tac_toe", "--moves", "5 1", "--checkpoint", str(run)]
    result = runner.invoke(app, [*args, "--simulations", "8", "--dot", str(dot)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[:3] == ["O . .", ". X .", ". . ."]
    assert lines[3].startswith("player 0 to move")
    header = lines.index(next(line for line in lines if line.startswith("move")))
    rows = lines[header + 1 : header + 8]
    assert sorted(r.split()[0] for r in rows) == ["2", "3", "4", "6", "7", "8", "9"]
    assert sum(int(r.split()[2]) for r in rows) == 8  # every simulation visits one root child
    assert sum("<- chosen" in r for r in rows) == 1
    chosen = next(r for r in rows if "<- chosen" in r).split()[0]
    assert lines[-1] == f"chosen move: {chosen}"

    text = dot.read_text()
    assert text.startswith("digraph search {") and text.rstrip().endswith("}")
    nodes = re.findall(r"^  n(\d+) \[label=", text, flags=re.M)
    edges = re.findall(r"^  n(\d+) -> n(\d+)", text, flags=re.M)
    assert sorted(map(int, nodes)) == list(range(9))  # the root and one node a simulation
    assert len(edges) == 8 and {c for _, c in edges} == {str(i) for i in range(1, 9)}


def test_every_preset_names_the_game_it_trains():
    """No name translation: `jaxzero train G` trains the game G, play and analyze take G."""
    from jaxzero.cli import UsageError
    from jaxzero.cli.games import check_game
    from jaxzero.core.presets import PRESETS

    assert all(name == config.game for name, config in PRESETS.items())
    assert check_game("star_duel_short") == "star_duel_short" and check_game("go") == "go"
    with pytest.raises(UsageError, match="unknown game 'chess'"):
        check_game("chess")


def test_moves_with_spaces_are_separated_by_commas_or_read_word_by_word():
    import envs
    from jaxzero.analysis import position_from_moves, split_moves

    star_duel = envs.make("star_duel_short")
    assert split_moves(star_duel, "play scout end") == ["play scout", "end"]
    assert split_moves(star_duel, "scrap battle station for its ability, buy 2") == [
        "scrap battle station for its ability",
        "buy 2",
    ]
    assert split_moves(star_duel, "fly away end") == ["fly", "away", "end"]  # errors: 'fly'
    state = position_from_moves(star_duel, "play scout, end")
    assert int(state.turn) == 1 and int(state.current_player) == 1
    assert int(position_from_moves(star_duel, "play scout end").turn) == 1
    ttt = envs.make("tic_tac_toe")
    spaced, commas = position_from_moves(ttt, "5 1 9"), position_from_moves(ttt, "5, 1,9")
    jax.tree.map(lambda a, b: jax.numpy.array_equal(a, b) or pytest.fail("differ"), spaced, commas)
    with pytest.raises(ValueError, match="move 2: 'scrap everything' is not a move"):
        position_from_moves(envs.make("star_duel_short"), "play scout, scrap everything")


def test_export_writes_an_agent_folder_that_plays_like_its_run(run, tmp_path):
    folder = tmp_path / "agent"
    result = runner.invoke(app, ["export", f"{run}/checkpoints/10", "--out", str(folder)])
    assert result.exit_code == 0, result.output
    names = sorted(p.name for p in folder.iterdir())
    files = ["MODEL_CARD.md", "agent.json", "checksums.sha256", "config.json", "params.msgpack"]
    assert names == files
    facts = json.loads((folder / "agent.json").read_text())
    assert facts["format"] == 1 and facts["game"] == "tic_tac_toe" and facts["iteration"] == 10
    assert facts["source"] == f"{run}/checkpoints/10"
    assert "iteration 10" in (folder / "MODEL_CARD.md").read_text()

    original, exported = load_agent(run, step=10), load_agent(folder)
    assert exported.config == original.config and exported.iteration == 10
    pairs = zip(jax.tree.leaves(original.params), jax.tree.leaves(exported.params), strict=True)
    for x, y in pairs:
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    states = jax.vmap(original.env.init)(jax.random.split(jax.random.key(0), 4))
    key = jax.random.key(1)
    np.testing.assert_array_equal(original.act(states, key, 4), exported.act(states, key, 4))

    # eval rates it (as FOLDER@ITERATION) and writes no ratings into the agent folder
    result = runner.invoke(app, ["eval", str(folder), "--games", "2", "--simulations", "4"])
    assert result.exit_code == 0, result.output
    assert "agent@10" in result.stdout and not (folder / "elo.json").exists()

    again = runner.invoke(app, ["export", str(run), "--out", str(folder)])
    assert "already exists" in error_line(again)
    assert json.loads((folder / "agent.json").read_text()) == facts  # nothing changed


def test_a_wrong_or_damaged_agent_folder_is_explained(run, tmp_path):
    folder = tmp_path / "agent"
    export_agent(run, folder)
    with pytest.raises(CheckpointError, match="drop the step"):
        load_agent(folder, step=10)
    with pytest.raises(CheckpointError, match="is an agent folder already"):
        export_agent(folder, tmp_path / "copy")
    with pytest.raises(CheckpointError, match="does not exist; give a run directory"):
        load_agent(tmp_path / "tic_tac_toe")  # a path, not a game's name: no shipped agent

    config = json.loads((folder / "config.json").read_text())
    config["network"]["hidden_size"] *= 2
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="config.json does not match its checksum"):
        load_agent(folder)
    (folder / "checksums.sha256").unlink()  # as exported before checksums: still checked
    with pytest.raises(CheckpointError, match="does not fit the network"):
        load_agent(folder)
    (folder / "params.msgpack").write_bytes(b"garbage")
    with pytest.raises(CheckpointError, match="params.msgpack is unreadable"):
        load_agent(folder)
    (folder / "agent.json").write_text(json.dumps({"format": 99, "iteration": 1}))
    line = error_line(runner.invoke(app, ["play", "--checkpoint", str(folder)], input=""))
    assert "format 99" in line and "upgrade jaxzero" in line


def test_eval_plays_a_registered_opponent_by_name(run, tmp_path):
    from jaxzero.measure import opponents

    def first_legal(env):
        return lambda params, states, key: jax.numpy.argmax(states.legal_action_mask, -1)

    mine = tmp_path / "run"
    shutil.copytree(run / "checkpoints" / "20", mine / "checkpoints" / "20")
    shutil.copy(run / "config.json", mine / "config.json")
    shutil.copy(run / ".jaxzero-run.json", mine / ".jaxzero-run.json")
    opponents.register_opponent("first_legal", first_legal)
    try:
        args = ["eval", str(mine), "--opponents", "first_legal", "--games", "2"]
        result = runner.invoke(app, args + ["--simulations", "2"])
    finally:
        opponents.OPPONENTS.pop("first_legal")
    assert result.exit_code == 0, result.output
    players = {line.split()[1] for line in result.stdout.splitlines()[1:] if line.strip()}
    assert players == {"random", "first_legal", "run@20"}
