"""A researcher's own game, network and PUCT rule, each in a file of their own, train through
make_trainer, jaxzero.train and the CLI, compile once, and their runs load in eval, play
and report; what cannot be rebuilt says in one line what to pass."""

from __future__ import annotations

import dataclasses
import sys
import textwrap

import jax
import pytest
from typer.testing import CliRunner

import envs
import jaxzero
from jaxzero.cli import app
from jaxzero.core.config import NetworkConfig, apply_overrides
from jaxzero.run.agents.agent_files import model_card
from jaxzero.run.life.checkpoint import CheckpointError

runner = CliRunner()

GAME = '''
"""Connect Three on a 4 x 3 board: drop a piece in a column, three in a line wins."""
import itertools

import jax.numpy as jnp
import numpy as np

from envs.core import Env, State, state_dataclass

ROWS, COLS = 3, 4
LINES = np.array([
    [(r + i * dr) * COLS + c + i * dc for i in range(3)]
    for r, c in itertools.product(range(ROWS), range(COLS))
    for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1))
    if 0 <= r + 2 * dr < ROWS and 0 <= c + 2 * dc < COLS
])


@state_dataclass
class ConnectThreeState(State):
    board: jnp.ndarray  # int32 [12], row-major from the top: -1 empty, else the player


class ConnectThree(Env):
    id = "connect_three"
    num_actions = COLS
    observation_shape = (ROWS, COLS, 2)
    max_steps = ROWS * COLS

    def _init(self, key):
        board = jnp.full(ROWS * COLS, -1, jnp.int32)
        return self._state(board, jnp.int32(0), jnp.zeros(2), jnp.bool_(False))

    def _step(self, state, action, key):
        mover = state.current_player
        column = state.board.reshape(ROWS, COLS)[:, action]
        row = jnp.max(jnp.where(column < 0, jnp.arange(ROWS), -1))
        board = state.board.at[row * COLS + action].set(mover)
        won = (board[LINES] == mover).all(axis=1).any()
        rewards = jnp.where(won, jnp.where(jnp.arange(2) == mover, 1.0, -1.0), 0.0)
        return self._state(board, 1 - mover, rewards, won | (board >= 0).all())

    def _state(self, board, player, rewards, done):
        return ConnectThreeState(
            current_player=player,
            observation=self._planes(board, player),
            legal_action_mask=board[:COLS] < 0,
            rewards=rewards.astype(jnp.float32),
            terminated=done,
            truncated=jnp.bool_(False),
            step_count=jnp.int32(0),
            board=board,
        )

    def _observe(self, state, player):
        return self._planes(state.board, player)

    def _planes(self, board, player):
        return jnp.stack([board == player, board == 1 - player], -1).reshape(ROWS, COLS, 2)
'''

NETWORK = '''
"""A two-layer perceptron of my own."""
import flax.linen as nn
import jax.numpy as jnp


class TinyNet(nn.Module):
    num_actions: int
    width: int = 8

    @nn.compact
    def __call__(self, observation):
        x = observation.astype(jnp.float32).reshape(observation.shape[0], -1)
        x = nn.relu(nn.Dense(self.width)(x))
        return nn.Dense(self.num_actions)(x), jnp.tanh(nn.Dense(1)(x)[:, 0])
'''

RULE = '''
"""PUCT with a constant exploration weight: a variant in mctx's selection signature."""
import jax
import jax.numpy as jnp
import mctx


def constant_c(rng_key, tree, node_index, depth):
    visits = tree.children_visits[node_index]
    prior = jax.nn.softmax(tree.children_prior_logits[node_index])
    q = mctx.qtransform_by_parent_and_siblings(tree, node_index)
    score = q + 2.0 * prior * jnp.sqrt(visits.sum() + 1.0) / (visits + 1.0)
    illegal = (depth == 0) & (tree.root_invalid_actions > 0)  # [A]: the root's mask
    return jnp.argmax(jnp.where(illegal | (prior <= 0), -jnp.inf, score)).astype(jnp.int32)


def make(config):
    """A factory for search.kind=myrule:make or an entry point."""
    from jaxzero import PuctSearch

    return PuctSearch.from_config(config).replace(interior_selection=constant_c)
'''

TINY = {
    "selfplay.batch_size": 8,
    "selfplay.moves_per_iteration": 3,
    "replay.capacity": 256,
    "replay.min_size": 16,
    "optim.minibatch_size": 16,
    "optim.updates_per_iteration": 2,
    "evaluation.simulations": 4,
    "evaluation.every": 0,
    "train.log_every": 1,
    "train.checkpoint_every": 2,
}


