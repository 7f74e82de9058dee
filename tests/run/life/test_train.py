"""The driver: bit-exact resume, safe checkpoints, Ctrl-C, agents, play and report."""

import io
import json
import os
import shutil
import signal

import jax
import numpy as np
import pytest
from helpers import restored_state

from jaxzero.core.config import apply_overrides
from jaxzero.core.networks import SymmetryAveraged
from jaxzero.play import join_moves, play_game
from jaxzero.run.agents.agent import load_agent, parse_settings
from jaxzero.run.life.checkpoint import Checkpointer, CheckpointError
from jaxzero.run.life.driver import load_run_config
from jaxzero.run.reports.report import write_report


@pytest.fixture(scope="module")
def config(ttt_config):
    return ttt_config


@pytest.fixture
def straight_run(tiny_run):
    """The session's 4-iteration run of ``config`` (checkpoints 2 and 4), never modified."""
    return tiny_run


def _metrics(run):
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    return [
        {k: v for k, v in r.items() if k not in ("elapsed", "positions_per_second")} for r in rows
    ]


def test_resume_is_bit_exact(tmp_path, config, straight_run, train_run, trainers):
    run = tmp_path / "run"
    assert train_run(run, config, iterations=2).iterations == 2
    result = train_run(run, resume=True, iterations=4)
    assert result.iterations == 4
    a, b = restored_state(straight_run, trainers(config)), restored_state(run, trainers(config))
    assert int(a.iteration) == int(b.iteration) == 4
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    assert _metrics(run) == _metrics(straight_run)


def test_interrupt_saves_a_checkpoint(tmp_path, config, train_run):
    def stop_at_three(metrics):
        if metrics["iteration"] == 3:
            raise KeyboardInterrupt

    result = train_run(tmp_path / "run", config, iterations=10, on_log=stop_at_three)
    assert result.interrupted and result.iterations == 3
    with Checkpointer(tmp_path / "run") as checkpointer:
        assert checkpointer.latest_step() == 3


def test_sigterm_stops_like_ctrl_c(tmp_path, config, train_run):
    def terminate_at_two(metrics):
        if metrics["iteration"] == 2:
            os.kill(os.getpid(), signal.SIGTERM)

    result = train_run(tmp_path / "run", config, iterations=10, on_log=terminate_at_two)
    assert result.interrupted and result.iterations == 2
    assert train_run(tmp_path / "run", resume=True, iterations=3).iterations == 3
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_unfinished_save_is_ignored_and_corrupt_checkpoint_is_explained(
    tmp_path, straight_run, train_run
):
    run = tmp_path / "run"
    shutil.copytree(straight_run, run)
    # a save that crashed halfway leaves orbax's temporary folder, never a listed step
    (run / "checkpoints" / "6.orbax-checkpoint-tmp-1").mkdir()
    (run / "checkpoints" / "6.orbax-checkpoint-tmp-1" / "junk").write_text("half")
    with Checkpointer(run) as checkpointer:
        assert checkpointer.latest_step() == 4
    for path in (run / "checkpoints" / "4" / "state").rglob("*"):
        if path.is_file():
            path.write_bytes(b"garbage")
    with pytest.raises(CheckpointError, match="checkpoint 4 .* is damaged"):
        train_run(run, resume=True, iterations=5)
    with pytest.raises(CheckpointError, match="checkpoint 4 .* is damaged"):
        load_agent(run)
    with Checkpointer(run) as checkpointer:
        assert checkpointer.steps() == [2, 4]  # nothing deleted, nothing restarted


