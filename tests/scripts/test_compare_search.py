"""experiments/compare_search.py: the smoke tier end to end, and its search players."""

import csv

import jax
import jax.numpy as jnp
import pytest

import envs
from experiments import compare_search
from experiments import compare_search_report as report
from jaxzero.run.agents.agent import load_agent


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    out = tmp_path_factory.mktemp("compare_search")
    result = compare_search.run(out, "smoke", command="smoke", log=lambda *a: None)
    return out, result


def _read(path):
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        return reader.fieldnames, list(reader)


def test_smoke_tier_writes_every_table_and_plot(smoke):
    out, _ = smoke
    tier = compare_search.TIERS["smoke"]
    columns, matches = _read(out / "policy_improvement.csv")
    assert columns == report.IMPROVEMENT_COLUMNS
    # Each n: PUCT vs raw, Gumbel vs raw, Gumbel vs PUCT, all games played and counted.
    assert len(matches) == 3 * len(tier.simulations) * len(tier.games)
    assert {(r["player"], r["opponent"]) for r in matches} == {
        ("puct", "raw"),
        ("gumbel", "raw"),
        ("gumbel", "puct"),
    }
    for r in matches:
        assert int(r["wins"]) + int(r["draws"]) + int(r["losses"]) == tier.match_games
        assert float(r["score_low"]) <= float(r["score"]) <= float(r["score_high"])

    columns, shares = _read(out / "optimal_share.csv")
    assert columns == report.OPTIMAL_COLUMNS
    assert [r["player"] for r in shares] == ["raw", "puct", "gumbel"]
    assert all(int(r["positions"]) == 4520 for r in shares)  # tic-tac-toe decision states

    columns, differences = _read(out / "optimal_difference.csv")
    assert columns == report.DIFFERENCE_COLUMNS
    assert [int(r["simulations"]) for r in differences] == list(tier.simulations)
    for r in differences:  # the paired difference is the difference of the two shares
        share = {
            s["player"]: float(s["optimal"]) for s in shares if s["simulations"] == r["simulations"]
        }
        moved = (int(r["gumbel_only"]) - int(r["puct_only"])) / int(r["positions"])
        assert float(r["difference"]) == pytest.approx(share["gumbel"] - share["puct"])
        assert float(r["difference"]) == pytest.approx(moved)
        assert float(r["difference_low"]) <= float(r["difference"]) <= float(r["difference_high"])

    columns, training = _read(out / "training.csv")
    assert columns == report.TRAINING_COLUMNS
    runs = {(r["search"], r["simulations"], r["seed"]) for r in training}
    assert len(runs) == 2 * len(tier.train_simulations) * len(tier.train_seeds)
    # a measurement every iteration (train_every = 1), each of the arm's seeds
    assert len(training) == len(runs) * tier.train_iterations
    for run in runs:
        rows = [r for r in training if (r["search"], r["simulations"], r["seed"]) == run]
        assert [int(r["iteration"]) for r in rows] == [1, 2]
        positions = [int(r["positions"]) for r in rows]  # finished games' positions
        assert positions == sorted(positions) and 0 < float(rows[0]["wall_seconds"])
        assert all(float(r["optimal_low"]) <= float(r["optimal"]) <= float(r["optimal_high"])
                   for r in rows)  # fmt: skip

    # The training study is a study of `jaxzero train --grid`: its arms are populations,
    # its report compares them with the statistics of results.md.
    study = out / "training_study"
    assert sorted(p.name for p in (study / "arms").iterdir()) == ["gumbel-4", "puct-4"]
    member = load_agent(study / "arms" / "gumbel-4" / "members" / "1")
    assert member.config.search.kind == "gumbel" and member.config.seed == tier.train_seeds[1]
    summary = (study / "report" / "summary.md").read_text()
    assert "| eval/raw_optimal |" in summary and "puct-4 − gumbel-4" in summary

    for name in ("policy_improvement.png", "optimal_share.png", "training.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = (out / "results.md").read_text()
    assert "| game | n | PUCT vs raw | Gumbel vs raw | Gumbel vs PUCT | verdict |" in text
    assert "## Training with each search" in text
    assert "| game | n | Gumbel only | PUCT only | Gumbel - PUCT | verdict |" in text


def test_verdict_reads_the_interval_against_even():
    assert report.verdict(0.52, 0.70) == "Gumbel better"
    assert report.verdict(0.30, 0.48) == "PUCT better"
    assert report.verdict(0.45, 0.60) == "no clear difference"


def test_training_verdict_needs_every_seed_apart():
    run = lambda low, high: {"optimal_low": low, "optimal_high": high}
    high, low = [run(0.85, 0.89), run(0.84, 0.88)], [run(0.65, 0.71), run(0.73, 0.78)]
    assert report.training_verdict(low, high) == "Gumbel better"
    assert report.training_verdict(high, low) == "PUCT better"
    assert report.training_verdict(low, [run(0.77, 0.90)]) == "no clear difference"
    assert report.training_verdict([], high) == "Gumbel only"


def test_training_verdict_of_three_seeds_or_more_reads_welchs_interval():
    run = lambda share: {
        "optimal": share,
        "optimal_low": share - 0.03,
        "optimal_high": share + 0.03,
    }
    gumbel, puct = [run(s) for s in (0.87, 0.88, 0.86, 0.85)], [run(s) for s in (0.68, 0.76, 0.70)]
    assert report.training_verdict(puct, gumbel) == "Gumbel better"  # +0.15 [0.04, 0.26]
    assert report.training_verdict(gumbel, puct) == "PUCT better"
    # every seed's interval overlaps another's, yet eight seeds a side tell the means apart
    close = [run(0.80 + 0.005 * k) for k in range(8)], [run(0.82 + 0.005 * k) for k in range(8)]
    assert report.training_verdict(*close) == "Gumbel better"
    assert report.training_verdict(close[0], close[0]) == "no clear difference"


@pytest.mark.parametrize("kind", compare_search.KINDS)
def test_both_searches_at_64_find_the_quickest_win(smoke, kind):
    """X: 4, 0; O: 1, 2. X8 wins at once (3, 5 and 6 win later); the untrained smoke
    network cannot know it, the experiment's 64-simulation search players must."""
    _, result = smoke
    agent = load_agent(result["checkpoints"]["tic_tac_toe"])
    env = envs.make("tic_tac_toe")
    state = env.init(jax.random.key(0))
    for move in (4, 1, 0, 2):
        state = env.step(state, jnp.int32(move))
    states = jax.tree.map(lambda x: jnp.stack([x, x]), state)
    player = agent.search_player(64, kind)  # the experiment's search player
    actions = player.jitted(agent.params, states, jax.random.key(3))
    assert actions.tolist() == [8, 8]


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--jobs", "999"], "--jobs 999: this process may use"),
        (["--jobs", "0"], "--jobs 0: this process may use"),
        (["--match-games", "3"], "--match-games must be even and at least 2"),
        (["--simulations", "8", "0"], "--simulations must be at least 1"),
        (["--train-seconds", "0"], "--train-seconds must be positive"),
        (["--set", "network.channels=8"], "only search.* and evaluation.* settings can"),
    ],
)
def test_bad_options_are_clear_errors(tmp_path, capsys, flags, message):
    with pytest.raises(SystemExit):
        compare_search.main(["--smoke", *flags, "--out", str(tmp_path)])
    assert message in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # nothing ran, nothing written