@pytest.fixture(scope="module")
def user_dir(tmp_path_factory):
    """The researcher's folder: three files of theirs, importable from where they work."""
    folder = tmp_path_factory.mktemp("researcher")
    for name, text in (("mygame", GAME), ("mynet", NETWORK), ("myrule", RULE)):
        (folder / f"{name}.py").write_text(textwrap.dedent(text))
    sys.path.insert(0, str(folder))
    yield folder
    sys.path.remove(str(folder))
    for name in ("mygame", "mynet", "myrule"):
        sys.modules.pop(name, None)


@pytest.fixture(scope="module")
def user_trainer(user_dir):
    import mygame
    import mynet
    import myrule

    env = mygame.ConnectThree()
    config = apply_overrides(jaxzero.default_config(env), TINY)
    search = jaxzero.PuctSearch(interior_selection=myrule.constant_c)
    return jaxzero.make_trainer(
        config, env=env, network=mynet.TinyNet(num_actions=4, width=8), search=search
    )


@pytest.fixture(scope="module")
def user_run(user_trainer, tmp_path_factory):
    run = tmp_path_factory.mktemp("runs") / "connect_three"
    result = jaxzero.train(run, trainer=user_trainer, iterations=2)
    assert result.iterations == 2
    return run


def test_the_game_keeps_the_contract(user_dir):
    import mygame

    envs.check_env(mygame.ConnectThree(), num_games=4)


def test_the_trainer_records_each_piece_and_compiles_once(user_trainer):
    config = user_trainer.config
    assert config.game == "mygame:ConnectThree"
    assert config.network.kind == "mynet:TinyNet"
    assert dict(config.network.args) == {}  # width is the default; num_actions the builder's
    assert (config.search.kind, config.search.interior_selection) == ("puct", "myrule:constant_c")
    state = user_trainer.init(jax.random.key(0))
    for _ in range(3):
        state, metrics, _ = user_trainer.iteration(state)
    assert user_trainer.iteration._cache_size() == 1
    assert float(metrics["updated"]) == 1.0  # the network trained


def test_the_run_rebuilds_game_network_and_rule_when_loaded(user_run, user_trainer):
    with pytest.raises(CheckpointError, match="--trust-code"):  # a folder is data
        jaxzero.load_agent(user_run)
    agent = jaxzero.load_agent(user_run, trust_code=True)
    assert agent.env.id == "connect_three" and agent.iteration == 2
    assert agent.player.policy == user_trainer.search  # the user's rule, rebuilt
    state = jax.vmap(agent.env.init)(jax.random.split(jax.random.key(1), 3))
    assert agent.act(state, jax.random.key(2)).shape == (3,)