def test_agent_plays_through_a_pipe(straight_run, trainers):
    agent = load_agent(straight_run)
    assert agent.iteration == 4 and agent.config.game == "tic_tac_toe"
    again = load_agent(straight_run / "checkpoints" / "2")
    assert again.iteration == 2
    full = restored_state(
        straight_run, trainers(agent.config), 2
    )  # the agent reads only its parameters
    jax.tree.map(np.testing.assert_array_equal, again.params, full.best_params)
    moves = "\n".join(["0", "ten", "5", "5", *[str(c) for c in range(1, 10)]]) + "\n"
    out = io.StringIO()
    reward = play_game(agent, agent.search_player(4), human=0, stdin=io.StringIO(moves), stdout=out)
    text = out.getvalue()
    assert "legal moves: 1 2 3 4 5 6 7 8 9\n" in text
    assert join_moves(["play scout", "end"]) == "play scout, end"  # star_duel's moves
    assert "invalid move: '0' is not a cell" in text
    assert "invalid move: 'ten' is not a cell" in text
    assert "illegal move: 5 is not legal here" in text
    assert "jaxzero plays" in text and "game over" in text
    assert reward in (-1.0, 0.0, 1.0)


def test_agent_plays_with_tree_reuse_through_a_pipe(straight_run):
    """``--set search.reuse_tree=true``: the agent's search goes on from its tree between
    moves (the human's replies carry it too), and the game plays out as without reuse."""
    agent = load_agent(straight_run, settings={"search.reuse_tree": "true"})
    player = agent.search_player(4)
    assert player.reuses_tree and not load_agent(straight_run).player.reuses_tree
    moves = "\n".join(str(c) for c in range(1, 10)) + "\n"
    out = io.StringIO()
    reward = play_game(agent, player, human=1, stdin=io.StringIO(moves), stdout=out)
    assert "jaxzero plays" in out.getvalue() and "game over" in out.getvalue()
    assert reward in (-1.0, 0.0, 1.0)
    assert player.jitted_act._cache_size() == 1 and player.jitted_carry._cache_size() == 1


def test_load_agent_takes_search_settings_only(straight_run):
    """A trained agent can play with another search (here: averaged over tic-tac-toe's 8
    symmetries), never with another network; the settings parse from KEY=VALUE text."""
    settings = parse_settings(["evaluation.average_symmetries=true", "evaluation.simulations=8"])
    agent = load_agent(straight_run, settings=settings)
    assert agent.config.evaluation.average_symmetries and agent.config.evaluation.simulations == 8
    assert agent.player.num_simulations == 8
    assert isinstance(agent.apply_fn, SymmetryAveraged)
    states = jax.vmap(agent.env.init)(jax.random.split(jax.random.key(0), 2))
    assert agent.act(states, jax.random.key(1)).shape == (2,)
    with pytest.raises(ValueError, match="'network.hidden_size' cannot change for a trained agent"):
        load_agent(straight_run, settings={"network.hidden_size": 4})
    with pytest.raises(ValueError, match="is not KEY=VALUE"):
        parse_settings(["search.kind"])


def test_load_agent_explains_a_wrong_path(tmp_path):
    with pytest.raises(CheckpointError, match="does not exist"):
        load_agent(tmp_path / "missing")
    with pytest.raises(CheckpointError, match="neither a run directory"):
        load_agent(tmp_path)


def test_report_writes_figures(tmp_path, straight_run):
    run = tmp_path / "run"
    shutil.copytree(straight_run, run)
    out = write_report(run)
    assert (out / "losses.png").stat().st_size > 1000
    summary = (out / "summary.md").read_text()
    assert "policy_loss" in summary and "![losses.png](losses.png)" in summary


def test_checkpointer_keeps_the_newest_and_every_kth(tmp_path):
    import jax.numpy as jnp

    with Checkpointer(tmp_path, keep_every=4) as checkpointer:
        for step in range(1, 12):
            checkpointer.save(step, {"step": jnp.int32(step)}, {})
        assert checkpointer.steps() == [4, 8, 9, 10, 11]


def test_zero_size_arrays_save_and_restore(tmp_path):
    """orbax refuses zero-size arrays (pgx's MinAtar asterix holds one): they are stored as
    one element and come back empty, with the other arrays intact."""
    import flax.struct
    import jax.numpy as jnp

    @flax.struct.dataclass
    class State:
        counts: jax.Array
        unused: jax.Array

    state = State(counts=jnp.arange(6, dtype=jnp.int32).reshape(2, 3), unused=jnp.ones((2, 0)))
    with Checkpointer(tmp_path) as checkpointer:
        checkpointer.save(1, state, {"game": "x"})
        restored, config = checkpointer.restore(jax.eval_shape(lambda: state))
    assert config == {"game": "x"} and restored.unused.shape == (2, 0)
    assert restored.unused.dtype == jnp.float32
    np.testing.assert_array_equal(restored.counts, state.counts)


