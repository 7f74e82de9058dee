"""Faults round 4 (issue 56), the processes' part: a study's ``--jobs`` children import only
jaxzero's code and get the trust the command line had; members leave a population sharded
over the host's cores with no collective; the ways cache, arm names and an edited study.json."""

from __future__ import annotations

from typer.testing import CliRunner

from jaxzero.cli import app

runner = CliRunner()
TINY = [
    "selfplay.batch_size=8",
    "selfplay.moves_per_iteration=2",
    "replay.capacity=64",
    "replay.min_size=8",
    "optim.minibatch_size=8",
    "optim.updates_per_iteration=1",
    "network.hidden_size=16",
    "search.num_simulations=2",
    "search.max_num_considered_actions=2",
    "evaluation.every=0",
]  # fmt: skip  (tests/test_study.py's study, no evaluation)

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
