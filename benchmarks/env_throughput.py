"""Environment throughput: steps per second of random legal play with auto-reset.

Ours vs pgx's same game vs OpenSpiel's C++ game driven from Python, side by side in one
process, at several batch sizes:

    python benchmarks/env_throughput.py --games tic_tac_toe connect_four \
        --batch-sizes 1 256 2048 --seconds 2

How each side is driven, so the comparison is fair:

* JAX sides (ours, pgx) run the same jitted ``lax.scan``: per step one key split, one
  uniform draw per game that picks an action uniformly among the legal ones (same
  sampler on both sides), ``vmap(env.step)``, then ``vmap(env.init)`` with fresh keys
  and a select that restarts every game that has just ended (auto-reset).
  Compilation and one warm-up call are excluded; every timed call ends in
  ``block_until_ready``. A step is one action in one game.
* OpenSpiel: ``batch`` C++ states stepped one after the other from Python with
  ``random.choice(state.legal_actions())``; a finished game is replaced by a new one.

Each (game, batch) cell is measured ``--rounds`` times alternating the sides, and the
median rate is reported. To add a game, add a :data:`GAMES` entry; a peer without the
game is ``None`` and its columns print as "-".
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import envs  # noqa: E402


class Entry(NamedTuple):
    ours: str  # envs.make id
    pgx: str | None  # pgx.make id, or None when pgx has no such game
    openspiel: str | None  # pyspiel.load_game string, or None


GAMES: dict[str, Entry] = {
    "tic_tac_toe": Entry("tic_tac_toe", "tic_tac_toe", "tic_tac_toe"),
    "connect_four": Entry("connect_four", "connect_four", "connect_four"),
}


def uniform_legal(key: jax.Array, mask: jax.Array) -> jax.Array:
    """One action per row, uniform among the legal ones: bool [B, A] -> int32 [B].

    Draw k uniform in {0, ..., n - 1} for the n legal actions and return the k-th legal
    action: the number of columns whose running count of legal actions is still <= k.
    The running counts are one small matmul and the answer one reduction; XLA computes
    both once, instead of fusing (and repeating) the sampler into its consumers.
    """
    num_actions = mask.shape[-1]
    upper = jnp.triu(jnp.ones((num_actions, num_actions), jnp.float32))  # [a, b]: a <= b
    seen = mask.astype(jnp.float32) @ upper  # [B, A] legal actions among columns 0..b
    k = jnp.floor(jax.random.uniform(key, seen.shape[:1]) * seen[:, -1])  # [B]
    action = (seen <= k[:, None]).sum(axis=-1)  # [B] columns before the k-th legal one
    return jnp.minimum(action, num_actions - 1).astype(jnp.int32)


def jax_runner(env: Any, batch: int, steps_per_call: int) -> Callable[[], int]:
    """A closure that plays ``steps_per_call`` auto-reset steps of ``batch`` games.

    The action for the next step is sampled at the end of the current one and carried
    through the scan, so it is computed once (a loop-carried buffer) rather than fused
    into, and recomputed by, every consumer inside ``env.step``.
    """
    init = jax.vmap(env.init)
    step = jax.vmap(env.step)

    def body(carry, _):
        state, action, key = carry
        key, k_act, k_step, k_init = jax.random.split(key, 4)
        state = step(state, action, jax.random.split(k_step, batch))
        fresh = init(jax.random.split(k_init, batch))
        done = state.terminated | state.truncated  # bool [B]

        def restart(new, old):
            return jnp.where(done.reshape(done.shape + (1,) * (old.ndim - 1)), new, old)

        state = jax.tree.map(restart, fresh, state)
        return (state, uniform_legal(k_act, state.legal_action_mask), key), None

    @jax.jit
    def run(state, action, key):
        carry, _ = jax.lax.scan(body, (state, action, key), None, length=steps_per_call)
        return carry

    key, k_init, k_act = jax.random.split(jax.random.key(0, impl="rbg"), 3)
    state = jax.jit(init)(jax.random.split(k_init, batch))
    carry = [state, jax.jit(uniform_legal)(k_act, state.legal_action_mask), key]
    jax.block_until_ready(run(*carry))  # compile + warm-up

    def call() -> int:
        carry[:] = run(*carry)
        jax.block_until_ready(carry)
        return batch * steps_per_call

    return call


def openspiel_runner(name: str, batch: int, steps_per_call: int) -> Callable[[], int]:
    import pyspiel

    game = pyspiel.load_game(name)
    rng = random.Random(0)
    states = [game.new_initial_state() for _ in range(batch)]
    rounds = max(1, steps_per_call // batch)

    def call() -> int:
        for _ in range(rounds):
            for i, state in enumerate(states):
                state.apply_action(rng.choice(state.legal_actions()))
                if state.is_terminal():
                    states[i] = game.new_initial_state()
        return rounds * batch

    call()
    return call


def rate(call: Callable[[], int], seconds: float) -> float:
    steps, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds or steps == 0:
        steps += call()
    return steps / elapsed


def measure(entry: Entry, batch: int, args: argparse.Namespace) -> dict[str, float | None]:
    steps_per_call = max(16, min(4096, 2**17 // batch))
    runners: dict[str, Callable[[], int] | None] = {
        "ours": jax_runner(envs.make(entry.ours), batch, steps_per_call),
        "pgx": None,
        "openspiel": None,
    }
    if entry.pgx is not None and "pgx" in args.peers:
        import pgx

        runners["pgx"] = jax_runner(pgx.make(entry.pgx), batch, steps_per_call)
    if entry.openspiel is not None and "openspiel" in args.peers:
        runners["openspiel"] = openspiel_runner(entry.openspiel, batch, 4096)
    rates: dict[str, list[float]] = {side: [] for side in runners}
    for _ in range(args.rounds):
        for side, call in runners.items():
            if call is not None:
                seconds = args.seconds if side != "openspiel" else min(args.seconds, 1.0)
                rates[side].append(rate(call, seconds))
    return {side: statistics.median(r) if r else None for side, r in rates.items()}


def fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", nargs="+", default=list(GAMES), choices=list(GAMES))
    parser.add_argument("--batch-sizes", nargs="+", type=int, default=[1, 256, 2048])
    parser.add_argument("--seconds", type=float, default=2.0, help="timed seconds per side")
    parser.add_argument("--rounds", type=int, default=3, help="alternating repeats; median")
    parser.add_argument(
        "--peers", nargs="*", default=["pgx", "openspiel"], choices=["pgx", "openspiel"]
    )
    args = parser.parse_args(argv)

    print(
        f"jax {jax.__version__} on {jax.devices()[0].platform}; steps/s, median of "
        f"{args.rounds} x {args.seconds:g} s"
    )
    header = "| game | batch | ours | pgx | OpenSpiel | ours/pgx |"
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for game in args.games:
        for batch in args.batch_sizes:
            r = measure(GAMES[game], batch, args)
            ratio = f"{r['ours'] / r['pgx']:.2f}x" if r["pgx"] else "-"
            cells = [game, str(batch), fmt(r["ours"]), fmt(r["pgx"]), fmt(r["openspiel"]), ratio]
            print("| " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
