"""Faults round 4 (issue 56), the processes' part: a study's ``--jobs`` children import only
jaxzero's code and get the trust the command line had; members leave a population sharded
over the host's cores with no collective; the ways cache, arm names and an edited study.json."""

from __future__ import annotations

import sys

from typer.testing import CliRunner

from jaxzero.cli import app
from jaxzero.core.presets import get_preset
from jaxzero.run.study import make_study, typed_trust

runner = CliRunner()
# tests/test_study.py's study, no evaluation
TINY = [
    "selfplay.batch_size=8", "selfplay.moves_per_iteration=2", "replay.capacity=64",
    "replay.min_size=8", "optim.minibatch_size=8", "optim.updates_per_iteration=1",
    "network.hidden_size=16", "search.num_simulations=2",
    "search.max_num_considered_actions=2", "evaluation.every=0",
]  # fmt: skip

# Imported in place of the real typer by any process that puts its working directory on
# sys.path: it leaves a mark, then stops the process.
FAKE_TYPER = """
import pathlib
pathlib.Path(__file__).with_name("typer-ran").write_text("imported from the working directory")
raise SystemExit(7)
"""

MY_SEARCH = '''
def make(config):
    """search.kind=MODULE:make: PUCT, as the user's own code."""
    from jaxzero import PuctSearch

    return PuctSearch.from_config(config)
'''


def _study(out, *more: str):
    args = ["train", "tic_tac_toe", *TINY, "--seeds", "2", *more]
    return runner.invoke(app, [*args, "--iterations", "1", "--jobs", "2", "--out", str(out)])


def _trained(out, arm: str) -> list[str]:
    """The checkpoints an arm saved."""
    return sorted(path.name for path in (out / "arms" / arm / "checkpoints").iterdir())


def test_jobs_children_import_nothing_from_the_working_directory(tmp_path, monkeypatch):
    """H5: a ``typer.py`` where the study is started never runs in its arms."""
    here = tmp_path / "here"
    here.mkdir()
    (here / "typer.py").write_text(FAKE_TYPER)
    monkeypatch.chdir(here)
    result = _study(tmp_path / "study", "--grid", "search.kind=puct,gumbel")
    assert not (here / "typer-ran").exists(), result.output
    assert result.exit_code == 0, result.output
    assert _trained(tmp_path / "study", "kind-puct") == ["1"]
    assert _trained(tmp_path / "study", "kind-gumbel") == ["1"]


def test_jobs_children_get_the_code_typed_on_the_command_line(tmp_path, monkeypatch):
    """M6: the user's own search, typed in --grid, trains in the arms' processes too (they
    read it from study.json, and are told it was typed); nothing else is trusted."""
    here = tmp_path / "mine"
    here.mkdir()
    (here / "round4_search.py").write_text(MY_SEARCH)
    monkeypatch.chdir(here)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the folder appended for the import
    out = tmp_path / "study"
    try:
        result = _study(out, "--grid", "search.kind=puct,round4_search:make")
    finally:
        sys.modules.pop("round4_search", None)
    assert result.exit_code == 0, result.output
    assert _trained(out, "kind-puct") == ["1"] and _trained(out, "kind-round4-search-make") == [
        "1"
    ], result.output


def test_a_new_studys_arms_are_told_its_typed_code_and_nothing_more():
    config = get_preset("tic_tac_toe")
    study = make_study(config, seeds=1, grid={"search.kind": ["puct", "round4_search:make"]})
    assert typed_trust(study, False) == ["round4_search:make"]
    assert typed_trust(study, ["mine:Game"]) == ["mine:Game", "round4_search:make"]
    assert typed_trust(study, True) is True
    assert typed_trust(make_study(config, seeds=1), ()) == []  # built-in names only
