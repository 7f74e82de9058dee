"""Behaviour pinned across refactors: fixed seeds give the numbers of the code before.

``data/pinned_runs.json`` holds what jaxzero produced before the redesign of the
evaluation, config and driver code (commit 510ffd3): a tic-tac-toe run of four iterations
with the gate and periodic evaluation on, a Connect Four run of three iterations with a
periodic evaluation, and matches of fixed players. The same configs must give the same
metrics rows, parameters and game counts (on the machine that made them the parameters
are bit-identical, sha256 below; the tolerance here only allows for another CPU's
floating-point kernels).
"""

import hashlib
import json
from pathlib import Path

import jax
import numpy as np
import pytest
from conftest import tiny_config

import envs
from jaxzero.measure.match import play_match
from jaxzero.measure.opponents import make_opponent
from jaxzero.run.life.checkpoint import Checkpointer

PINNED = json.loads((Path(__file__).parent / "data" / "pinned_runs.json").read_text())
CONFIGS = {
    "tic_tac_toe": dict(
        gate__enabled=True, gate__every=2, gate__num_games=8, evaluation__every=2,
        evaluation__games=4, evaluation__max_share=1.0,
    ),
    "connect_four": dict(
        selfplay__moves_per_iteration=4, evaluation__every=3, evaluation__games=4,
        evaluation__max_share=1.0,
    ),
}  # fmt: skip
# Metrics added since the pinned runs (their values are checked where they were added):
# the raw policy's solved-position share of every periodic measurement.
ADDED = ("elapsed", "positions_per_second", "eval/raw_optimal")
ITERATIONS = {"tic_tac_toe": 4, "connect_four": 3}


def _summary(tree) -> list[float]:
    leaves = [np.asarray(leaf, np.float64) for leaf in jax.tree.leaves(jax.device_get(tree))]
    return [float(sum(x.sum() for x in leaves)), float(sum((x**2).sum() for x in leaves))]


def _sha256(tree) -> str:
    digest = hashlib.sha256()
    for leaf in jax.tree.leaves(jax.device_get(tree)):
        digest.update(np.ascontiguousarray(np.asarray(leaf)).tobytes())
    return digest.hexdigest()


@pytest.mark.parametrize("game", ["tic_tac_toe", "connect_four"])
def test_a_short_run_gives_the_pinned_metrics_and_parameters(game, tmp_path, trainers, train_run):
    config = tiny_config(game, **CONFIGS[game])
    run = tmp_path / "run"
    train_run(run, config, iterations=ITERATIONS[game])
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    measured = [r for r in rows if "eval/vs_random" in r]
    assert measured and all(0.0 <= r["eval/raw_optimal"] <= 1.0 for r in measured)
    rows = [{k: v for k, v in r.items() if k not in ADDED} for r in rows]
    pinned = PINNED[game]
    assert [sorted(r) for r in rows] == [sorted(r) for r in pinned["rows"]]
    for row, expected in zip(rows, pinned["rows"], strict=True):
        for name, value in expected.items():
            assert row[name] == pytest.approx(value, rel=1e-5, abs=1e-6), (row["iteration"], name)
    abstract = jax.eval_shape(trainers(config).init, jax.random.key(0))
    with Checkpointer(run) as checkpointer:
        state, _ = checkpointer.restore(abstract)
    np.testing.assert_allclose(_summary(state.params), pinned["params_summary"], rtol=1e-5)
    print(game, "parameters bit-identical:", _sha256(state.params) == pinned["params_sha256"])


def test_fixed_player_matches_give_the_pinned_counts():
    for game in ("tic_tac_toe", "connect_four"):
        env = envs.make(game)
        one_ply, random = make_opponent("one_ply", env), make_opponent("random", env)
        result = play_match(env, one_ply, random, 40, jax.random.key(3))
        counts = [result.wins, result.draws, result.losses, list(result.first)]
        assert counts == PINNED["matches"][f"{game}/one_ply_vs_random"]
    env = envs.make("tic_tac_toe")  # a search opponent too (Connect Four's rollouts: slow)
    mcts = make_opponent("pure_mcts", env, num_simulations=16)
    result = play_match(env, mcts, make_opponent("one_ply", env), 10, jax.random.key(4))
    counts = [result.wins, result.draws, result.losses, list(result.first)]
    assert counts == PINNED["matches"]["tic_tac_toe/pure_mcts_vs_one_ply"]
