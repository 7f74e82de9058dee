"""A study in one command: arms × seeds (jaxzero.run.studies.study), one report comparing the arms
(jaxzero.run.studies.comparison), every arm an ordinary population."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import TINY_ARGS
from typer.testing import CliRunner

from jaxzero.cli import app
from jaxzero.core.config import apply_overrides
from jaxzero.core.presets import get_preset
from jaxzero.run.studies.study import (
    arms_of,
    cpu_shares,
    make_study,
    read_study,
    split_grid,
    train_study,
)

runner = CliRunner()
JAXZERO = str(Path(sys.executable).with_name("jaxzero"))
ARMS = ("kind-puct", "kind-gumbel")
# The suite's tiny tic-tac-toe on the command line: the arms' programs are those of every
# other tic-tac-toe study the suite trains (examples/experiment.py, compare_search's smoke
# tier, tests/faults' studies), compiled once and read back from the compile cache.
TINY = [*TINY_ARGS, "evaluation.every=2"]


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """Two seeds × PUCT and Gumbel, four iterations: the issue's command at toy sizes."""
    out = tmp_path_factory.mktemp("study") / "ttt"
    args = ["train", "tic_tac_toe", *TINY, "--seeds", "2", "--grid", "search.kind=puct,gumbel"]
    result = runner.invoke(app, [*args, "--iterations", "4", "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


def test_static_values_become_arms_named_from_them():
    traced, static = split_grid({"optim.learning_rate": [1e-3, 2e-3], "search.kind": ["puct"]})
    assert traced == {"optim.learning_rate": [1e-3, 2e-3]} and static == {"search.kind": ["puct"]}
    arms = arms_of({"search.kind": ["puct", "gumbel"], "search.num_simulations": [8, 32]})
    assert list(arms)[:2] == ["kind-puct_num_simulations-8", "kind-puct_num_simulations-32"]
    assert arms["kind-gumbel_num_simulations-32"] == {
        "search.kind": "gumbel", "search.num_simulations": 32,
    }  # fmt: skip


def test_a_study_trains_each_arm_as_a_population(study):
    recorded = read_study(study)
    assert list(recorded.arms) == ["kind-puct", "kind-gumbel"] and recorded.seeds == [0, 1]
    for name, kind in (("kind-puct", "puct"), ("kind-gumbel", "gumbel")):
        arm = study / "arms" / name
        assert json.loads((arm / "config.json").read_text())["search"]["kind"] == kind
        assert json.loads((arm / "population.json").read_text())["seeds"] == [0, 1]
        rows = (arm / "members" / "1" / "metrics.jsonl").read_text().splitlines()
        assert json.loads(rows[-1])["iteration"] == 4


def test_the_report_compares_the_arms_with_a_difference(study):
    result = runner.invoke(app, ["report", str(study)])
    assert result.exit_code == 0, result.output
    summary = (study / "report" / "summary.md").read_text()
    assert "| metric | kind-puct (2 seeds) | kind-gumbel (2 seeds) |" in summary
    # the second table's row: the difference with its interval, "+0.01 [-0.2, +0.2]"
    row = [line for line in summary.splitlines() if line.startswith("| eval/raw_optimal |")][-1]
    difference, interval = row.split("|")[2].split(" [")
    assert difference.strip()[0] in "+-", row
    low, high = (float(x) for x in interval.rstrip("] ").split(","))
    assert low <= float(difference) <= high and low < high
    assert (study / "report" / "eval_raw_optimal.png").stat().st_size > 1000


def test_a_study_naming_code_runs_it_only_when_trusted(study, tmp_path):
    """study.json is data: an arm naming a module is refused on --resume unless trusted."""
    copy = tmp_path / "shared"
    copy.mkdir()
    data = json.loads((study / "study.json").read_text())
    data["arms"] = {"evil": {"network.kind": "evil_net_never_imported:Net"}}
    (copy / "study.json").write_text(json.dumps(data))
    refused = runner.invoke(app, ["train", "--resume", "--out", str(copy), "--iterations", "1"])
    assert refused.exit_code == 2 and "evil_net_never_imported:Net" in refused.output
    assert "--trust-code" in refused.output and not (copy / "arms").exists()


def test_a_study_resumes_and_its_members_evaluate_and_export(study, tmp_path):
    refused = runner.invoke(app, ["train", "tic_tac_toe", *TINY, "--seeds", "2", "--grid",
                                  "search.kind=puct,gumbel", "--out", str(study)])  # fmt: skip
    assert refused.exit_code == 2 and "already holds a study" in refused.output
    resumed = runner.invoke(app, ["train", "--resume", "--out", str(study), "--iterations", "6"])
    assert resumed.exit_code == 0, resumed.output
    for name in ("kind-puct", "kind-gumbel"):
        rows = (study / "arms" / name / "members" / "0" / "metrics.jsonl").read_text()
        assert json.loads(rows.splitlines()[-1])["iteration"] == 6
    member = str(study / "arms" / "kind-gumbel" / "members" / "1")
    evaluated = runner.invoke(app, ["eval", member, "--opponents", "random", "--games", "2"])
    assert evaluated.exit_code == 0, evaluated.output
    exported = runner.invoke(app, ["export", member, "--out", str(tmp_path / "agent")])
    assert exported.exit_code == 0, exported.output
    assert (tmp_path / "agent").is_dir()


def test_several_runs_compare_into_a_folder_and_other_folders_are_refused(study, tmp_path):
    arms = [str(study / "arms" / "kind-puct"), str(study / "arms" / "kind-gumbel")]
    alone = runner.invoke(app, ["report", *arms])
    assert alone.exit_code == 2 and "--out DIR" in alone.output
    compared = runner.invoke(app, ["report", *arms, "--out", str(tmp_path / "cmp")])
    assert compared.exit_code == 0, compared.output
    assert "kind-puct − kind-gumbel" in (tmp_path / "cmp" / "summary.md").read_text()
    again = runner.invoke(app, ["report", *arms, "--out", str(tmp_path / "cmp")])
    assert again.exit_code == 0, again.output  # its own folder: replaced
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "summary.md").write_text("my notes")
    kept = runner.invoke(app, ["report", *arms, "--out", str(tmp_path / "mine")])
    assert kept.exit_code == 2 and "did not write" in kept.output, kept.output
    assert (tmp_path / "mine" / "summary.md").read_text() == "my notes"
    foreign = tmp_path / "notes"
    foreign.mkdir()
    (foreign / "mine.txt").write_text("keep")
    args = ["train", "tic_tac_toe", *TINY, "--seeds", "2", "--grid", "search.kind=puct,gumbel"]
    refused = runner.invoke(app, [*args, "--out", str(foreign), "--force"])
    assert refused.exit_code == 2 and "is not a jaxzero study" in refused.output
    assert (foreign / "mine.txt").read_text() == "keep" and len(list(foreign.iterdir())) == 1


def test_jobs_train_the_arms_at_once_in_processes_of_their_own(study, tmp_path, monkeypatch):
    """The fixture's study again (its programs in the compile cache), two arms at once,
    each on its own cores as its devices, whatever device count this process set."""
    share = len(cpu_shares(2)[0])  # each arm's cores: its devices
    inherited = 1 if share > 1 else 2  # a count the arms must not take from this process
    flags = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={inherited}"
    monkeypatch.setenv("XLA_FLAGS", flags)  # as use_host_cores leaves it in a CLI process
    out = tmp_path / "jobs"
    args = ["train", "tic_tac_toe", *TINY, "--seeds", "2", "--grid", "search.kind=puct,gumbel"]
    result = runner.invoke(app, [*args, "--iterations", "2", "--jobs", "2", "--out", str(out)])
    assert result.exit_code == 0, result.output
    devices = math.gcd(2, share)  # the members over the devices that split them
    for name in ("kind-puct", "kind-gumbel"):
        rows = (out / "arms" / name / "members" / "1" / "metrics.jsonl").read_text()
        assert json.loads(rows.splitlines()[-1])["iteration"] == 2, result.output
        # each arm in a process of its own, its lines named
        assert f"[{name}] arm {name}" in result.output
        assert f"[{name}] population: members one at a time on {devices} device" in result.output


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_every_arm_after_its_iteration_saved(study, tmp_path, sig):
    """Ctrl-C (the terminal's, to the study's process group) or a SIGTERM to the study's
    process alone (a scheduler's): the arms, in sessions of their own, get it once from
    the study's process, save after their iteration and say so through it (a second
    signal in an arm would have stopped it unsaved)."""
    out = tmp_path / "stopped"
    args = ["train", "tic_tac_toe", *TINY, "train.checkpoint_every=100000"]
    args += ["train.keep_every=0", "--seeds", "2"]
    args += ["--grid", "search.kind=puct,gumbel", "--iterations", "100000", "--jobs", "2"]
    process = subprocess.Popen(
        [JAXZERO, *args, "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, start_new_session=True,  # as a terminal's foreground job: a group of its own
    )  # fmt: skip
    lines: list[str] = []
    assert process.stdout is not None
    for line in process.stdout:  # both arms training
        lines.append(line)
        if all(any(line.startswith(f"[{arm}] it") for line in lines) for arm in ARMS):
            break
    if sig == signal.SIGINT:
        os.killpg(process.pid, sig)  # the terminal's Ctrl-C: to the whole group
    else:
        process.send_signal(sig)  # to the study's process alone
    try:
        rest, _ = process.communicate(timeout=90)
    finally:
        process.kill()
    output = "".join(lines) + rest
    assert process.returncode == 128 + sig, output
    assert "resume:  jaxzero train --resume --out" in output and "Traceback" not in output
    for arm in ARMS:
        folder = out / "arms" / arm / "checkpoints"
        saved = [p.name for p in folder.iterdir()] if folder.is_dir() else []
        assert any(name.isdigit() for name in saved), (arm, saved, output)
        assert f"[{arm}] {sig.name}: stopping after this iteration" in output, output
        assert f"[{arm}] arm {arm}: interrupted at iteration" in output, output


def test_a_study_from_python_crosses_traced_values_with_the_seeds_and_refuses_bad_jobs(tmp_path):
    config = apply_overrides(get_preset("tic_tac_toe"), {"seed": 3})
    grid = {"search.kind": ["puct", "gumbel"], "optim.learning_rate": [1e-3, 3e-3]}
    study = make_study(config, seeds=2, grid=grid)
    assert list(study.arms) == ["kind-puct", "kind-gumbel"] and study.seeds == [3, 4, 3, 4]
    assert study.hyper == {"optim.learning_rate": [1e-3, 1e-3, 3e-3, 3e-3]}
    assert list(make_study(config, seeds=[7]).arms) == ["all"]
    with pytest.raises(ValueError, match="search.kindd"):
        make_study(config, grid={"search.kindd": ["puct"]})
    with pytest.raises(ValueError, match="--jobs 99: this process may use"):
        train_study(tmp_path / "study", study, iterations=1, jobs=99)
    assert not (tmp_path / "study").exists()  # refused before anything was written
