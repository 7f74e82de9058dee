"""Single-player games: scores of fixed players, the greedy players of othello and 2048,
the periodic evaluation's scores, and the settings a single-player run refuses."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import tiny_config
from helpers import checkpointed_run
from score_game import ScoreGame

import envs
from jaxzero.core.loop import check_game_fits
from jaxzero.core.policies import make_search
from jaxzero.measure import opponents
from jaxzero.measure.evaluation import SoloEvaluation, make_evaluation
from jaxzero.measure.solo import make_solo


def _always(action):
    return lambda params, states, key: jnp.full(states.current_player.shape, action, jnp.int32)


def test_a_fixed_player_scores_what_its_actions_pay():
    result = make_solo(ScoreGame(), _always(2), games=5)(None, jax.random.key(0))
    np.testing.assert_array_equal(result.scores, 333.0)  # 3 + 30 + 300
    np.testing.assert_array_equal(result.lengths, 3)
    assert result.interval() == (333.0, 333.0)
    random = make_solo(ScoreGame(), opponents.uniform_random(ScoreGame()), games=400)
    low, high = random(None, jax.random.key(1)).interval()
    assert low < 222.0 < high  # the mean of uniform actions: 2 + 20 + 200


def test_a_two_player_game_is_refused():
    with pytest.raises(ValueError, match="2 players"):
        make_solo(envs.make("tic_tac_toe"), _always(0), games=2)


def _random_positions(env, games: int, plies: int):
    """``games`` states after ``plies`` uniformly random moves, in one compiled loop (pgx's
    games stepped op by op take seconds a move)."""

    def ply(carry, _):
        states, keys = carry
        keys, k_move, k_step = jax.vmap(lambda k: tuple(jax.random.split(k, 3)))(keys)
        actions = jax.vmap(opponents.sample_legal)(k_move, states.legal_action_mask)
        return (jax.vmap(env.step)(states, actions, k_step), keys), None

    @jax.jit
    def play(key):
        k_init, k_play = jax.random.split(key)
        states = jax.vmap(env.init)(jax.random.split(k_init, games))
        return jax.lax.scan(ply, (states, jax.random.split(k_play, games)), length=plies)[0]

    return play(jax.random.key(0))


def _after_every_action(env, states, keys):
    """Each state stepped by every action: states with leaves [B, A, ...]."""
    actions = jnp.arange(env.num_actions)
    step_all = jax.vmap(jax.vmap(env.step, in_axes=(None, 0, None)), in_axes=(0, None, 0))
    return jax.jit(step_all)(states, actions, keys)


def test_greedy_2048_takes_the_largest_merge():
    env = envs.make("pgx/2048")
    states, keys = _random_positions(env, 64, 30)  # random positions with merges to choose
    live = ~np.asarray(states.terminated)
    chosen = jax.jit(opponents.greedy(env))(None, states, jax.random.key(2))
    after = _after_every_action(env, states, keys)  # [B, 4]
    reward = np.where(np.asarray(states.legal_action_mask), np.asarray(after.rewards[..., 0]), -1)
    got = reward[np.arange(64), np.asarray(chosen)]
    np.testing.assert_array_equal(got[live], reward.max(1)[live])
    assert (reward.max(1)[live] > 0).any(), "no position offered a merge"


def test_greedy_othello_leaves_the_mover_the_most_discs():
    env = envs.make("pgx/othello")
    states, keys = _random_positions(env, 32, 12)
    chosen = np.asarray(jax.jit(opponents.greedy(env))(None, states, jax.random.key(2)))
    after = _after_every_action(env, states, keys)  # [B, 65]
    observe = jax.jit(jax.vmap(jax.vmap(env.observe, in_axes=(0, None))))
    planes = np.asarray(observe(after, states.current_player))  # [B, A, 8, 8, 2]: mover's first
    discs = planes[..., 0].reshape(32, env.num_actions, -1).sum(-1)  # [B, A]
    legal = np.asarray(states.legal_action_mask)
    for g in np.flatnonzero(~np.asarray(states.terminated)):
        best = discs[g][legal[g]].max()
        assert legal[g, chosen[g]] and discs[g, chosen[g]] == best, (g, chosen[g], discs[g])


def test_greedy_is_refused_where_there_is_none():
    with pytest.raises(ValueError, match="no greedy player for 'connect_four'"):
        opponents.greedy(envs.make("connect_four"))


def test_the_periodic_evaluation_of_a_single_player_game_scores_three_players():
    env = ScoreGame()
    evaluation = make_evaluation(env, _always(2), ("random", "one_ply"), 4, 2)
    assert isinstance(evaluation, SoloEvaluation)
    metrics = evaluation.metrics(evaluation(None, jax.random.key(0)))
    assert metrics["eval/score"] == 333.0 and metrics["eval/greedy_score"] == 333.0
    assert set(metrics) == {"eval/score", "eval/random_score", "eval/greedy_score"}


def test_single_player_runs_refuse_a_tanh_head_and_the_gate():
    env = envs.make("pgx/2048")
    with pytest.raises(ValueError, match="set network.value_head=categorical"):
        check_game_fits(tiny_config("pgx/2048", network__value_head="tanh"), env)
    with pytest.raises(ValueError, match="set gate.enabled=false"):
        check_game_fits(tiny_config("pgx/2048", gate__enabled=True), env)
    check_game_fits(tiny_config("pgx/2048"), env)


def test_play_lets_the_agent_play_a_single_player_game_to_its_score():
    import io

    import pgx

    from jaxzero.core import networks
    from jaxzero.measure.players import evaluation_player
    from jaxzero.play import play_game
    from jaxzero.run.agents.agent import Agent

    config = tiny_config("pgx/2048")
    env = envs.from_pgx(pgx.make("2048"), max_steps=12)
    network = networks.make_network(config.network, env)
    params = networks.init_params(network, env, jax.random.key(0))
    apply_fn = networks.make_apply_fn(network)
    player = evaluation_player(config, env, apply_fn, make_search(config.search))
    agent = Agent(config, env, params, apply_fn, player, 0)
    out = io.StringIO()
    score = play_game(agent, agent.search_player(2), stdin=io.StringIO(""), stdout=out)
    text = out.getvalue()
    assert text.count("jaxzero plays") == 12 and "your move" not in text
    assert text.rstrip().endswith(f"game over (move cap reached): jaxzero scored {score:g}")


def test_eval_of_a_single_player_run_prints_scores_beside_random_and_greedy(tmp_path, trainers):
    import pgx  # noqa: F401  (the bridge's extra)
    from typer.testing import CliRunner

    from jaxzero.cli import app

    config = tiny_config("pgx/2048")
    run = checkpointed_run(tmp_path / "run", config, trainers(config), [5])
    args = ["eval", str(run), "--games", "4", "--simulations", "2"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert [line.split(":")[0] for line in lines] == ["run@5", "random", "greedy"]
    for line in lines:
        assert "mean score" in line and "over 4 games" in line and "largest tile" in line
    assert not (run / "elo.json").exists()  # no opponent, no ratings