def test_keep_every_must_be_a_multiple_of_the_checkpoint_interval(config):
    """Settings the driver cannot honour fail when the config is built, before any run."""
    with pytest.raises(ValueError, match="make it a multiple of 2"):
        apply_overrides(config, {"train.keep_every": 3})  # checkpoint_every is 2
    for key, value, message in [
        ("selfplay.root_value_weight", 1.5, "must be between 0 and 1"),
        ("selfplay.opening_plies", -1, "must be >= 0"),
    ]:
        with pytest.raises(ValueError, match=message):
            apply_overrides(config, {key: value})


def test_a_checkpoint_of_another_layout_is_not_resumed_but_still_plays(
    tmp_path, straight_run, train_run, trainers
):
    """A run saved by a jaxzero whose TrainState had other fields: resuming says so in one
    line and touches nothing; the agent (parameters only) still loads."""
    run = tmp_path / "run"
    shutil.copytree(straight_run, run)
    abstract = jax.eval_shape(trainers(load_run_config(run)).init, jax.random.key(0))
    with Checkpointer(run) as checkpointer:
        state = checkpointer.restore(abstract, 4)[0]
        fewer = dict(state.selfplay.__dict__)
        del fewer["root_value"], fewer["tree"]  # as saved before self-play kept root values
        older = {f: getattr(state, f) for f in state.__dataclass_fields__}
        older["selfplay"], older["iteration"] = fewer, jax.numpy.int32(6)  # its step's
        checkpointer.save(6, older, json.loads((run / "config.json").read_text()))
    with pytest.raises(
        CheckpointError,
        match="checkpoint 6 .* another jaxzero version "
        r"\(missing selfplay.root_value\)",
    ):
        train_run(run, resume=True, iterations=8)
    assert load_agent(run).iteration == 6
    with Checkpointer(run) as checkpointer:
        assert checkpointer.steps() == [2, 4, 6]


def test_a_checkpoint_from_before_value_returns_resumes_exactly(tmp_path, straight_run, trainers):
    """A run saved before self-play kept each position's return so far (915681f): its
    games paid nothing before their last move, so the missing returns are zeros, and the
    restored state is the state that was saved, leaf for leaf."""
    run = tmp_path / "run"
    shutil.copytree(straight_run, run)
    abstract = jax.eval_shape(trainers(load_run_config(run)).init, jax.random.key(0))
    with Checkpointer(run) as checkpointer:
        state = checkpointer.restore(abstract, 4)[0]
        assert not np.asarray(state.selfplay.value_return).any()  # mid-game: nothing yet
        fewer = dict(state.selfplay.__dict__)
        del fewer["value_return"], fewer["tree"]  # as saved before either existed
        older = {f: getattr(state, f) for f in state.__dataclass_fields__}
        older["selfplay"], older["iteration"] = fewer, jax.numpy.int32(6)  # its step's
        checkpointer.save(6, older, json.loads((run / "config.json").read_text()))
        restored = checkpointer.restore(abstract, 6)[0]
    state = state.replace(iteration=jax.numpy.int32(6))
    assert type(restored.selfplay) is type(state.selfplay)
    for a, b in zip(jax.tree.leaves(restored), jax.tree.leaves(state), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_the_summary_leads_with_each_measurement_of_strength_at_its_iteration(tmp_path):
    # A run that stopped between evaluations: its last row has no eval/..., which the
    # summary read from that row alone and so left out.
    rows = [
        {"iteration": 10, "elapsed": 1.0, "policy_loss": 1.5, "eval/raw_optimal": 0.875},
        {"iteration": 15, "elapsed": 2.0, "policy_loss": 1.25},
    ]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    summary = (write_report(tmp_path) / "summary.md").read_text()
    table = [line for line in summary.splitlines() if line.startswith("| ")]
    assert table[1:] == ["| eval/raw_optimal | 0.875 | 10 |", "| policy_loss | 1.25 | 15 |"]
