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

ROOT = Path(__file__).resolve().parents[2]

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


def _devices(count: int) -> str:
    """XLA_FLAGS for ``count`` CPU devices, beside the suite's own (its fast compile)."""
    return f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={count}"


def _run(
    script: str, env: dict[str, str], timeout: float = 300, drop: tuple[str, ...] = ()
) -> subprocess.Popen:
    """``script`` in a Python of its own, with ``env`` and without the variables ``drop``."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    for name in drop:
        full_env.pop(name, None)
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
    import json, re
    import jax
    import numpy as np
    from jaxzero.core import sharding
    from jaxzero.core.config import apply_overrides
    from jaxzero.core.presets import get_preset
    from jaxzero.core.loop import make_step, make_trainer

    assert jax.device_count() == 4, jax.devices()
    tiny = json.loads({tiny!r})
    config = apply_overrides(get_preset("tic_tac_toe"), tiny | {{"num_devices": 4}})
    trainer = make_trainer(config)
    start = trainer.init(jax.random.key(0))
    state = start
    for _ in range(3):
        state, metrics, moves = trainer.iteration(state)

    # The same per-device program on one device: vmap over the 4 shards, same axis name.
    abstract = jax.eval_shape(trainer.init, jax.random.key(0))
    axes = jax.tree.map(lambda s: 0 if s.spec else None,
                        sharding.state_shardings(abstract, sharding.make_mesh(4)))
    split = lambda x, a: x if a is None else x.reshape(4, x.shape[0] // 4, *x.shape[1:])
    join = lambda x, a: x if a is None else x.reshape(-1, *x.shape[2:])
    step = make_step(config, trainer.env, trainer.apply_fn, trainer.optimizer, trainer.search,
                     axis_name=sharding.DATA_AXIS, shards=4)
    one = jax.jit(jax.vmap(step, in_axes=(axes,), out_axes=(axes, None, 1),
                           axis_name=sharding.DATA_AXIS, axis_size=4), device=jax.devices()[0])
    reference = jax.tree.map(split, jax.device_get(start), axes)
    for _ in range(3):
        reference, ref_metrics, ref_moves = one(reference)
    reference = jax.tree.map(join, reference, axes)

    flat = lambda tree: np.concatenate([np.ravel(x) for x in jax.tree.leaves(tree)])
    p4, p1 = flat(jax.device_get(state.params)), flat(jax.device_get(reference.params))
    p0 = flat(jax.device_get(start.params))
    hlo = trainer.iteration.lower(state).compile().as_text()
    kinds = r"\\s(all-gather|all-reduce|collective-permute|all-to-all)(-start)?\\("
    collectives = [(re.search(kinds, line).group(1), re.search(r'op_name="([^"]*)"', line))
                   for line in hlo.splitlines() if re.search(kinds, line)]
    out = {{
        "max_param_diff": float(np.abs(p1 - p4).max()),
        "max_param": float(np.abs(p1).max()),
        "params_moved": float(np.abs(p4 - p0).max()),
        "updates": [int(state.updates), int(reference.updates)],
        "positions_written": [int(state.positions_written), int(reference.positions_written)],
        "replay_equal": bool(np.array_equal(np.asarray(state.replay.observation),
                                            np.asarray(reference.replay.observation))),
        "ring_sizes": [np.asarray(state.replay.size).tolist(),
                       np.asarray(reference.replay.size).tolist()],
        "moves_equal": bool(np.array_equal(np.asarray(moves["action"]),
                                           np.asarray(ref_moves["action"]).reshape(9, -1))),
        "policy_loss": [float(metrics["policy_loss"]), float(ref_metrics["policy_loss"])],
        "collectives": [[kind, m.group(1) if m else ""] for kind, m in collectives],
        "compiles": trainer.iteration._cache_size(),
        "replay_spec": list(state.replay.observation.sharding.spec),
        "replay_shard_rows": [s.data.shape[0] for s in state.replay.observation.addressable_shards],
        "games_shard_rows": [s.data.shape[0] for s in state.selfplay.length.addressable_shards],
        "params_replicated": all(
            x.sharding.is_fully_replicated for x in jax.tree.leaves(state.params)
        ),
        "opt_replicated": all(
            x.sharding.is_fully_replicated for x in jax.tree.leaves(state.opt_state)
        ),
    }}
    print("RESULT " + json.dumps(out))
"""


@pytest.fixture(scope="module")
def four_devices() -> dict:
    script = FOUR_DEVICES.format(tiny=json.dumps(TINY))
    proc = _run(script, {"XLA_FLAGS": _devices(4)})
    return _result(proc)


def test_four_devices_compute_what_one_device_computes_of_their_shards(four_devices):
    """Each device plays its own games with its own key (shard_map); one device running
    the same per-device program over the four shards (vmap) ends in the same state."""
    r = four_devices
    assert r["updates"][0] == r["updates"][1] > 0
    assert r["params_moved"] > 1e-4  # the updates did change the parameters
    assert r["max_param_diff"] <= 1e-5 * max(1.0, r["max_param"]), r
    assert r["positions_written"][0] == r["positions_written"][1] > 0
    assert r["replay_equal"] and r["moves_equal"]
    assert r["ring_sizes"][0] == r["ring_sizes"][1] and len(r["ring_sizes"][0]) == 4
    assert r["policy_loss"][1] == pytest.approx(r["policy_loss"][0], rel=1e-5)


