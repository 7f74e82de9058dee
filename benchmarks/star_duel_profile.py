"""Where star_duel's step time goes, and how two versions of the module compare.

    python benchmarks/star_duel_profile.py --batch 2048 --seconds 2
    python benchmarks/star_duel_profile.py --compare /tmp/star_duel_old.py

Times, at one batch size, each piece of ``benchmarks/env_throughput.py``'s loop on its own:
the whole auto-reset loop, ``vmap(env.step)``, ``vmap(env.init)``, the legal-action sampler,
and the step's parts (the action, the turn change, the observation, the legal mask) on a
pool of positions reached by random play. With ``--compare PATH`` the same pieces are timed
for the module at PATH (e.g. ``git show HEAD:envs/star_duel.py > /tmp/star_duel_old.py``),
the two versions taking turns call by call, and the table gains a new/old column;
``--compare-throughput PATH`` gives that side another ``env_throughput.py`` (its sampler).

Like env_throughput.py, XLA runs on one thread and calls are timed by this process's CPU
time (steps per core-second), median over many calls.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

os.environ["XLA_FLAGS"] = (
    f"{os.environ.get('XLA_FLAGS', '')} --xla_cpu_multi_thread_eigen=false "
    "intra_op_parallelism_threads=1"
).strip()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import env_throughput  # noqa: E402

from envs import star_duel  # noqa: E402


def load(path: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"star_duel_{abs(hash(path))}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def pieces(sd: ModuleType, et: ModuleType, batch: int) -> dict[str, Callable[[], int]]:
    """Closures that each run one piece on ``batch`` games and return the games stepped."""
    env = sd.StarDuel()
    step = jax.jit(jax.vmap(env.step))
    init = jax.jit(jax.vmap(env.init))

    # A pool of positions from random play (a mix of early and late turns, all modes).
    key = jax.random.key(0, impl="rbg")
    loop = et.jax_runner(env, batch, 64)
    states = init(jax.random.split(key, batch))
    sample = jax.jit(et.uniform_legal)

    @jax.jit
    def restart(fresh, states):
        done = states.terminated | states.truncated  # bool [B]
        where = lambda new, old: jnp.where(done.reshape((-1,) + (1,) * (old.ndim - 1)), new, old)
        return jax.tree.map(where, fresh, states)

    for _ in range(150):
        k1, k2, key = jax.random.split(key, 3)
        action = sample(jax.random.uniform(k1, (batch,)), states.legal_action_mask)
        states = step(states, action, jax.random.split(k2, batch))
        states = restart(init(jax.random.split(k1, batch)), states)
    draws = jax.random.uniform(key, (batch,))
    actions = sample(draws, states.legal_action_mask)
    keys = jax.random.split(key, batch)
    bits = jax.vmap(lambda k: sd._random16(k, sd.HAND + 1))(keys)
    end = actions == sd.END_TURN

    act = jax.jit(jax.vmap(sd._act))
    pass_turn = jax.jit(jax.vmap(sd._pass_turn))
    observation = jax.jit(jax.vmap(lambda s: sd._observation(s, True, env)))
    legal = jax.jit(jax.vmap(sd._legal))

    def timed(fn: Callable, *args) -> Callable[[], int]:
        jax.block_until_ready(fn(*args))

        def call() -> int:
            jax.block_until_ready(fn(*args))
            return batch

        return call

    return {
        "loop (sample+step+init)": loop,
        "step": timed(step, states, actions, keys),
        "init": timed(init, keys),
        "sample legal": timed(sample, draws, states.legal_action_mask),
        "  _act": timed(act, states, actions, bits),
        "  _pass_turn": timed(pass_turn, states, end),
        "  _observation": timed(observation, states),
        "  _legal": timed(legal, states),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=2048)
    parser.add_argument("--seconds", type=float, default=2.0, help="timed seconds per piece")
    parser.add_argument("--compare", help="path of another star_duel.py to time side by side")
    parser.add_argument(
        "--compare-throughput",
        help="path of another env_throughput.py (its sampler and loop) for the --compare side",
    )
    args = parser.parse_args()

    versions = {"new": pieces(star_duel, env_throughput, args.batch)}
    if args.compare:
        et = load(args.compare_throughput) if args.compare_throughput else env_throughput
        versions["old"] = pieces(load(args.compare), et, args.batch)
    print(f"batch {args.batch}; games (steps) per CPU-second, median over calls")
    header = "| piece | " + " | ".join(versions) + (" | new/old |" if args.compare else " |")
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for name in versions["new"]:
        rates: dict[str, list[float]] = {v: [] for v in versions}
        deadline = time.perf_counter() + args.seconds * len(versions)
        while time.perf_counter() < deadline or len(rates["new"]) < 5:
            for v, calls in versions.items():
                rates[v].append(env_throughput.timed(calls[name], "cpu"))
        med = {v: statistics.median(r) for v, r in rates.items()}
        cells = [name] + [f"{med[v]:,.0f}" for v in versions]
        if args.compare:
            cells.append(f"{med['new'] / med['old']:.2f}x")
        print("| " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
