"""How a population's members run (jaxzero.run.life.ways): a CPU's cores as devices, and the way
measured once, cached, and read back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import TINY_ARGS

from jaxzero.core.config import apply_overrides
from jaxzero.core.presets import get_preset
from jaxzero.run.life import ways

ROOT = Path(__file__).resolve().parents[3]
TINY = [*TINY_ARGS, "evaluation.every=0"]


def _python(code: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k != ways.AT_ONCE_VAR}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=environ | {"PYTHONPATH": str(ROOT)} | env,
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_host_cores_become_devices_only_before_jax_starts():
    code = (
        "import jax; from jaxzero.run.life import ways; n = ways.use_host_cores(); "
        "late = ways.use_host_cores(3); print(n, jax.device_count(), late)"
    )
    done = _python(code, {ways.HOST_DEVICES_VAR: "2", "XLA_FLAGS": ""})
    assert done.returncode == 0, done.stderr[-2000:]
    # started with 2; the second call finds its own flag and does not change it
    assert done.stdout.split() == ["2", "2", "2"]
    code = (
        "import jax; jax.devices(); from jaxzero.run.life import ways; "
        "print(ways.use_host_cores(4))"
    )
    done = _python(code, {"XLA_FLAGS": ""})
    assert done.stdout.split() == ["1"], done.stderr[-2000:]  # too late: JAX has started


def test_candidates_split_over_the_devices_that_divide_the_members():
    assert ways.candidates(4) == [ways.Way(1, 1), ways.Way(1, 4)]  # this process: 1 device
    assert ways.candidates(1) == [ways.Way(1, 1)]
    assert ways.candidates(6, num_devices=1) == [ways.Way(1, 1), ways.Way(1, 6)]


def test_the_way_is_measured_once_then_read(tmp_path, monkeypatch):
    monkeypatch.delenv(ways.AT_ONCE_VAR, raising=False)
    config = apply_overrides(get_preset("tic_tac_toe"), dict(t.split("=") for t in TINY))
    cache = tmp_path / "ways.json"
    built, said = [], []

    def build(config, **kwargs):
        built.append((kwargs["devices"], kwargs["members_at_once"]))
        from jaxzero.core.population import make_population

        return make_population(config, **kwargs)

    way = ways.choose(config, seeds=[0, 1], cache=cache, build=build, log=said.append)
    assert built == [(1, 1), (1, 2)] and way in ways.candidates(2)
    assert "measured a move of each way" in said[0], said
    [entry] = json.loads(cache.read_text()).values()
    assert (entry["devices"], entry["at_once"]) == (way.devices, way.at_once)

    def refuse(*args, **kwargs):
        raise AssertionError("measured again")

    again = ways.choose(config, seeds=[5, 6], cache=cache, build=refuse, log=said.append)
    assert again == way and "measured before" in said[1]
    # other shapes are another entry: measured
    bigger = apply_overrides(config, {"selfplay.batch_size": 16})
    with pytest.raises(AssertionError, match="measured again"):
        ways.choose(bigger, seeds=[0, 1], cache=cache, build=refuse)
    monkeypatch.setenv(ways.AT_ONCE_VAR, "2")  # set by hand: nothing measured
    assert ways.choose(bigger, seeds=[0, 1], cache=cache, build=refuse) == ways.Way(1, 2)
    assert ways.choose(bigger, seeds=[0, 1], at_once=1, build=refuse) == ways.Way(1, 1)


def test_cli_population_runs_over_the_cores(tmp_path):
    """The command line makes the cores devices and splits the members over them (the
    way set, so that one program compiles: the measuring is the test above)."""
    env = {ways.HOST_DEVICES_VAR: "2", ways.AT_ONCE_VAR: "1"}
    command = ["-m", "jaxzero", "train", "tic_tac_toe", *TINY, "--seeds", "2", "--iterations", "1"]
    done = subprocess.run(
        [sys.executable, *command, "--out", str(tmp_path / "run")], cwd=tmp_path, timeout=600,
        env=os.environ | env, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    told = "population: members one at a time on 2 devices (as set, not measured)"
    assert told in done.stderr, done.stderr[-3000:]
    assert (tmp_path / "run/members/1/config.json").exists()