def test_eval_play_and_report_take_the_run(user_run):
    result = runner.invoke(
        app,
        ["eval", str(user_run), "--opponents", "random", "--games", "2", "--every", "2",
         "--trust-code"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    played = runner.invoke(
        app, ["play", "--checkpoint", str(user_run), "--trust-code"], input="1\n2\n3\n4\n" * 4
    )
    assert "agent:" in played.output and "Traceback" not in played.output
    report = runner.invoke(app, ["report", str(user_run)])
    assert report.exit_code == 0, report.output
    assert (user_run / "report" / "summary.md").exists()


def test_the_exported_model_card_names_the_users_network(user_run, tmp_path):
    jaxzero.export_agent(user_run, tmp_path / "agent", trust_code=True)
    card = (tmp_path / "agent" / "MODEL_CARD.md").read_text()
    assert "- Network: `mynet:TinyNet`, " in card and "MLP of" not in card
    network = NetworkConfig(kind="mynet:ResMLP", args=(("width", 64), ("blocks", 3)))
    card = model_card(dataclasses.replace(jaxzero.default_config(envs.make("tic_tac_toe")),
                                          network=network), {"network": "ResMLP"})  # fmt: skip
    assert "- Network: `mynet:ResMLP` (width=64, blocks=3), " in card


def test_the_cli_trains_module_class_names_from_the_working_directory(user_dir, monkeypatch):
    monkeypatch.chdir(user_dir)  # found there, as `python -m` would: not on sys.path
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(user_dir)])
    for name in ("mygame", "mynet", "myrule"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    overrides = [f"{key}={value}" for key, value in TINY.items()]
    args = ["train", "mygame:ConnectThree", "network.kind=mynet:TinyNet", "search.kind=puct",
            "search.num_simulations=4", "search.interior_selection=myrule:constant_c",
            *overrides, "--iterations", "2"]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    hint = "jaxzero play --checkpoint runs/connect_three --trust-code"  # its own code
    assert hint in result.output  # and the hint works:
    played = runner.invoke(app, hint.split()[1:], input="1\n" * 12)
    assert "agent:" in played.output and "unknown game" not in played.output


def test_what_cannot_be_imported_asks_for_the_object(user_run, user_trainer, tmp_path):
    config = user_trainer.config
    moved = dataclasses.replace(
        config, network=dataclasses.replace(config.network, kind="gone:TinyNet")
    )
    run = tmp_path / "run"
    jaxzero.train(run, trainer=dataclasses.replace(user_trainer, config=moved), iterations=1)
    with pytest.raises(
        CheckpointError, match=r"no module named 'gone'.*load_agent\(\.\.\., network="
    ):
        jaxzero.load_agent(run, trust_code=True)
    agent = jaxzero.load_agent(run, network=user_trainer.network, trust_code=True)  # given
    assert agent.iteration == 1


def test_a_rule_no_process_can_import_is_refused_at_load_in_one_line(user_trainer, tmp_path):
    lambda_rule = jaxzero.PuctSearch(interior_selection=lambda k, t, n, d: 0)
    config = user_trainer.config
    recorded = dataclasses.replace(config, search=lambda_rule.to_config(config.search))
    assert "<lambda>" in recorded.search.interior_selection
    run = tmp_path / "run"
    jaxzero.train(run, trainer=dataclasses.replace(user_trainer, config=recorded), iterations=1)
    with pytest.raises(CheckpointError, match=r"a lambda.*load_agent\(\.\.\., search=\.\.\.\)"):
        jaxzero.load_agent(run, trust_code=True)


def test_a_policy_round_trips_through_the_config_it_records(user_dir):
    import myrule

    from jaxzero.core.config import SearchConfig
    from jaxzero.core.policies import make_search

    puct = jaxzero.PuctSearch(q_bound=1.0, interior_selection=myrule.constant_c)
    assert make_search(puct.to_config(SearchConfig())) == puct
    gumbel = jaxzero.GumbelSearch(gumbel_scale=0.5)
    assert make_search(gumbel.to_config(puct.to_config(SearchConfig()))) == gumbel
    with pytest.raises(ValueError, match="Gumbel selects at the root by sequential halving"):
        make_search(SearchConfig(kind="gumbel", root_selection="myrule:constant_c"))


def test_registered_installed_and_imported_searches_are_names(user_dir, monkeypatch):
    from importlib import metadata

    import myrule

    from jaxzero.core import policies
    from jaxzero.core.config import SearchConfig

    monkeypatch.setattr(policies, "_SEARCHES", dict(policies._SEARCHES))
    jaxzero.register_search("constant_c", myrule.make)
    point = metadata.EntryPoint("installed_c", "myrule:make", policies.ENTRY_POINTS)
    monkeypatch.setattr(policies, "_entry_points", lambda: {"installed_c": point})
    assert {"constant_c", "installed_c", "gumbel", "puct"} <= set(policies.search_kinds())
    for kind in ("constant_c", "installed_c", "myrule:make"):
        policy = policies.make_search(SearchConfig(kind=kind, num_simulations=5))
        assert policy.interior_selection is myrule.constant_c
    with pytest.raises(ValueError, match="a search name is a plain word"):
        jaxzero.register_search("a:b", myrule.make)


def test_a_registered_network_is_a_name(user_dir, monkeypatch):
    import mynet

    from jaxzero.core import networks
    from jaxzero.core.config import NetworkConfig

    monkeypatch.setattr(networks, "_NETWORKS", dict(networks._NETWORKS))
    jaxzero.register_network("tiny", lambda config, env: mynet.TinyNet(env.num_actions))
    network = jaxzero.make_network(NetworkConfig(kind="tiny"), envs.make("tic_tac_toe"))
    assert network == mynet.TinyNet(9)


def test_default_config_follows_the_game():
    from score_game import ScoreGame

    board = jaxzero.default_config(envs.make("tic_tac_toe"))
    assert board.game == "tic_tac_toe" and board.network.kind == "resnet"
    assert board.replay.augment and board.search.kind == "gumbel"
    assert board.search.num_simulations == 16 and board.search.max_num_considered_actions == 9
    flat = jaxzero.default_config(envs.make("star_duel_short"))
    assert flat.game == "star_duel_short" and flat.network.kind == "mlp"
    solo = jaxzero.default_config(ScoreGame())
    assert solo.network.value_head == "categorical" and solo.evaluation.every == 0
