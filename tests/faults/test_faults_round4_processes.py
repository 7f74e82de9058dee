"""Faults round 4 (issue 56), the processes' part: a study's ``--jobs`` children import only
jaxzero's code and get the trust the command line had; the ways cache, arm names and an
edited study.json. (M7, members leaving a population sharded over the host's cores with no
collective, is checked in tests/core/test_sharding.py, on its two-device population.)"""

from __future__ import annotations

import json
import os
import shutil
import sys
import threading
from pathlib import Path

import jax.numpy as jnp
import pytest
from conftest import TINY_ARGS
from typer.testing import CliRunner

from jaxzero.cli import app
from jaxzero.core.config import apply_overrides
from jaxzero.core.presets import get_preset
from jaxzero.run.life import ways
from jaxzero.run.studies.study import make_study, typed_trust

runner = CliRunner()
# tests/run/studies/test_study.py's study (the same programs), no evaluation
TINY = [*TINY_ARGS, "evaluation.every=0"]

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


@pytest.fixture(scope="module")
def from_typer(tmp_path_factory):
    """A study of two arms, --jobs 2, started from a folder holding a ``typer.py``: that
    folder, the study's, and the command's result."""
    here = tmp_path_factory.mktemp("here")
    (here / "typer.py").write_text(FAKE_TYPER)
    out = here.parent / f"{here.name}-study"
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(here)
        result = _study(out, "--grid", "search.kind=puct,gumbel")
    return here, out, result


def test_jobs_children_import_nothing_from_the_working_directory(from_typer):
    """H5: a ``typer.py`` where the study is started never runs in its arms."""
    here, out, result = from_typer
    assert not (here / "typer-ran").exists(), result.output
    assert result.exit_code == 0, result.output
    assert _trained(out, "kind-puct") == ["1"] and _trained(out, "kind-gumbel") == ["1"]


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


class _Quick:
    """A population whose iteration costs nothing: what choose() measures."""

    def init(self):
        return jnp.zeros(())

    def iteration(self, state):
        return state + 1, {}, {}


def _ttt():
    return apply_overrides(get_preset("tic_tac_toe"), dict(item.split("=") for item in TINY))


@pytest.mark.parametrize(
    "cached",
    ["5", "[1, 2]", '{"devices": 1}', "{KEY: 5}", "{KEY: [1, 2]}", '{KEY: {"devices": 1}}',
     '{KEY: {"devices": "x", "at_once": 1}}', '{KEY: {"devices": 1e400, "at_once": 1}}',
     "\xff\xfe not text", "{"],
)  # fmt: skip
def test_a_corrupt_ways_cache_is_no_cache(tmp_path, monkeypatch, cached):
    """LOW: whatever population_ways.json holds, the way is measured again and the file
    rewritten whole; no traceback."""
    monkeypatch.delenv(ways.AT_ONCE_VAR, raising=False)
    config, cache = _ttt(), tmp_path / "population_ways.json"
    key = ways._key(config, 2, None)
    cache.write_bytes(cached.replace("KEY", json.dumps(key)).encode("latin-1"))
    said: list[str] = []
    way = ways.choose(config, seeds=[0, 1], cache=cache, build=lambda c, **k: _Quick(),
                      log=said.append)  # fmt: skip
    assert way in ways.candidates(2) and "measured a move" in said[0], said
    entry = json.loads(cache.read_text())[key]
    assert (entry["devices"], entry["at_once"]) == (way.devices, way.at_once)


def test_a_fifo_for_the_ways_cache_never_blocks(tmp_path, monkeypatch):
    """LOW: a FIFO where the cache is expected is no cache (refused without opening it to
    wait for a writer), and is replaced by the measured answer."""
    monkeypatch.delenv(ways.AT_ONCE_VAR, raising=False)
    cache = tmp_path / "population_ways.json"
    os.mkfifo(cache)
    found: list[ways.Way] = []
    config = _ttt()
    choose = threading.Thread(
        target=lambda: found.append(
            ways.choose(config, seeds=[0, 1], cache=cache, build=lambda c, **k: _Quick())
        ),
        daemon=True,
    )
    choose.start()
    choose.join(20)
    if choose.is_alive():  # blocked opening the FIFO: a writer lets it go on
        os.close(os.open(cache, os.O_WRONLY | os.O_NONBLOCK))
        choose.join(60)
        pytest.fail("choose() waited on a FIFO")
    assert found and json.loads(cache.read_text())[ways._key(config, 2, None)]


def _edited(study, tmp_path, edit) -> tuple[Path, dict]:
    """A copy of ``study`` whose study.json ``edit`` changed, and what its arms held."""
    copy = tmp_path / "copy"
    shutil.copytree(study, copy)
    data = json.loads((copy / "study.json").read_text())
    edit(data)
    (copy / "study.json").write_text(json.dumps(data))
    return copy, _held(copy)


def _held(study: Path) -> dict:
    return {str(p.relative_to(study)): p.stat().st_mtime_ns for p in study.rglob("*")}


def _one_error_line(result) -> str:
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    [line] = [line for line in result.output.splitlines() if line.strip()]
    assert line.startswith("error: "), result.output
    return line


@pytest.mark.parametrize("name", [".", ".."])
def test_an_arm_named_dot_or_dot_dot_is_refused(from_typer, tmp_path, name):
    """LOW: an arm's name is a folder inside arms/; "." and ".." would be arms/ itself or
    the study's folder."""
    study = from_typer[1]
    copy, held = _edited(study, tmp_path, lambda data: data.update(arms={name: {}}))
    result = runner.invoke(app, ["train", "--resume", "--out", str(copy), "--iterations", "2"])
    line = _one_error_line(result)
    assert f"arm {name!r}" in line and "study.json" in line, line
    assert _held(copy) == held


def _set_arm(arm: str, key: str, value):
    def edit(data):
        data["arms"][arm][key] = value

    return edit


def _set_config(section: str, key: str, value):
    def edit(data):
        data["config"][section][key] = value

    return edit


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        (_set_arm("kind-puct", "search.kind", "gumbel"), "arm kind-puct search.kind"),
        (_set_config("search", "num_simulations", 8), "arm kind-puct search.num_simulations"),
        (_set_config("optim", "learning_rate", 0.5), "arm kind-puct optim.learning_rate"),
        (lambda data: data.update(seeds=[0, 7]), "arm kind-puct seeds"),
        (lambda data: data.update(hyper={"optim.learning_rate": [0.1, 0.2]}),
         "arm kind-puct hyper"),
    ],
)  # fmt: skip
def test_resuming_a_study_whose_settings_were_edited_is_refused(from_typer, tmp_path, edit, named):
    """LOW: an arm resumes with what its folder holds; a study.json edited since would be
    ignored silently, so it is refused in one line naming the arm and the setting."""
    study = from_typer[1]
    copy, held = _edited(study, tmp_path, edit)
    for jobs in ("1", "2"):
        result = runner.invoke(
            app, ["train", "--resume", "--out", str(copy), "--iterations", "2", "--jobs", jobs]
        )
        line = _one_error_line(result)
        assert named in line and "study.json" in line, line
        assert _held(copy) == held
