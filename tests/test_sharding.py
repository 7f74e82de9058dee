"""Data parallelism (jaxzero.core.sharding): n devices compute what one does; two processes train.

The multi-device checks run in subprocesses, so the rest of the suite keeps its single
CPU device: one with ``--xla_force_host_platform_device_count=4``, and a pair of
processes joined by ``jax.distributed`` on localhost.
"""

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import pytest

from jaxzero.core import sharding
from jaxzero.core.config import apply_overrides
from jaxzero.core.presets import get_preset

ROOT = Path(__file__).resolve().parents[1]

TINY = {
    "selfplay.batch_size": 8,
    "selfplay.moves_per_iteration": 9,
    "replay.capacity": 256,
    "replay.min_size": 8,
    "optim.minibatch_size": 16,
    "optim.updates_per_iteration": 2,
    "network.hidden_size": 32,
    "search.num_simulations": 4,
    "search.max_num_considered_actions": 4,
    "evaluation.every": 0,
}


def _run(script: str, env: dict[str, str], timeout: float = 300) -> subprocess.Popen:
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script)],
        cwd=ROOT,
        env=full_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _result(proc: subprocess.Popen, timeout: float = 300) -> dict:
    out, _ = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, out[-4000:]
    lines = [line for line in out.splitlines() if line.startswith("RESULT ")]
    assert lines, out[-4000:]
    return json.loads(lines[-1].removeprefix("RESULT "))


FOUR_DEVICES = """
    import json
    import jax
    import numpy as np
    from jaxzero.core.config import apply_overrides
    from jaxzero.core.presets import get_preset
    from jaxzero.core.loop import make_trainer

    assert jax.device_count() == 4, jax.devices()
    tiny = json.loads({tiny!r})
    results = {{}}
    for n in (1, 4):
        config = apply_overrides(get_preset("tic_tac_toe"), tiny | {{"num_devices": n}})
        trainer = make_trainer(config)
        state = trainer.init(jax.random.key(0))
        for _ in range(3):
            state, metrics, _ = trainer.iteration(state)
        results[n] = (trainer, state, metrics)

    flat = lambda tree: np.concatenate([np.ravel(x) for x in jax.tree.leaves(tree)])
    (t1, s1, m1), (t4, s4, m4) = results[1], results[4]
    p1, p4 = flat(jax.device_get(s1.params)), flat(jax.device_get(s4.params))
    obs1, obs4 = np.asarray(s1.replay.observation), np.asarray(s4.replay.observation)
    p0 = flat(jax.device_get(t1.init(jax.random.key(0)).params))
    out = {{
        "max_param_diff": float(np.abs(p1 - p4).max()),
        "max_param": float(np.abs(p1).max()),
        "params_moved": float(np.abs(p1 - p0).max()),
        "updates": [int(s1.updates), int(s4.updates)],
        "positions_written": [int(s1.positions_written), int(s4.positions_written)],
        "replay_equal": bool(np.array_equal(obs1, obs4)),
        "policy_loss": [float(m1["policy_loss"]), float(m4["policy_loss"])],
        "compiles": [t1.iteration._cache_size(), t4.iteration._cache_size()],
        "replay_spec": list(s4.replay.observation.sharding.spec),
        "replay_shard_rows": [s.data.shape[0] for s in s4.replay.observation.addressable_shards],
        "games_shard_rows": [s.data.shape[0] for s in s4.selfplay.length.addressable_shards],
        "params_replicated": all(
            x.sharding.is_fully_replicated for x in jax.tree.leaves(s4.params)
        ),
        "opt_replicated": all(
            x.sharding.is_fully_replicated for x in jax.tree.leaves(s4.opt_state)
        ),
        "mesh_devices": [len(s.replay.observation.sharding.device_set) for s in (s1, s4)],
    }}
    print("RESULT " + json.dumps(out))
"""


@pytest.fixture(scope="module")
def four_devices() -> dict:
    script = FOUR_DEVICES.format(tiny=json.dumps(TINY))
    proc = _run(script, {"XLA_FLAGS": "--xla_force_host_platform_device_count=4"})
    return _result(proc)


def test_four_devices_give_the_parameters_of_one(four_devices):
    r = four_devices
    assert r["mesh_devices"] == [1, 4]
    assert r["updates"][0] == r["updates"][1] > 0
    assert r["params_moved"] > 1e-4  # the updates did change the parameters
    assert r["max_param_diff"] <= 1e-5 * max(1.0, r["max_param"]), r
    # Self-play is the same computation: same games, same replay contents.
    assert r["positions_written"][0] == r["positions_written"][1] > 0
    assert r["replay_equal"]
    assert r["policy_loss"][1] == pytest.approx(r["policy_loss"][0], rel=1e-5)


