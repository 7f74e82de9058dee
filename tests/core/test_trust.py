"""A folder is data: loading a run or an agent someone sent you imports nothing it names
(a ``module:attribute`` game, network or search function) unless the user allows it on
this call (``--trust-code``, ``trust_code=``, typing the path, or passing the object)."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from jaxzero.cli import app
from jaxzero.core import networks
from jaxzero.core.config import config_to_dict
from jaxzero.core.presets import get_preset
from jaxzero.core.trust import UntrustedCode, check_trusted, imported_code
from jaxzero.run.agents import agent_files
from jaxzero.run.agents.agent import load_agent
from jaxzero.run.folder import manifest
from jaxzero.run.life.checkpoint import CheckpointError
from jaxzero.run.life.driver import RunDirError, train

runner = CliRunner()

# A module that leaves a mark when imported, and whose Net is the shipped agent's network.
PLANTED = """
from pathlib import Path
Path(__file__).with_name("IMPORTED").write_text("ran")
from jaxzero.core.networks import MLP

class Net(MLP):
    hidden_size: int = 128
    num_layers: int = 2

def rule(key, tree, node, depth):
    raise AssertionError("never called")
"""


def _agent_folder(tmp_path: Path, plant: str = "", **changes: str) -> Path:
    """The shipped tic-tac-toe agent copied, its config.json given ``changes`` (dotted
    keys), agent.json's game kept alike, checksums rewritten as anyone can; ``plant``:
    a module of that name beside it."""
    folder = tmp_path / "gift"
    shutil.copytree(agent_files.shipped_agent("tic_tac_toe"), folder)
    config = json.loads((folder / "config.json").read_text())
    for key, value in changes.items():
        section, _, name = key.rpartition(".")
        (config[section] if section else config)[name] = value
    (folder / "config.json").write_text(json.dumps(config))
    facts = json.loads((folder / "agent.json").read_text())
    facts["game"] = config["game"]
    (folder / "agent.json").write_text(json.dumps(facts))
    agent_files.write_checksums(folder)
    if plant:
        (folder / f"{plant}.py").write_text(PLANTED)
    return folder


@pytest.fixture
def planted(tmp_path, monkeypatch):
    """An agent folder naming ``evil_net:Net`` with evil_net.py beside it, the working
    directory inside it (where an import would look last); the module forgotten after."""
    folder = _agent_folder(tmp_path, "evil_net", **{"network.kind": "evil_net:Net"})
    monkeypatch.chdir(folder)
    yield folder
    sys.modules.pop("evil_net", None)
    while str(folder) in sys.path:
        sys.path.remove(str(folder))


def test_a_folder_naming_a_network_module_imports_nothing(planted):
    with pytest.raises(CheckpointError, match=r"network\.kind=evil_net:Net.*--trust-code"):
        load_agent(planted)
    assert not (planted / "IMPORTED").exists() and "evil_net" not in sys.modules


def test_the_trust_flag_or_the_object_itself_makes_it_load(planted):
    mine = networks.MLP(num_actions=9, hidden_size=128, num_layers=2)
    assert load_agent(planted, network=mine).iteration == 600  # the object: no import
    assert not (planted / "IMPORTED").exists()
    assert load_agent(planted, trust_code=["evil_net:Net"]).iteration == 600  # that path
    assert (planted / "IMPORTED").exists()
    assert load_agent(planted, trust_code=True).iteration == 600


def test_every_command_refuses_the_folder_in_one_line(planted, tmp_path):
    for args in (
        ["play", "--checkpoint", "."],
        ["analyze", "tic_tac_toe", "--checkpoint", "."],
        ["eval", ".", "--games", "2"],
        ["gtp", "--checkpoint", "."],
    ):
        result = runner.invoke(app, args, input="")
        assert result.exit_code == 2, (args, result.output)
        last = result.output.strip().splitlines()[-1]
        assert last.startswith("error:") and "--trust-code" in last, (args, last)
    assert not (planted / "IMPORTED").exists() and "evil_net" not in sys.modules


def test_a_search_function_named_by_a_folder_is_not_imported(tmp_path, monkeypatch):
    folder = _agent_folder(
        tmp_path,
        "evil_rule",
        **{"search.kind": "puct", "search.interior_selection": "evil_rule:rule"},
    )
    monkeypatch.chdir(folder)
    with pytest.raises(CheckpointError, match=r"search\.interior_selection=evil_rule:rule"):
        load_agent(folder)
    assert not (folder / "IMPORTED").exists()


def test_a_runs_folder_in_the_working_directory_imports_nothing(tmp_path, monkeypatch):
    """`jaxzero play tic_tac_toe` plays the user's own runs/tic_tac_toe when there is
    one: read as data, like any folder, whatever its config names."""
    folder = _agent_folder(tmp_path, "evil_game", game="evil_game:Game")
    (tmp_path / "runs").mkdir()
    folder.rename(tmp_path / "runs" / "tic_tac_toe")
    shutil.move(tmp_path / "runs" / "tic_tac_toe" / "evil_game.py", tmp_path / "evil_game.py")
    monkeypatch.chdir(tmp_path)
    for command in ("play", "analyze"):
        result = runner.invoke(app, [command, "tic_tac_toe"], input="")
        assert result.exit_code == 2, result.output
        assert "game=evil_game:Game" in result.output.strip().splitlines()[-1]
    assert not (tmp_path / "IMPORTED").exists() and "evil_game" not in sys.modules


@pytest.mark.parametrize("game", ["os:abort", "code:interact"])
def test_a_game_naming_a_standard_module_neither_kills_nor_opens_a_console(tmp_path, game):
    folder = _agent_folder(tmp_path, game=game)
    for command in (["play", "--checkpoint", str(folder)], ["gtp", "--checkpoint", str(folder)]):
        done = subprocess.run(
            [sys.executable, "-m", "jaxzero", *command],
            input="1\nprint('console')\n",
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 2, (command, done.returncode, done.stderr[-500:])
        assert done.stderr.strip().splitlines()[-1].startswith("error:")
        assert f"game={game}" in done.stderr and "Traceback" not in done.stderr
        assert "console" not in done.stdout


def test_resume_imports_no_game_the_run_folder_names(tmp_path, monkeypatch):
    run = tmp_path / "run"
    run.mkdir()
    manifest.start(run)  # a run as jaxzero writes one, its config then edited
    config = config_to_dict(get_preset("tic_tac_toe")) | {"game": "evil_game:Game"}
    (run / "config.json").write_text(json.dumps(config))
    (tmp_path / "evil_game.py").write_text(PLANTED)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(RunDirError, match="game=evil_game:Game"):
        train(run, resume=True)
    result = runner.invoke(app, ["train", "--resume", "--out", str(run)])
    assert result.exit_code == 2 and "--trust-code" in result.output.splitlines()[-1]
    assert not (tmp_path / "IMPORTED").exists() and "evil_game" not in sys.modules


def test_registered_names_are_no_code_and_typed_paths_are_allowed():
    config = get_preset("tic_tac_toe")
    assert imported_code(config) == {}
    check_trusted(config, "config.json")  # the built-ins: nothing to trust
    mine = dataclasses.replace(config, game="mygames:Game")
    assert imported_code(mine) == {"game": "mygames:Game"}
    check_trusted(mine, "config.json", trust_code=["mygames:Game"])  # typed on this call
    check_trusted(mine, "config.json", given=["env"])  # the env passed: never imported
    with pytest.raises(UntrustedCode, match="load_agent\\(\\.\\.\\., env=\\.\\.\\.\\)"):
        check_trusted(mine, "config.json", trust_code=["other:Game"])


PATHS = st.sampled_from(["evil_a:Net", "evil_b:rule", "evil_a:Game", "os:abort", "mlp", "puct"])
FIELDS = st.sampled_from(
    ["game", "network.kind", "search.kind", "search.qtransform",
     "search.interior_selection", "search.root_selection"]
)  # fmt: skip


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
          HealthCheck.function_scoped_fixture])  # fmt: skip
@given(changes=st.dictionaries(FIELDS, PATHS, min_size=1, max_size=4))
def test_no_folder_makes_load_agent_import_anything(tmp_path_factory, monkeypatch, changes):
    """Whatever a folder's config names where code can go: load_agent loads it (built-in
    names) or refuses in one CheckpointError line; the planted modules are never imported."""
    root = tmp_path_factory.mktemp("fuzz")
    folder = _agent_folder(root, "evil_a", **changes)
    (folder / "evil_b.py").write_text(PLANTED)
    monkeypatch.chdir(folder)
    try:
        load_agent(folder)
    except CheckpointError as error:
        assert "\n" not in str(error)
    assert not (folder / "IMPORTED").exists()
    assert not {"evil_a", "evil_b"} & set(sys.modules)
