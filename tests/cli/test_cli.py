"""The command line: one-line errors for mistakes a user can fix, run directories kept safe."""

import json

import pytest
from helpers import error_line
from typer.testing import CliRunner

from jaxzero.cli import app
from jaxzero.core import config as config_lib
from jaxzero.core import presets
from jaxzero.run.folder import manifest
from jaxzero.run.life.driver import RunDirError, prepare_run_dir
from jaxzero.run.life.hooks import JsonlWriter

runner = CliRunner()


def test_unknown_game_names_the_choices():
    line = error_line(runner.invoke(app, ["train", "chess"]))
    assert "unknown game 'chess'; choose a preset" in line and "tic_tac_toe" in line


def test_unknown_override_names_the_valid_keys():
    line = error_line(runner.invoke(app, ["train", "tic_tac_toe", "search.simulations=4"]))
    assert "unknown config key 'search.simulations'" in line
    assert "search.num_simulations" in line


def test_malformed_override_is_explained():
    line = error_line(runner.invoke(app, ["train", "tic_tac_toe", "seed"]))
    assert "is not KEY=VALUE" in line


def test_bad_override_value_is_explained():
    line = error_line(runner.invoke(app, ["train", "tic_tac_toe", "seed=abc"]))
    assert "seed: expected an integer" in line


@pytest.mark.parametrize(
    "flags, message",
    [(["--seconds", "-5"], "--seconds must be > 0, got -5"),
     (["--seconds", "0"], "--seconds must be > 0"),
     (["--iterations", "0"], "'--iterations': Input should be greater than or equal to 1")],
)  # fmt: skip
def test_a_budget_that_trains_nothing_is_refused(tmp_path, flags, message):
    args = ["train", "tic_tac_toe", "--out", str(tmp_path / "run"), *flags]
    assert message in error_line(runner.invoke(app, args))
    assert not (tmp_path / "run").exists()  # nothing written


def test_existing_run_is_never_overwritten(tmp_path):
    config = presets.get_preset("tic_tac_toe")
    prepare_run_dir(tmp_path / "run", config, resume=False, force=False)
    with pytest.raises(
        RunDirError, match=r"holds a run \(a tic_tac_toe run, no checkpoint yet\): add --resume"
    ):
        prepare_run_dir(tmp_path / "run", config, resume=False, force=False)
    line = error_line(runner.invoke(app, ["train", "tic_tac_toe", "--out", str(tmp_path / "run")]))
    assert "already holds a run" in line


def test_force_starts_over_and_resume_needs_a_run(tmp_path):
    config = presets.get_preset("tic_tac_toe")
    run = tmp_path / "run"
    with pytest.raises(RunDirError, match="nothing to resume"):
        prepare_run_dir(run, None, resume=True, force=False)
    prepare_run_dir(run, config, resume=False, force=False)
    JsonlWriter(run / "metrics.jsonl").write({"iteration": 1})  # recorded in the manifest
    changed = config_lib.apply_overrides(config, {"seed": "7"})
    prepare_run_dir(run, changed, resume=False, force=True)
    assert not (run / "metrics.jsonl").exists()
    assert json.loads((run / "config.json").read_text())["seed"] == 7
    assert prepare_run_dir(run, None, resume=True, force=False) == changed


