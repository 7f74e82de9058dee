"""The pgx bridge: every pgx game is built or refused in one line, the bridge is pgx move
for move, its symmetry groups commute with pgx's rules, a tiny training iteration runs
through it, and our own envs run inside pgx's utilities."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pgx
import pgx.experimental
import pytest
from conftest import tiny_config

import envs
from envs import symmetry, testing
from envs.pgx import PgxEnv
from jaxzero.core.config import config_to_dict
from jaxzero.run.life.checkpoint import Checkpointer

# Every id pgx 2.6 offers: what the bridge does with it.
TABLE = {
    "2048": "built",
    "animal_shogi": "built",
    "backgammon": "built",
    "chess": "built",
    "connect_four": "built",
    "gardner_chess": "built",
    "go_9x9": "built",
    "go_19x19": "built",
    "hex": "built",
    "kuhn_poker": "hidden information",
    "leduc_holdem": "hidden information",
    "minatar-asterix": "built",
    "minatar-breakout": "built",
    "minatar-freeway": "built",
    "minatar-seaquest": "built",
    "minatar-space_invaders": "built",
    "othello": "built",
    "shogi": "built",
    "sparrow_mahjong": "hidden information",
    "tic_tac_toe": "built",
}


def test_every_pgx_game_is_built_or_refused_in_one_line():
    assert set(pgx.available_envs()) <= set(TABLE), "a pgx game the table does not know"
    for game_id in pgx.available_envs():
        if TABLE[game_id] == "built":
            env = envs.make(f"pgx/{game_id}")
            assert isinstance(env, PgxEnv) and env.id == f"pgx/{game_id}"
            assert f"pgx/{game_id}" in envs.available()
        else:
            with pytest.raises(ValueError, match=TABLE[game_id]) as refused:
                envs.make(f"pgx/{game_id}")
            assert "\n" not in str(refused.value)
    with pytest.raises(ValueError, match="pgx has no game 'no_such_game'"):
        envs.make("pgx/no_such_game")


@pytest.mark.parametrize(
    "game_id", ["othello", "hex", "backgammon", "animal_shogi", "2048", "minatar-breakout"]
)
def test_the_bridge_is_pgx_move_for_move(game_id):
    """Same keys, same random legal actions: same observations, masks, rewards, movers."""
    theirs = pgx.make(game_id)
    ours = envs.make(f"pgx/{game_id}")
    batch, steps = 4, 48

    def play(key):
        keys = jax.random.split(key, batch)
        a, b = jax.vmap(theirs.init)(keys), jax.vmap(ours.init)(keys)

        def step(carry, key):
            a, b = carry
            k_act, k_step = jax.random.split(key)
            action = pgx.experimental.act_randomly(k_act, a.legal_action_mask)
            step_keys = jax.random.split(k_step, batch)
            a, b = (
                jax.vmap(theirs.step)(a, action, step_keys),
                jax.vmap(ours.step)(b, action, step_keys),
            )
            fields = ("observation", "legal_action_mask", "rewards", "terminated", "current_player")
            return (a, b), [(getattr(a, f), getattr(b, f)) for f in fields] + [
                (a._step_count, b.step_count)
            ]

        return jax.lax.scan(step, (a, b), jax.random.split(key, steps))[1]

    pairs = jax.device_get(jax.jit(play)(jax.random.key(7)))
    for theirs_field, ours_field in pairs:
        np.testing.assert_array_equal(ours_field, theirs_field)
    terminated = pairs[3][0]
    if game_id == "othello":  # random play ends no othello game in 48 moves; hex often
        assert not terminated.any()


@pytest.mark.parametrize("game_id", ["othello", "hex"])
def test_the_symmetry_groups_commute_with_pgx_rules(game_id):
    env = envs.make(f"pgx/{game_id}")
    assert env.symmetries.size == {"othello": 4, "hex": 2}[game_id]
    testing.check_symmetries(env, num_games=4)


def test_a_wrong_group_is_caught():
    """The check can fail: hex's transpose swaps which sides each player joins."""
    env = envs.make("pgx/hex")
    group = symmetry.dihedral(11, extra_actions=1)
    env.symmetries = symmetry.Symmetries(
        group.observation_index[[0, 4]], group.action_index[[0, 4]]
    )
    with pytest.raises(AssertionError):
        testing.check_symmetries(env, num_games=4)


@pytest.mark.parametrize("game_id", ["othello", "backgammon", "2048", "minatar-breakout"])
def test_the_contract_holds_through_the_bridge(game_id):
    # For 2048 and backgammon this includes check_chance: the listed chance events are
    # pgx's step, key by key.
    testing.check_env(envs.make(f"pgx/{game_id}"), num_games=4)


