"""The arena gate: who gets promoted, paired openings, the gate inside the loop and driver.

The "perfect" network is a lookup table over all 3^9 tic-tac-toe boards (as the mover
sees them) filled from the exact solver: value = the position's result, logits high on
the optimal moves. The broken learner is the same table filled with noise.
"""

import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import tiny_config

import envs
from jaxzero.core.config import apply_overrides
from jaxzero.core.policies import make_search
from jaxzero.core.presets import get_preset
from jaxzero.games.tic_tac_toe import solver as ttt
from jaxzero.measure import gate as gate_lib
from jaxzero.measure.match import make_match
from jaxzero.measure.statistics import false_positive_rate
from jaxzero.run.life.checkpoint import Checkpointer

POWERS = jnp.asarray(3 ** np.arange(9), jnp.int32)
SMALL_GATE = {
    "evaluation.simulations": 8,
    "gate.num_games": 32,
    "gate.threshold": 0.55,
    "evaluation.opening_plies": 2,
}


def table_apply(variables, observation):
    """A "network" that reads its output from a table indexed by the mover-relative board."""
    obs = observation.reshape(observation.shape[0], 9, 2).astype(jnp.int32)
    index = ((obs[..., 0] + 2 * obs[..., 1]) * POWERS).sum(-1)  # int32 [B]
    table = variables["params"]
    return table["logits"][index], jnp.tanh(table["value"][index])


