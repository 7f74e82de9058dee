"""The fast fault probes, fuzzed: whatever a folder holds beside a config.json that is not
ours, `--force` changes nothing in it; whatever agent.json says, reading it accepts a valid
one or refuses it in one line naming the file."""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jaxzero.core import config as config_lib
from jaxzero.core import presets
from jaxzero.core.config import config_to_dict
from jaxzero.run.agents.agent_files import read_facts
from jaxzero.run.life.checkpoint import CheckpointError
from jaxzero.run.life.driver import RunDirError, prepare_run_dir

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)
NAMES = st.text("abcdefgh._-", min_size=1, max_size=8).filter(lambda n: n not in (".", ".."))
FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@FUZZ
@given(config=st.dictionaries(st.text().map("app_".__add__), JSON, min_size=1, max_size=4),
       files=st.dictionaries(NAMES, st.binary(max_size=16), max_size=4))  # fmt: skip
def test_force_never_touches_a_folder_whose_config_is_not_ours(config, files):
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        for file, data in files.items():
            (folder / f"user_{file}").write_bytes(data)
        (folder / "config.json").write_text(json.dumps(config))
        before = _snapshot(folder)
        with pytest.raises(RunDirError, match="is not a jaxzero run"):
            prepare_run_dir(folder, presets.get_preset("tic_tac_toe"), resume=False, force=True)
        assert _snapshot(folder) == before


# A config.json that reads as a jaxzero config, and what another tool keeps beside it, in
# the folders a run writes too, under names a run writes too; never an older run's traces
# (a checkpoint step with checksums.sha256, a metrics row).
OURS = st.sampled_from(
    ["{}", '{"seed": 42}', '{"game": "tic_tac_toe"}', '{"seed": 1, "train": {}}']
)
PLACES = st.sampled_from(["", "checkpoints/", "checkpoints/10/", "checkpoints/10/state/",
                          "report/", "tb/", "members/", "members/1/"])  # fmt: skip
THEIRS = st.sampled_from(["model.pt", "paper.md", "summary.md", "losses.png", "config.json",
                          "events.out.tfevents.1", "elo.json", "population.json", "x"])  # fmt: skip


@FUZZ
@given(config=OURS, files=st.dictionaries(st.tuples(PLACES, THEIRS), st.binary(max_size=16),
                                          min_size=1, max_size=6))  # fmt: skip
def test_force_never_touches_a_jaxzero_config_json_without_our_manifest(config, files):
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        for (place, file), data in files.items():
            if (place, file) != ("", "config.json"):
                (folder / place).mkdir(parents=True, exist_ok=True)
                (folder / place / file).write_bytes(data)
        (folder / "config.json").write_text(config)
        before = _snapshot(folder)
        with pytest.raises(RunDirError, match="is not a jaxzero run"):
            prepare_run_dir(folder, presets.get_preset("tic_tac_toe"), resume=False, force=True)
        assert _snapshot(folder) == before


@FUZZ
@given(facts=st.dictionaries(st.sampled_from(["format", "game", "iteration", "x"]), JSON))
def test_any_agent_json_is_read_or_refused_in_one_line(facts):
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        (folder / "agent.json").write_text(json.dumps(facts))
        (folder / "config.json").write_text(
            json.dumps(config_to_dict(presets.get_preset("tic_tac_toe")))
        )
        try:
            read = read_facts(folder)
        except CheckpointError as error:
            assert "\n" not in str(error) and "agent.json" in str(error)
            return
        assert read["format"] == 1 and isinstance(read["iteration"], int)
        assert not isinstance(read["iteration"], bool) and read["iteration"] >= 0
        assert isinstance(read["game"], str) and read["game"]


# Bounded, regular reads (issue 45, item 8): what a shared folder may hold where jaxzero
# expects one of its files. Each kind is cheap: a sparse file costs no disk.
VALID_CONFIG = json.dumps(config_to_dict(presets.get_preset("tic_tac_toe")))
TEXTS = st.one_of(
    st.just(VALID_CONFIG),
    JSON.map(json.dumps),
    st.sampled_from(["", "{", "NaN", "Infinity", "1" * 5000, "1e999", '{"seeds": [1e999]}']),
    st.integers(1, 20_000).map(lambda depth: "[" * depth + "]" * depth),
    st.binary(max_size=64).map(lambda b: b.decode("latin-1")),
)
KINDS = st.sampled_from(["text", "fifo", "dev_zero", "outside", "inside_link", "folder",
                         "sparse", "dangling", "missing"])  # fmt: skip