def _project(folder):
    """A folder of someone else's: a web app's config.json, its source, its history."""
    (folder / "src").mkdir(parents=True)
    (folder / "src" / "app.py").write_text("print('hello')\n")
    (folder / ".git").mkdir()
    (folder / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (folder / "notes.md").write_text("my notes\n")
    (folder / "config.json").write_text('{"port": 8080, "debug": true}\n')
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize("force", [False, True])
def test_a_folder_that_is_not_a_run_is_never_touched_even_with_force(tmp_path, force):
    before = _project(tmp_path)
    args = ["train", "tic_tac_toe", "--out", str(tmp_path), "--iterations", "1"]
    line = error_line(runner.invoke(app, args + ["--force"] * force))
    assert "is not a jaxzero run (its config.json is not a jaxzero config: unknown" in line
    assert ".git/, config.json, notes.md, src/" in line and "nothing was changed" in line
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == before
    with pytest.raises(RunDirError, match="is not a jaxzero run"):
        prepare_run_dir(tmp_path, presets.get_preset("tic_tac_toe"), resume=False, force=True)
    assert (tmp_path / "notes.md").read_text() == "my notes\n"


def test_force_deletes_what_the_run_wrote_and_nothing_else(tmp_path):
    config = presets.get_preset("tic_tac_toe")
    run = tmp_path / "run"
    prepare_run_dir(run, config, resume=False, force=False)
    (run / "checkpoints" / "2").mkdir(parents=True)  # as the writers record them
    manifest.record_checkpoint(run, 2)
    manifest.make_folders(run, run / "tb")
    JsonlWriter(run / "metrics.jsonl").write({"iteration": 1})
    (run / "my_analysis.ipynb").write_text("{}")  # the user's, beside the run
    with pytest.raises(
        RunDirError, match=r"holds a run \(a tic_tac_toe run, checkpoints up to 2\)"
    ):
        prepare_run_dir(run, config, resume=False, force=False)
    prepare_run_dir(run, config, resume=False, force=True)
    assert sorted(p.name for p in run.iterdir()) == [
        manifest.MANIFEST_FILE, "checkpoints", "config.json", "my_analysis.ipynb"
    ]  # fmt: skip
    assert not any((run / "checkpoints").iterdir())


def test_resume_rejects_overrides(tmp_path):
    line = error_line(
        runner.invoke(app, ["train", "tic_tac_toe", "seed=1", "--resume", "--out", str(tmp_path)])
    )
    assert "cannot change a run being resumed" in line


@pytest.mark.parametrize(
    "options, message",
    [  # each trained before: a value dropped, a key's first list dropped, seeds aliased
        (["--grid", "optim.learning_rate=1e-3,,2e-3"], "has an empty value"),
        (["--grid", "optim.learning_rate=1e-3,"], "has an empty value"),
        (
            ["--grid", "optim.learning_rate=1e-3", "--grid", "optim.learning_rate=2e-3"],
            "--grid optim.learning_rate is given twice",
        ),
        (["--grid", "search.dirichlet_alpha=0.3,0"], "search.dirichlet_alpha must be > 0"),
        (["--seeds", "2", "seed=4294967295"], "reaches seed 4294967296, past 4294967295"),
        ([f"seed={2**64}"], "seed must be between 0 and 4294967295"),
        (["--seeds", "2", "--jobs", "2"], "--jobs trains a study's arms at once"),
        (["--grid", "search.kind=puct,gumbel", "--jobs", "99"], "--jobs 99: this process may"),
    ],
)
def test_a_population_or_seed_typo_is_refused_before_any_folder(tmp_path, options, message):
    run = tmp_path / "run"
    result = runner.invoke(app, ["train", "tic_tac_toe", *options, "--out", str(run)])
    assert message in error_line(result)
    assert "Traceback" not in result.output and not run.exists()


@pytest.mark.parametrize(
    "body, message",
    [  # a traceback, and an exit 0 with nothing said, before
        ("raise RuntimeError('no licence')", "raised RuntimeError: no licence"),
        ("import sys\nsys.exit(0)", "called sys.exit(0)"),
    ],
)
def test_a_game_module_failing_on_import_is_one_line(tmp_path, monkeypatch, body, message):
    name = f"failing_game_{abs(hash(body))}"
    (tmp_path / f"{name}.py").write_text(body + "\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    result = runner.invoke(app, ["train", f"{name}:Game", "--out", str(tmp_path / "run")])
    assert message in error_line(result)
    assert "Traceback" not in result.output and not (tmp_path / "run").exists()


@pytest.mark.parametrize("key", ["network.kind", "search.interior_selection"])
@pytest.mark.parametrize(
    "body, message",
    [("raise RuntimeError('no licence')", "raised RuntimeError: no licence"),
     ("import sys\nsys.exit(0)", "called sys.exit(0)")],
)  # fmt: skip
def test_a_network_or_rule_module_failing_on_import_is_one_line(
    tmp_path, monkeypatch, key, body, message
):
    name = f"failing_{key.split('.')[0]}_{abs(hash(body))}"
    (tmp_path / f"{name}.py").write_text(body + "\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    args = ["train", "tic_tac_toe", f"{key}={name}:Thing", "--out", str(tmp_path / "run")]
    if key.startswith("search."):
        args.append("search.kind=puct")
    result = runner.invoke(app, args)
    assert message in error_line(result)
    assert "Traceback" not in result.output and not (tmp_path / "run").exists()


def test_a_run_before_its_first_checkpoint_says_to_wait_and_a_lost_population_json_is_named(
    tmp_path,
):
    run = tmp_path / "run"
    prepare_run_dir(run, presets.get_preset("tic_tac_toe"), resume=False, force=False)
    line = error_line(runner.invoke(app, ["export", str(run), "--out", str(tmp_path / "agent")]))
    assert "no checkpoint in" in line and "wait for it, or train the run longer" in line
    assert "start a new run" not in line  # what it said: the run is only young
    (run / "members" / "0").mkdir(parents=True)  # a population whose population.json is gone
    line = error_line(runner.invoke(app, ["train", "--resume", "--out", str(run)]))
    assert "population.json is missing" in line and "restore population.json" in line