def test_no_collective_inside_self_play(four_devices):
    """Self-play and its search are per device: the compiled iteration's collectives are
    the metric sums, the gradient mean of each update and the gather of the moves played
    (after the loop), none inside the self-play scope."""
    collectives = four_devices["collectives"]
    assert not [name for _, name in collectives if "selfplay" in name], collectives
    reductions = [name for kind, name in collectives if kind == "all-reduce"]
    assert reductions and all(name.endswith(("psum", "pmean")) for name in reductions)
    assert any("while/body" in name for name in reductions)  # the updates' gradient mean
    assert {kind for kind, _ in collectives} == {"all-reduce", "all-gather"}, collectives


def test_sharded_iteration_compiles_once(four_devices):
    assert four_devices["compiles"] == 1


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
    from jaxzero.run.life.driver import train

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
                "XLA_FLAGS": _devices(1),
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
    from jaxzero.run.agents.agent import load_agent

    agent = load_agent(run_dir)
    assert agent.iteration == 2


TWO_DEVICE_POPULATION = """
    import json, os, re, subprocess, sys
    import jax
    import numpy as np
    from jaxzero.core.config import apply_overrides
    from jaxzero.core.population import make_population, member
    from jaxzero.core.presets import get_preset

    assert jax.device_count() == 2, jax.devices()
    config = apply_overrides(get_preset("tic_tac_toe"), json.loads({tiny!r}))
    hyper = {{"optim.learning_rate": [1e-3, 2e-3, 3e-3, 4e-3]}}
    on = lambda n: apply_overrides(config, {{"num_devices": n}})
    # a CPU's way: the members over the devices (its cores), one at a time on each
    split = make_population(on(2), seeds=range(4), hyper=hyper, members_at_once=1)
    whole = make_population(on(1), seeds=range(4), hyper=hyper)  # all four vmapped
    a, b = split.init(), whole.init()
    for _ in range(2):
        a, metrics, _ = split.iteration(a)
        b, _, _ = whole.iteration(b)
    hlo = split.step.lower(a, split.values).compile().as_text()
    kinds = r"\\s(all-gather|all-reduce|collective-permute|all-to-all|reduce-scatter)(-start)?\\("
    flat = lambda tree: np.concatenate([np.ravel(x) for x in jax.tree.leaves(jax.device_get(tree))])
    leaf = jax.tree.leaves(a.params)[0]

    # Every program member() compiles, on the split population and a loaded machine.
    dump = {dump!r}
    state = jax.block_until_ready(a)
    host = lambda x: np.asarray(jax.random.key_data(x) if jax.dtypes.issubdtype(
        x.dtype, jax.dtypes.prng_key) else x)
    before = set(os.listdir(dump))
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])  # a loaded machine
    try:
        for _ in range(20):
            for k in range(4):
                mine = jax.block_until_ready(member(state, k))
    finally:
        busy.kill()
    same = all(np.array_equal(host(x), host(y)[k]) for k in range(4) for x, y in
               zip(jax.tree.leaves(member(state, k)), jax.tree.leaves(state), strict=True))
    devices = {{d for leaf in jax.tree.leaves(member(state, 3)) for d in leaf.devices()}}
    compiled = [name for name in set(os.listdir(dump)) - before
                if name.endswith("after_optimizations.txt")]
    anywhere = r"\\s(all-gather|all-reduce|collective-permute|all-to-all|reduce-scatter)"
    member_collective = [name for name in compiled
                         if re.search(anywhere, open(os.path.join(dump, name)).read())]
    print("RESULT " + json.dumps({{
        "member_programs": len(compiled), "member_collective": member_collective[:3],
        "member_same": same, "member_devices": len(devices),
        "collectives": sum(bool(re.search(kinds, line)) for line in hlo.splitlines()),
        "shards": [s.data.shape[0] for s in leaf.addressable_shards],
        "max_param_diff": float(np.abs(flat(a.params) - flat(b.params)).max()),
        "replay_equal": bool((flat(a.replay.observation) == flat(b.replay.observation)).all()),
        "policy_diff": float(np.abs(flat(a.replay.policy) - flat(b.replay.policy)).max()),
        "games_equal": flat(a.positions_written).tolist() == flat(b.positions_written).tolist(),
        "metric_shape": list(metrics["policy_loss"].shape),
    }}))
"""


@pytest.fixture(scope="module")
def two_device_population(tmp_path_factory) -> dict:
    """TWO_DEVICE_POPULATION's findings: every program compiled, none read from the
    compilation cache, and dumped (tests of member() read the dump)."""
    dump = tmp_path_factory.mktemp("hlo")
    script = TWO_DEVICE_POPULATION.format(tiny=json.dumps(TINY), dump=str(dump))
    flags = f"{_devices(2)} --xla_dump_to={dump}"
    return _result(_run(script, {"XLA_FLAGS": flags}, drop=("JAX_COMPILATION_CACHE_DIR",)))


def test_a_population_splits_member_wise_with_no_collective(two_device_population):
    """Four members over two devices, one at a time on each (a CPU's way over its cores):
    two each, no collective in the compiled iteration, and the same members as all four
    vmapped on one device."""
    r = two_device_population
    assert r["collectives"] == 0, r
    assert r["shards"] == [2, 2]
    assert r["max_param_diff"] <= 1e-5 and r["policy_diff"] <= 1e-5 and r["replay_equal"]
    assert r["games_equal"]
    assert r["metric_shape"] == [4]


def test_members_leave_a_population_over_the_cores_with_no_collective(two_device_population):
    """Issue 56 M7: every program member() compiles, on a population split over two forced
    host devices and a loaded machine, runs on one device: no all-reduce (which deadlocks
    XLA CPU's rendezvous now and again); the members are the rows of the stacked state."""
    r = two_device_population
    assert r["member_programs"] > 0 and r["member_collective"] == [], r
    assert r["member_same"] and r["member_devices"] == 1, r