METRIC_LINES = st.lists(
    st.one_of(
        st.just('{"iteration": 1, "total_loss": 0.5}'),
        JSON.map(json.dumps),
        st.integers(1, 20_000).map(lambda depth: "[" * depth),
        st.text(max_size=20),
    ),
    max_size=5,
)


def _plant(folder: Path, name: str, kind: str, text: str) -> None:
    """``folder/name`` as a file of ``kind``, holding ``text`` where it holds anything."""
    import os

    path = folder / name
    if kind == "text":
        path.write_text(text)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev_zero":
        path.symlink_to("/dev/zero")
    elif kind in ("outside", "inside_link"):
        target = folder.parent / f"out_{name}" if kind == "outside" else folder / f".in_{name}"
        target.write_text(text)
        path.symlink_to(target)
    elif kind == "folder":
        path.mkdir()
    elif kind == "sparse":
        path.write_text(text)
        os.truncate(path, (1 << 30) + 1)
    elif kind == "dangling":
        path.symlink_to(folder / "nowhere")


def _read_everything(folder: Path) -> None:
    """Each reader of a run or agent folder in turn; a refusal is one line of its kind."""
    from jaxzero.run.agents.agent import read_config
    from jaxzero.run.agents.agent_files import check_checksums
    from jaxzero.run.life.driver import load_run_config
    from jaxzero.run.life.members import read_population
    from jaxzero.run.reports.rows import ReportError, read_elo_rows, read_metrics

    readers = (load_run_config, read_config, read_facts, check_checksums, read_population,
               read_metrics, read_elo_rows)  # fmt: skip
    for reader in readers:
        try:
            reader(folder)
        except (CheckpointError, RunDirError, ReportError, ValueError) as error:
            assert "\n" not in str(error), (reader.__name__, str(error))


@FUZZ
@given(files=st.dictionaries(
    st.sampled_from(["config.json", "agent.json", "population.json", "elo.json",
                     "checksums.sha256"]),
    st.tuples(KINDS, TEXTS), max_size=5),
    metrics=st.tuples(KINDS, METRIC_LINES))  # fmt: skip
def test_any_folder_is_read_or_refused_in_one_line_without_hanging(files, metrics):
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name) / "shared"
        folder.mkdir()
        for file, (kind, text) in files.items():
            _plant(folder, file, kind, text)
        _plant(folder, "metrics.jsonl", metrics[0], "\n".join(metrics[1]))
        before = sorted(p.name for p in Path(name).rglob("*"))
        _read_everything(folder)
        assert sorted(p.name for p in Path(name).rglob("*")) == before  # nothing deleted


VALUES = (  # mostly numbers a field takes, so that most configs get past the types
    st.sampled_from([0, -1, 1, 0.5, "inf", "-inf", "nan", "1e999", 2**32, 2**64, "true"])
    | st.floats() | st.integers(-10, 2**66) | st.none() | st.text(max_size=8)
)  # fmt: skip


@settings(max_examples=200, deadline=None)  # no compile: cheap, and the search is wide
@given(changes=st.dictionaries(st.sampled_from(sorted(config_lib.valid_keys())), VALUES,
                               min_size=1, max_size=2))  # fmt: skip
def test_any_setting_is_taken_with_its_meaning_or_refused_in_one_line(changes):
    """Whatever a config.json or an override sets: a config whose every setting means
    something (finite numbers, seeds in the key's range, Dirichlet noise with a
    concentration, sizes under their bounds), or one ValueError line; never another
    exception. What a file says is read the same way (config_from_dict)."""
    base = presets.get_preset("tic_tac_toe")
    for build in (
        lambda: config_lib.apply_overrides(base, {k: str(v) for k, v in changes.items()}),
        lambda: config_lib.config_from_dict(_nested(config_to_dict(base), changes)),
    ):
        try:
            config = build()
        except ValueError as error:
            assert "\n" not in str(error).strip()
            continue
        assert 0 <= config.seed < 2**32
        flat = config_lib.flatten(config_to_dict(config))
        numbers = [v for v in flat.values() if isinstance(v, float)]
        assert all(math.isfinite(v) for v in numbers)
        noise = config.search.dirichlet_fraction > 0
        assert not noise or config.search.dirichlet_alpha > 0


def _nested(data: dict, changes: dict) -> dict:
    data = json.loads(json.dumps(data))
    for key, value in changes.items():
        *sections, name = key.split(".")
        node = data
        for section in sections:
            node = node[section]
        node[name] = value
    return data