def _perfect_table() -> dict:
    results = ttt.solve().move_results.astype(np.int32)  # [19683, 9], absolute boards
    cells = (np.arange(3**9)[:, None] // 3 ** np.arange(9)) % 3  # relative: 1 mine, 2 theirs
    mover = ((cells == 1).sum(1) != (cells == 2).sum(1)).astype(np.int32)[:, None]
    absolute = np.where(cells == 1, mover, np.where(cells == 2, 1 - mover, -1))
    moves = results[ttt.board_index(absolute)]  # [19683, 9]
    legal = moves != ttt.ILLEGAL
    best = np.where(legal, moves, -2).max(1, keepdims=True)
    logits = np.where(legal & (moves == best), 3.0, -3.0)
    value = np.arctanh(0.999 * np.where(legal.any(1), best[:, 0], 0).clip(-1, 1))
    return {"params": {"logits": jnp.asarray(logits, jnp.float32), "value": jnp.asarray(value)}}


def _noise_table(seed: int) -> dict:
    k_logits, k_value = jax.random.split(jax.random.key(seed))
    return {
        "params": {
            "logits": jax.random.normal(k_logits, (3**9, 9)),
            "value": jax.random.normal(k_value, (3**9,)),
        }
    }


@pytest.fixture(scope="module")
def env():
    return envs.make("tic_tac_toe")


@pytest.fixture(scope="module")
def table_gate(env):
    config = apply_overrides(get_preset("tic_tac_toe"), SMALL_GATE)
    return gate_lib.make_gate(config, env, table_apply, make_search(config.search))


def test_broken_learner_is_never_promoted(table_gate):
    perfect = _perfect_table()
    for seed in range(3):
        broken = _noise_table(seed)
        verdict = table_gate(broken, perfect, jax.random.key(seed))
        # A random opening can hand the perfect player a lost position, so the broken
        # learner wins a game now and then, from the lucky side of a pair only.
        assert verdict.result.losses > 2 * verdict.result.wins and verdict.score < 0.5
        assert not verdict.promoted


def test_a_stronger_learner_is_promoted(table_gate):
    verdict = table_gate(_perfect_table(), _noise_table(0), jax.random.key(7))
    assert verdict.result.wins > 2 * verdict.result.losses
    assert verdict.promoted and verdict.metrics()["arena/promoted"] == 1.0


def test_identical_copy_scores_exactly_half_and_is_never_promoted(table_gate):
    """Noise-free search is deterministic and both games of an opening share their env
    keys, so an identical copy plays the same game from both seats: every pair splits."""
    best = _noise_table(3)  # a decisive-game-rich player, to make the pairing visible
    copy = gate_lib.copy_variables(best)
    half = table_gate.config.num_games // 2
    promotions = 0
    for seed in range(3):
        key = jax.random.key(100 + seed)
        outcome, seat = jax.device_get(table_gate.match(copy, best, key))
        np.testing.assert_array_equal(seat, np.repeat([0, 1], half))  # both colours
        np.testing.assert_array_equal(outcome[:half], -outcome[half:])
        assert (outcome != 0).any()
        verdict = table_gate(copy, best, key)
        assert verdict.score == 0.5 and verdict.result.wins == verdict.result.losses
        promotions += verdict.promoted
    assert table_gate.match.play._cache_size() == 1  # the gate's match compiled once
    rate = false_positive_rate(table_gate.config.num_games, 0.55)
    assert promotions / 3 <= rate


def test_openings_are_random_and_shared_by_both_games_of_a_pair(env):
    """A deterministic "first legal cell" player against itself: the games of a pair are
    the same game (so the outcomes split) and the openings vary from pair to pair."""

    def first_legal(params, states, key):
        del params, key
        return jnp.argmax(states.legal_action_mask, axis=-1).astype(jnp.int32)

    match = make_match(env, first_legal, first_legal, 64, 2)
    outcome, seat = jax.device_get(match(None, None, jax.random.key(0)))
    np.testing.assert_array_equal(outcome[:32], -outcome[32:])
    np.testing.assert_array_equal(seat, np.repeat([0, 1], 32))
    assert len(set(outcome[:32].tolist())) > 1  # different openings, different games


def test_false_positive_rate_matches_the_promotion_rule():
    gate = apply_overrides(
        get_preset("tic_tac_toe"), {"gate.num_games": 20, "gate.threshold": 0.55}
    ).gate
    rng = np.random.default_rng(0)
    wins = rng.binomial(20, 0.5, size=40_000)  # equal players, decisive games
    simulated = np.mean([gate_lib.should_promote(w / 20, 20, gate) for w in wins])
    exact = false_positive_rate(20, 0.55)
    assert exact == pytest.approx(sum(math.comb(20, k) for k in range(11, 21)) / 2**20)
    assert simulated == pytest.approx(exact, abs=0.01)
    assert false_positive_rate(200, 0.55) == pytest.approx(0.0895, abs=5e-4)
    assert not gate_lib.should_promote(0.9, 19, gate)  # too few games


def test_promotion_copies_every_collection():
    variables = {
        "params": {"w": jnp.arange(3.0)},
        "batch_stats": {"mean": jnp.ones(2), "var": jnp.full(2, 4.0)},
    }
    copied = gate_lib.copy_variables(variables)
    assert jax.tree.structure(copied) == jax.tree.structure(variables)
    for new, old in zip(jax.tree.leaves(copied), jax.tree.leaves(variables), strict=True):
        np.testing.assert_array_equal(new, old)
        assert new is not old


def test_bad_gate_settings_are_rejected_when_the_config_is_built():
    config = get_preset("tic_tac_toe")
    for key, value in [("gate.num_games", 7), ("gate.threshold", 0.5), ("gate.every", 0)]:
        with pytest.raises(ValueError, match=key):
            apply_overrides(config, {key: value})


# ------------------------------------------------------------------ the gate in the loop

GATED = {
    "replay.min_size": 8,
    "train.checkpoint_every": 100,
    "gate.enabled": True,
    "gate.every": 2,
    "gate.num_games": 8,
    "evaluation.every": 3,
    "evaluation.games": 8,
}


@pytest.fixture(scope="module")
def gated(trainers):
    config = apply_overrides(tiny_config("tic_tac_toe"), GATED)
    return config, trainers(config)


def test_self_play_uses_best_params_and_the_learner_trains(gated):
    _, trainer = gated
    state = trainer.init(jax.random.key(0))
    for _ in range(3):  # fill replay so the learner updates
        state, _, _ = trainer.iteration(state)
    garbage = jax.tree.map(lambda x: 50.0 * jnp.sin(1e3 * x + 1.0), state.params)
    a, metrics_a, _ = trainer.iteration(state)
    b, metrics_b, _ = trainer.iteration(state.replace(params=garbage))
    for x, y in zip(jax.tree.leaves(a.replay), jax.tree.leaves(b.replay), strict=True):
        np.testing.assert_array_equal(x, y)  # same self-play data whatever the learner
    for x, y in zip(jax.tree.leaves(a.selfplay), jax.tree.leaves(b.selfplay), strict=True):
        np.testing.assert_array_equal(x, y)
    for name in ("kl_search_prior", "root_value", "value_error", "games_finished"):
        assert float(metrics_a[name]) == float(metrics_b[name])
    for x, y in zip(
        jax.tree.leaves(a.best_params), jax.tree.leaves(state.best_params), strict=True
    ):
        np.testing.assert_array_equal(x, y)  # the best is frozen between arenas
    assert float(metrics_a["updated"]) == 1.0
    changed = [
        not np.array_equal(x, y)
        for x, y in zip(jax.tree.leaves(a.params), jax.tree.leaves(state.params), strict=True)
    ]
    assert any(changed)  # the learner trains


def test_driver_logs_arena_and_evaluation(tmp_path, gated, train_run):
    config, trainer = gated
    run = tmp_path / "run"
    train_run(run, config, iterations=4)
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    arena_rows = [r for r in rows if "arena/score" in r]
    assert [r["iteration"] for r in arena_rows] == [2, 4]
    for row in arena_rows:
        assert row["arena/games"] == 8
        assert row["arena/promoted"] in (0.0, 1.0)
        assert (row["arena/promoted"] == 1.0) == (row["arena/score"] >= 0.55)
    eval_rows = [r for r in rows if "eval/vs_random" in r]
    assert [r["iteration"] for r in eval_rows] == [3]
    assert 0.0 <= eval_rows[0]["eval/vs_one_ply"] <= 1.0
    assert all("value_error" in r for r in rows)

    abstract = jax.eval_shape(trainer.init, jax.random.key(0))
    with Checkpointer(run) as checkpointer:
        final, _ = checkpointer.restore(abstract, 4)
    same = [
        np.array_equal(x, y)
        for x, y in zip(
            jax.tree.leaves(final.params), jax.tree.leaves(final.best_params), strict=True
        )
    ]
    assert all(same) == bool(arena_rows[-1]["arena/promoted"])  # a promotion copies the learner
