"""The agents shipped inside the package: small, documented, and playing from a wheel.

The wheel test builds jaxzero's wheel from a copy of the sources, installs it into a
folder of its own and, from a directory with no sources in it, loads every shipped agent
by game name and plays a legal move with it; it also asks ``jaxzero gtp`` (the shipped
Go 6x6 agent, no --checkpoint) for its name. So what ships is what a user gets from
``pip install jaxzero``, not files that exist only in this checkout.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from jaxzero.cli import app
from jaxzero.core.config import config_from_dict
from jaxzero.run.agents.agent_files import shipped_agent, shipped_games
from jaxzero.run.folder.layout import AGENT_FILE, CARD_FILE, CONFIG_FILE

ROOT = Path(__file__).resolve().parents[3]
SHIPPED = ["connect_four", "go_6x6", "star_duel_short", "tic_tac_toe"]
MAX_BYTES = 1_000_000
runner = CliRunner()

PLAY_EVERY_SHIPPED_AGENT = """
import sys
import jax
import numpy as np
import jaxzero
from jaxzero.run.agents.agent_files import shipped_games

assert jaxzero.__file__.startswith(sys.argv[1]), jaxzero.__file__  # the installed wheel's
for game in shipped_games():
    agent = jaxzero.load_agent(game)
    states = jax.vmap(agent.env.init)(jax.random.split(jax.random.key(0), 2))
    actions = np.asarray(agent.act(states, jax.random.key(1), num_simulations=8))
    mask = np.asarray(states.legal_action_mask)
    assert mask[np.arange(2), actions].all(), (game, actions)
    print(game, agent.iteration, actions.tolist())
"""


def test_each_game_ships_a_small_documented_agent():
    assert shipped_games() == SHIPPED
    for game in SHIPPED:
        folder = shipped_agent(game)
        assert sum(f.stat().st_size for f in folder.iterdir()) < MAX_BYTES, game
        facts = json.loads((folder / AGENT_FILE).read_text())
        config = config_from_dict(json.loads((folder / CONFIG_FILE).read_text()))
        assert facts["game"] == config.game == game
        assert facts["source"].startswith("runs/"), facts  # repo-relative, as in the docs
        card = (folder / CARD_FILE).read_text()
        assert "## Strength" in card and "Not measured" not in card, game
        assert "/work/" not in card and "/tmp/" not in card, game


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """jaxzero installed from its wheel into a folder of its own (no dependencies: those
    of this environment serve)."""
    tmp = tmp_path_factory.mktemp("wheel")
    sources = tmp / "sources"
    sources.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, sources)
    for name in ("envs", "jaxzero"):
        shutil.copytree(ROOT / name, sources / name, ignore=shutil.ignore_patterns("__pycache__"))
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    wheel = [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp / "dist")]
    subprocess.run([*wheel, str(sources)], check=True, cwd=tmp)
    (built,) = (tmp / "dist").glob("jaxzero-*.whl")
    target = tmp / "site"
    subprocess.run([*pip, "install", "--no-deps", "--target", str(target), str(built)], check=True)
    return target


def _python(installed: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess:
    elsewhere = installed.parent / "elsewhere"  # no jaxzero sources in the working directory
    elsewhere.mkdir(exist_ok=True)
    env = {"PYTHONPATH": str(installed), "PATH": "/usr/bin:/bin", "JAX_PLATFORMS": "cpu"}
    env["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "")  # the suite's: its faster compile
    return subprocess.run(
        [sys.executable, *args], cwd=elsewhere, env=env, input=stdin, capture_output=True, text=True
    )


@pytest.mark.slow
def test_shipped_agents_load_from_an_installed_wheel_and_play_legal_moves(installed):
    done = _python(installed, "-c", PLAY_EVERY_SHIPPED_AGENT, str(installed))
    assert done.returncode == 0, done.stderr
    assert [line.split()[0] for line in done.stdout.splitlines()] == SHIPPED


@pytest.mark.slow
def test_gtp_without_a_checkpoint_speaks_for_the_shipped_go_agent(installed):
    done = _python(installed, "-m", "jaxzero.cli", "gtp", stdin="name\nboardsize 6\nquit\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "= jaxzero\n\n=\n\n=\n\n"
    assert "agent: the shipped go_6x6 agent" in done.stderr


def test_play_and_analyze_use_the_shipped_agent_when_nothing_is_trained(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no runs/ here
    result = runner.invoke(app, ["play", "tic_tac_toe"], input="")
    assert result.exit_code == 2  # the input ended before the game did
    assert "agent: the shipped tic_tac_toe agent" in result.output
    result = runner.invoke(app, ["analyze", "tic_tac_toe", "--simulations", "8"])
    assert result.exit_code == 0, result.output
    assert "the shipped tic_tac_toe agent" in result.output

    shutil.copytree(shipped_agent("tic_tac_toe"), tmp_path / "runs" / "tic_tac_toe")
    result = runner.invoke(app, ["play", "tic_tac_toe"], input="")  # your own agent first
    assert "agent: runs/tic_tac_toe, iteration" in result.output
    shutil.copytree(shipped_agent("tic_tac_toe"), tmp_path / "tic_tac_toe")
    result = runner.invoke(app, ["play", "--checkpoint", "tic_tac_toe"], input="")
    assert "agent: tic_tac_toe, iteration" in result.output  # a folder here beats the name