def test_minatar_without_its_package_says_how_to_get_it(monkeypatch):
    def make(game_id, **kwargs):  # pgx's make, as it fails without pgx-minatar
        raise ModuleNotFoundError("No module named 'pgx_minatar'")

    monkeypatch.setattr(pgx, "make", make)
    with pytest.raises(ImportError, match=r"pip install 'jaxzero\[minatar\]'") as missing:
        envs.make("pgx/minatar-breakout")
    assert "\n" not in str(missing.value) and "GPL-3.0" in str(missing.value)


def test_a_wrong_chance_distribution_is_caught():
    class TilesSwapped(PgxEnv):  # a 4 as likely as pgx's 2, and the other way round
        def _chance_probs(self, state, action):
            return super()._chance_probs(state, action).reshape(16, 2)[:, ::-1].reshape(32)

    with pytest.raises(AssertionError, match="not as frequent as chance_probs says"):
        testing.check_chance(TilesSwapped(pgx.make("2048"), max_steps=1000), num_positions=8)


@pytest.mark.parametrize(
    "game_id, chance_nodes",
    [("othello", False), ("backgammon", False), ("2048", False), ("backgammon", True),
     ("2048", True), ("minatar-breakout", False)],
)  # fmt: skip
def test_a_tiny_iteration_compiles_once_runs_and_checkpoints(
    game_id, chance_nodes, tmp_path, trainers
):
    config = tiny_config(f"pgx/{game_id}", network__kind="mlp")
    if game_id in ("2048", "minatar-breakout"):  # the preset's categorical head; games
        config = tiny_config(f"pgx/{game_id}", selfplay__moves_per_iteration=60)  # that finish
    if chance_nodes:  # explicit chance nodes, with the other search than the preset's
        config = dataclasses.replace(
            config, search=dataclasses.replace(config.search, chance_nodes=True, kind="puct")
        )
    trainer = trainers(config)
    state = trainer.init(jax.random.key(0))
    rows = []
    for _ in range(3):
        state, metrics, _ = trainer.iteration(state)
        rows.append(jax.device_get(metrics))
    assert trainer.iteration._cache_size() == 1
    assert all(np.isfinite(v) for v in rows[-1].values()), rows[-1]
    if game_id == "2048":  # the targets are scores: positive, beyond a tanh head's range
        assert sum(r["game_return"] * r["games_finished"] for r in rows) > 0
        written = np.asarray(state.replay.written)
        assert np.asarray(state.replay.value_target)[written].max() > 1.0
    if game_id == "minatar-breakout":  # single-player: finished games, no negative score
        assert sum(r["games_finished"] for r in rows) > 0
        written = np.asarray(state.replay.value_target)[np.asarray(state.replay.written)]
        assert written.size and written.min() >= 0.0
    # The bridge's state (pgx's inside) saves and restores: orbax refuses zero-size arrays.
    with Checkpointer(tmp_path) as checkpointer:
        checkpointer.save(3, state, config_to_dict(config))
        restored, _ = checkpointer.restore(jax.eval_shape(lambda: state))
    for a, b in zip(jax.tree.leaves(restored), jax.tree.leaves(state), strict=True):
        np.testing.assert_array_equal(a, b)


def test_our_envs_run_inside_pgx_utilities():
    """pgx's auto_reset and act_randomly drive our Connect Four unchanged."""
    env = envs.make("connect_four")
    step = jax.vmap(pgx.experimental.auto_reset(env.step, env.init))
    batch = 8

    def play(key):
        state = jax.vmap(env.init)(jax.random.split(key, batch))

        def move(state, key):
            k_act, k_step = jax.random.split(key)
            action = pgx.experimental.act_randomly(k_act, state.legal_action_mask)
            state = step(state, action, jax.random.split(k_step, batch))
            return state, state.terminated

        return jax.lax.scan(move, state, jax.random.split(key, 100))

    state, terminated = jax.jit(play)(jax.random.key(0))
    assert terminated.any()  # games ended and were reset
    assert int(jnp.max(state.step_count)) < 42


def test_render_draws_the_board_games_and_names_the_mover_in_all():
    othello = envs.make("pgx/othello")
    picture = othello.render(jax.jit(othello.init)(jax.random.key(0))).splitlines()
    assert len(picture) == 9 and picture[3].split().count("X") + picture[3].split().count("O") == 2
    assert picture[-1] == "step 0, player 0 to move (X)"
    backgammon = envs.make("pgx/backgammon")
    assert backgammon.render(jax.jit(backgammon.init)(jax.random.key(0))).startswith("step 0")
    game = envs.make("pgx/2048")
    state = jax.jit(game.init)(jax.random.key(0))
    picture = game.render(state).splitlines()
    board = np.asarray(state.pgx._board).reshape(4, 4)  # pgx's exponents, 0 empty
    expected = [[str(2**e) if e else "." for e in row] for row in board]
    assert [row.split() for row in picture[:4]] == expected and picture[-1] == "step 0"
