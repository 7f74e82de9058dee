"""Agent folders are checked on load as checkpoints are: checksums written at export, every
parameter's dtype, shape and finiteness, and agent.json's fields by type; each failure is
one line naming the file and what in it is wrong."""

import json
import shutil

import jax
import numpy as np
import pytest
from flax import serialization
from helpers import checkpointed_run, error_line
from typer.testing import CliRunner

from jaxzero.cli import app
from jaxzero.run.agents import agent_files
from jaxzero.run.agents.agent import export_agent, load_agent
from jaxzero.run.life.checkpoint import CheckpointError

runner = CliRunner()
CHECKED = ["agent.json", "config.json", "params.msgpack"]


@pytest.fixture(scope="module")
def exported(tmp_path_factory, ttt_config, trainers):
    """An agent folder exported from an untrained tic-tac-toe run's checkpoint 3."""
    root = tmp_path_factory.mktemp("integrity")
    run = checkpointed_run(root / "run", ttt_config, trainers(ttt_config), [3])
    export_agent(run, root / "agent")
    return root / "agent"


@pytest.fixture
def folder(exported, tmp_path):
    copy = tmp_path / "agent"
    shutil.copytree(exported, copy)
    return copy


def _rewrite_params(folder, change):
    path = folder / "params.msgpack"
    stored = serialization.msgpack_restore(path.read_bytes())
    path.write_bytes(serialization.msgpack_serialize(change(stored)))


def _rewrite_facts(folder, **changes):
    path = folder / "agent.json"
    path.write_text(json.dumps(json.loads(path.read_text()) | changes))


def test_export_writes_checksums_of_what_plays_and_they_are_checked(folder):
    listing = (folder / "checksums.sha256").read_text().splitlines()
    assert sorted(line.split("  ")[1] for line in listing) == CHECKED  # sha256sum -c reads it
    (folder / "MODEL_CARD.md").write_text("# measured later, by hand\n")  # meant to be edited
    assert load_agent(folder).iteration == 3

    _rewrite_params(folder, lambda tree: jax.tree.map(lambda x: x * 1.5, tree))  # still finite
    with pytest.raises(CheckpointError) as error:
        load_agent(folder)
    assert f"{folder / 'params.msgpack'} does not match its checksum" in str(error.value)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(config | {"seed": 7}))
    line = error_line(runner.invoke(app, ["play", "--checkpoint", str(folder)], input=""))
    assert f"{folder / 'config.json'} does not match its checksum" in line


def test_nan_parameters_are_refused_with_or_without_checksums(folder):
    _rewrite_params(folder, lambda tree: jax.tree.map(lambda x: np.full_like(x, np.nan), tree))
    with pytest.raises(CheckpointError, match="params.msgpack does not match its checksum"):
        load_agent(folder)
    (folder / "checksums.sha256").unlink(missing_ok=True)  # a folder exported before checksums
    with pytest.raises(CheckpointError) as error:
        load_agent(folder)
    message = str(error.value)
    assert f"{folder / 'params.msgpack'}: parameter params." in message
    assert "NaN or infinite" in message and "\n" not in message


def test_parameters_of_another_dtype_or_kind_are_named(folder):
    (folder / "checksums.sha256").unlink(missing_ok=True)
    original = (folder / "params.msgpack").read_bytes()
    _rewrite_params(folder, lambda tree: jax.tree.map(lambda x: x.astype(np.int64), tree))
    with pytest.raises(CheckpointError, match=r"params.msgpack: parameter params\.\S+ is int64"):
        load_agent(folder)

    def one_string(tree):
        leaves, structure = jax.tree.flatten(tree)
        return jax.tree.unflatten(structure, ["not a number", *leaves[1:]])

    (folder / "params.msgpack").write_bytes(original)
    _rewrite_params(folder, one_string)
    line = error_line(runner.invoke(app, ["play", "--checkpoint", str(folder)], input=""))
    assert "params.msgpack: parameter params." in line and "is a str, not an array" in line

    (folder / "params.msgpack").write_bytes(original)
    _rewrite_params(folder, lambda tree: jax.tree.map(lambda x: x.astype(np.float64) * 1e300, tree))
    with pytest.raises(CheckpointError, match="NaN or infinite"):  # inf once in float32
        load_agent(folder)
    (folder / "params.msgpack").write_bytes(original)
    assert load_agent(folder).iteration == 3  # an old folder without checksums still loads


@pytest.mark.parametrize(
    "field, value, expected",
    [
        ("iteration", "xxx", 'field "iteration" is "xxx", expected an integer >= 0'),
        ("iteration", True, 'field "iteration" is true, expected an integer >= 0'),
        ("iteration", -1, 'field "iteration" is -1, expected an integer >= 0'),
        ("format", True, 'field "format" is true, expected the integer 1'),
        ("format", "1", 'field "format" is "1", expected the integer 1'),
        ("game", 5, 'field "game" is 5, expected a string'),
    ],
)
def test_agent_json_fields_are_checked_by_type(folder, field, value, expected):
    (folder / "checksums.sha256").unlink(missing_ok=True)
    _rewrite_facts(folder, **{field: value})
    line = error_line(runner.invoke(app, ["play", "--checkpoint", str(folder)], input=""))
    assert f"{folder / 'agent.json'}: {expected}" in line
    with pytest.raises(CheckpointError, match="agent.json"):
        load_agent(folder)


def test_a_damaged_checksum_listing_is_named(folder):
    listing = folder / "checksums.sha256"
    lines = listing.read_text().splitlines()
    listing.write_text("\n".join(line for line in lines if "params" not in line) + "\n")
    with pytest.raises(CheckpointError, match="lists no checksum for params.msgpack"):
        load_agent(folder)
    listing.write_text("garbage\n")
    with pytest.raises(CheckpointError, match="checksums.sha256 is not a sha256sum listing"):
        load_agent(folder)


def test_every_shipped_agent_carries_checksums_that_match():
    for game in agent_files.shipped_games():
        folder = agent_files.shipped_agent(game)
        listing = (folder / "checksums.sha256").read_text().splitlines()
        assert sorted(line.split("  ")[1] for line in listing) == CHECKED, game
        agent_files.check_checksums(
            folder, dict.fromkeys(CHECKED, 1 << 30)
        )  # raises when one does not match


def test_an_export_never_removes_a_folder_it_did_not_make(tmp_path):
    import os

    from jaxzero.core.presets import get_preset

    out = tmp_path / "agent"
    theirs = tmp_path / f".agent.partial-{os.getpid()}"  # the name an export writes beside
    theirs.mkdir()
    (theirs / "notes.md").write_text("mine")
    with pytest.raises(agent_files.CheckpointError, match="cannot write the agent into"):
        agent_files.write_agent(out, get_preset("tic_tac_toe"), {}, {"game": "t"}, "card")
    assert (theirs / "notes.md").read_text() == "mine" and not out.exists()