def test_sharded_iteration_compiles_once(four_devices):
    assert four_devices["compiles"] == [1, 1]


def test_state_is_split_along_data_and_networks_replicated(four_devices):
    r = four_devices
    assert r["replay_spec"] == [sharding.DATA_AXIS]
    assert r["replay_shard_rows"] == [TINY["replay.capacity"] // 4] * 4
    assert r["games_shard_rows"] == [TINY["selfplay.batch_size"] // 4] * 4
    assert r["params_replicated"] and r["opt_replicated"]


def test_global_sizes_must_divide_over_the_mesh():
    config = apply_overrides(get_preset("tic_tac_toe"), TINY | {"selfplay.batch_size": 6})
    sharding.check_divisible(config, 2)
    with pytest.raises(ValueError, match=r"multiple of 4: selfplay\.batch_size=6"):
        sharding.check_divisible(config, 4)
    config = apply_overrides(config, {"replay.capacity": 250, "selfplay.batch_size": 8})
    with pytest.raises(ValueError, match=r"replay\.capacity=250"):
        sharding.check_divisible(config, 4)


def test_mesh_size_is_checked():
    assert sharding.make_mesh(0).size == jax.device_count()
    assert sharding.make_mesh(1).axis_names == (sharding.DATA_AXIS,)
    with pytest.raises(ValueError, match="JAX sees"):
        sharding.make_mesh(jax.device_count() + 1)


def test_initialize_is_a_no_op_without_a_coordinator(monkeypatch):
    for name in (sharding.ENV_COORDINATOR, sharding.ENV_NUM_PROCESSES, sharding.ENV_PROCESS_ID):
        monkeypatch.delenv(name, raising=False)
    assert sharding.initialize() is jax.distributed.is_initialized()
    if not jax.distributed.is_initialized():
        with pytest.raises(ValueError, match="JAXZERO_PROCESS_ID"):
            sharding.initialize(coordinator="127.0.0.1:1", num_processes=2)


TWO_PROCESSES = """
    import json
    import jax
    from jaxzero.core.config import apply_overrides
    from jaxzero.core.presets import get_preset
    from jaxzero.run.driver import train

    tiny = json.loads({tiny!r})
    config = apply_overrides(
        get_preset("tic_tac_toe"),
        tiny | {{"train.log_every": 1, "train.checkpoint_every": 100}},
    )
    first = train({run_dir!r}, config, iterations=1)
    # Resumed from the sharded checkpoint, with a time budget too: process 0's stop
    # decision is broadcast before every iteration.
    result = train({run_dir!r}, resume=True, iterations=2, seconds=600)
    print("RESULT " + json.dumps({{
        "process": jax.process_index(),
        "processes": jax.process_count(),
        "devices": jax.device_count(),
        "iterations": [first.iterations, result.iterations],
        "logged": sorted(result.last_metrics),
    }}))
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_two_processes_train_resume_and_write_each_checkpoint_once(tmp_path):
    run_dir = tmp_path / "run"
    script = TWO_PROCESSES.format(tiny=json.dumps(TINY), run_dir=str(run_dir))
    coordinator = f"127.0.0.1:{_free_port()}"
    procs = [
        _run(
            script,
            {
                sharding.ENV_COORDINATOR: coordinator,
                sharding.ENV_NUM_PROCESSES: "2",
                sharding.ENV_PROCESS_ID: str(rank),
                "XLA_FLAGS": "--xla_force_host_platform_device_count=1",
            },
        )
        for rank in range(2)
    ]
    try:
        results = [_result(proc) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    assert [r["process"] for r in results] == [0, 1]
    assert all(r["processes"] == 2 and r["devices"] == 2 for r in results)
    assert all(r["iterations"] == [1, 2] for r in results)
    assert "policy_loss" in results[0]["logged"] and results[1]["logged"] == []
    # One checkpoint per run, each written once; one metrics row per iteration, by
    # process 0 alone.
    steps = sorted(p.name for p in (run_dir / "checkpoints").iterdir())
    assert steps == ["1", "2"], steps
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [row["iteration"] for row in rows] == [1, 2]
    # The checkpoint restores on this single-device process.
    from jaxzero.run.agent import load_agent

    agent = load_agent(run_dir)
    assert agent.iteration == 2
