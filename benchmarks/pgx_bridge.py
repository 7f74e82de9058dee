"""Env steps/s through the pgx bridge against pgx itself, side by side in one process.

    python benchmarks/pgx_bridge.py                        # othello, hex, backgammon; B 2048

Each side plays ``--steps`` random legal moves of ``--batch-size`` games as one jitted
``lax.scan`` (pgx's ``act_randomly``; the same keys), the bridge through ``envs.make("pgx/...")``
(our ``Env.step`` around pgx's ``step``: truncation and the absorbing checks once more).
The sides take turns call by call for ``--seconds`` each; the table shows median steps/s
and the bridge's cost, 1 - bridge / pgx.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import jax
import pgx
import pgx.experimental

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import envs  # noqa: E402


def make_call(env, batch: int, steps: int):
    step = jax.vmap(pgx.experimental.auto_reset(env.step, env.init))

    @jax.jit
    def call(carry):
        state, key = carry

        def move(state, key):
            k_act, k_step = jax.random.split(key)
            action = pgx.experimental.act_randomly(k_act, state.legal_action_mask)
            return step(state, action, jax.random.split(k_step, batch)), None

        key, k = jax.random.split(key)
        return jax.lax.scan(move, state, jax.random.split(k, steps))[0], key

    key = jax.random.key(0)
    return call, (jax.vmap(env.init)(jax.random.split(key, batch)), key)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--games", nargs="+", default=["othello", "hex", "backgammon"])
    parser.add_argument("--batch-size", type=int, default=2048)
    parser.add_argument("--steps", type=int, default=32, help="steps per timed call")
    parser.add_argument("--seconds", type=float, default=5.0, help="timed seconds per side")
    args = parser.parse_args(argv)
    print(f"batch {args.batch_size}, jax {jax.__version__} on {jax.devices()[0].platform}")
    print(f"{'game':<14} {'pgx steps/s':>12} {'bridge steps/s':>15} {'cost':>7}")
    for game in args.games:
        sides = {
            "pgx": make_call(pgx.make(game), args.batch_size, args.steps),
            "bridge": make_call(envs.make(f"pgx/{game}"), args.batch_size, args.steps),
        }
        carries = {name: jax.block_until_ready(call(c)) for name, (call, c) in sides.items()}
        times: dict[str, list[float]] = {name: [] for name in sides}
        while min(sum(t) for t in times.values()) < args.seconds:
            for name, (call, _) in sides.items():
                start = time.perf_counter()
                carries[name] = jax.block_until_ready(call(carries[name]))
                times[name].append(time.perf_counter() - start)
        rate = {n: args.batch_size * args.steps / statistics.median(t) for n, t in times.items()}
        print(
            f"{game:<14} {rate['pgx']:>12,.0f} {rate['bridge']:>15,.0f} "
            f"{1 - rate['bridge'] / rate['pgx']:>6.1%}",
            flush=True,
        )


if __name__ == "__main__":
    main()
