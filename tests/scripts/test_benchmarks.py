"""benchmarks/env_throughput.py: its legal-action sampler, its statistics, one tiny run."""

import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import env_throughput  # noqa: E402


@pytest.mark.parametrize("num_actions", [9, 123])  # the lookup table and the popcount search
def test_uniform_legal_maps_equal_slices_of_the_draw_to_each_legal_action(num_actions):
    masks = np.array(jax.random.bernoulli(jax.random.key(0), 0.3, (64, num_actions)))
    masks[:, 0] |= ~masks.any(axis=1)  # at least one legal action per row
    masks[-1] = True  # every action legal
    sample = jax.jit(env_throughput.uniform_legal)
    for row in masks:
        legal = np.flatnonzero(row)
        n = len(legal)
        draws = (np.arange(n, dtype=np.float32) + 0.5) / n  # the middle of each 1/n slice
        picked = sample(jnp.asarray(draws), jnp.asarray(np.tile(row, (n, 1))))
        np.testing.assert_array_equal(picked, legal)  # the k-th slice picks the k-th action
        edges = sample(jnp.asarray([0.0, np.nextafter(np.float32(1), 0)]), jnp.asarray([row] * 2))
        np.testing.assert_array_equal(edges, legal[[0, -1]])


def test_median_and_total_statistics():
    calls = [(100, 1.0), (100, 1.0), (100, 8.0)]  # one call preempted
    assert env_throughput.summarise(calls, "median") == 100.0
    assert env_throughput.summarise(calls, "total") == 30.0


def test_a_tiny_run_prints_the_table(capsys):
    env_throughput.main(
        ["--games", "tic_tac_toe", "--batch-sizes", "2", "--seconds", "0.05", "--peers"]
        + ["--xla-threads", "all", "--statistic", "total"]
    )
    lines = capsys.readouterr().out.splitlines()
    assert "total of calls" in lines[0]
    game, batch, ours, pgx, openspiel, ratio = lines[-1].strip("| ").split(" | ")
    assert (game, batch, pgx, openspiel, ratio) == ("tic_tac_toe", "2", "-", "-", "-")
    assert int(ours.replace(",", "")) > 0


def test_the_accelerator_suite_at_toy_size_runs_every_section_and_writes_its_table(tmp_path):
    import json

    import accelerator

    accelerator.main(["--out", str(tmp_path), "--toy", "--minutes", "5"])
    data = json.loads((tmp_path / "accelerator.json").read_text())
    sections = data["sections"]
    assert set(sections) == {"env", "selfplay_tic_tac_toe_8", "learner", "population", "training"}
    assert {name: s["status"] for name, s in sections.items()} == dict.fromkeys(sections, "ok")
    text = (tmp_path / "accelerator.md").read_text()
    assert "toy size" in text and "Device: " in text
    assert "| tic_tac_toe | 8 |" in sections["env"]["output"]  # ours beside pgx
    assert "pgx+mctx pos/s" in sections["selfplay_tic_tac_toe_8"]["output"]
    assert "## Training curve rows" in text
    assert "| tic_tac_toe | 1 |" in sections["population"]["output"]


def test_child_processes_keep_the_callers_pythonpath_after_the_repo(monkeypatch, tmp_path):
    """A machine whose packages come from a ``pip install --target`` folder on PYTHONPATH:
    the benchmarks' child processes find them too, with the repository first."""
    import os

    from child_env import ROOT, child_env

    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), "", str(ROOT)]))
    env = child_env(SCALING_BARRIER="x")
    assert env["PYTHONPATH"].split(os.pathsep) == [str(ROOT), str(tmp_path)]
    assert env["SCALING_BARRIER"] == "x" and "SCALING_BARRIER" not in os.environ
    monkeypatch.delenv("PYTHONPATH")
    assert child_env()["PYTHONPATH"] == str(ROOT)


def test_an_accelerator_section_finds_packages_on_the_callers_pythonpath(monkeypatch, tmp_path):
    import time

    import accelerator

    (tmp_path / "only_on_the_callers_path.py").write_text("FOUND = 1\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    code = "import jaxzero, only_on_the_callers_path; print(only_on_the_callers_path.FOUND)"
    section = accelerator.Section("probe", "probe", [sys.executable, "-c", code], limit=60)
    accelerator.run_section(section, time.monotonic() + 60)
    assert section.result["status"] == "ok", section.result["output"]
    assert section.result["output"] == "1"


def test_the_learned_model_benchmark_at_smoke_size_prints_both_tables(capsys):
    import learned_model

    learned_model.main(["--smoke", "--game", "tic_tac_toe", "--no-rules"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("tic_tac_toe: preset network (2x128 mlp)")
    heading = next(i for i, line in enumerate(lines) if line.startswith("(a)"))
    search_row = lines[heading + 2].split()
    assert search_row[:2] == ["gumbel", "1"] and len(search_row) == 7  # no rules columns
    assert all(float(x.rstrip("x").replace(",", "")) > 0 for x in search_row[2:])
    assert lines[-2].split() == ["run", "K=2", "ms", "K=1", "ms", "rules", "ms"] + [
        "K=2/K=1", "K=2/rules", "K=1/rules"
    ]  # fmt: skip
    learner_row = lines[-1].split()
    assert learner_row[0] == "1" and all(float(x.rstrip("x")) > 0 for x in learner_row[1:])
