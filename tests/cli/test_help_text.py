"""Every command's help says what its source says: no text lost to markup (Typer's Rich
markup read ``[default: runs/GAME]`` as a tag and dropped it)."""

from __future__ import annotations

import re

import pytest
import typer
from typer.testing import CliRunner

from jaxzero.cli import app

runner = CliRunner()
COMMANDS = sorted(typer.main.get_command(app).commands)  # type: ignore[attr-defined]


def _words(text: str) -> str:
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", text).split())


@pytest.mark.parametrize("name", COMMANDS)
def test_each_option_s_help_is_shown_whole(name):
    command = typer.main.get_command(app).commands[name]  # type: ignore[attr-defined]
    result = runner.invoke(app, [name, "--help"], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    shown = _words(result.output)
    for param in command.params:
        help_text = getattr(param, "help", None)
        if help_text:
            assert _words(help_text) in shown, (name, param.name, help_text)


def test_a_bracketed_default_survives():
    result = runner.invoke(app, ["train", "--help"], env={"COLUMNS": "100"})
    assert "Run directory [default: runs/GAME]" in _words(result.output)
    assert "(pip install jaxzero[wandb])" in _words(result.output)


def test_the_command_list_cuts_no_line_off():
    result = runner.invoke(app, ["--help"], env={"COLUMNS": "80"})
    listed = result.output.split("Commands:")[1].splitlines()
    assert len([line for line in listed if line.strip()]) == len(COMMANDS)
    assert not [line for line in listed if line.rstrip().endswith("...")], result.output
