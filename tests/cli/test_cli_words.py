"""What the command line says reads whole: no line broken mid-phrase when piped, and which
agent plays (the user's own run, or the shipped one, and how to get the other)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from conftest import TINY_ARGS

from jaxzero.cli.agents import say_which
from jaxzero.run.agents.agent import load_agent

JAXZERO = str(Path(sys.executable).with_name("jaxzero"))


def test_a_long_message_is_not_broken_when_piped(tmp_path):
    deep = tmp_path / ("a-rather-long-folder-name-" * 4) / "run"
    tiny = [*TINY_ARGS, "evaluation.every=0"]
    args = [JAXZERO, "train", "tic_tac_toe", *tiny, "--iterations", "1", "--out", str(deep)]
    done = subprocess.run(args, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if "checkpoint saved in" in line]
    assert said and said[0].endswith(f"checkpoint saved in {deep / 'checkpoints'}"), done.stderr


def test_the_default_agent_says_it_is_the_users_run_and_how_to_get_the_shipped_one(
    tiny_run, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    shutil.copytree(tiny_run, tmp_path / "runs" / "tic_tac_toe")
    say_which(Path("runs") / "tic_tac_toe", load_agent(Path("runs") / "tic_tac_toe"))
    said = capsys.readouterr().err
    assert "your own run; the shipped agent: --checkpoint tic_tac_toe" in said
    say_which(Path("tic_tac_toe"), load_agent("tic_tac_toe"))  # the shipped one: no hint
    assert "your own run" not in capsys.readouterr().err
