"""Environment throughput: steps per second of random legal play with auto-reset.

Ours vs pgx's same game vs OpenSpiel's C++ game driven from Python, side by side in one
process, at several batch sizes:

    python benchmarks/env_throughput.py --games tic_tac_toe connect_four \
        --batch-sizes 1 256 2048 --seconds 3

How each side is driven, so that the comparison is fair:

* JAX sides (ours, pgx) run the same jitted ``lax.scan``: per step, pick an action
  uniformly among the legal ones with a pre-drawn ``jax.random.uniform`` number (same
  sampler on both sides), ``vmap(env.step)`` with fresh per-game keys, then
  ``vmap(env.init)`` with fresh keys and a select that restarts every game that has just
  ended (auto-reset, as pgx's own ``auto_reset`` wrapper does). Keys use JAX's "rbg"
  implementation (XLA's RngBitGenerator) on both sides: with the default threefry,
  drawing the numbers costs more than a tic-tac-toe step on CPU and would drown the
  difference being measured. Compilation and a warm-up call are excluded; every timed
  call ends in ``block_until_ready``. A step is one action in one game.
* OpenSpiel: ``batch`` C++ states stepped one after the other from Python with
  ``random.choice(state.legal_actions())``; a finished game is replaced by a new one.

Timing: calls of a few milliseconds; the two JAX sides take turns call by call for
``--seconds`` each (so both meet the same machine load), then OpenSpiel runs alone
(its Python loop churns through the caches between calls). The table shows each side's
median rate (``--statistic total``: all its steps over all its time, slow calls
included). By default XLA runs each computation on one thread and calls are timed by
this process's CPU time: steps per core-second, which other processes on a shared
machine barely move (``--xla-threads all --clock wall`` for XLA's thread pool and the
wall clock).

To add a game, add a :data:`GAMES` entry; a peer without the game is ``None`` and its
columns print as "-".
"""

from __future__ import annotations

import argparse
import functools
import importlib.metadata
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import envs  # noqa: E402


class Entry(NamedTuple):
    ours: str  # envs.make id
    pgx: str | None  # pgx.make id, or None when pgx has no such game
    openspiel: str | None  # pyspiel.load_game string, or None


GAMES: dict[str, Entry] = {
    "tic_tac_toe": Entry("tic_tac_toe", "tic_tac_toe", "tic_tac_toe"),
    "connect_four": Entry("connect_four", "connect_four", "connect_four"),
    "star_duel": Entry("star_duel", None, None),  # no peer has a deck-builder
    # Same board, komi and move cap; a superko repeat: masked (ours), loses (pgx), draws (OS).
    "go_9x9": Entry("go_9x9", "go_9x9", "go(board_size=9,komi=7.5)"),
}


@functools.cache
def _kth_legal_table(num_actions: int) -> np.ndarray:
    """int32 [2**A * A]: entry ``mask * A + k`` is the k-th set bit of ``mask`` (mod count)."""
    table = np.zeros((1 << num_actions, num_actions), np.int32)
    for mask in range(1, 1 << num_actions):
        legal = [a for a in range(num_actions) if mask >> a & 1]
        table[mask] = [legal[k % len(legal)] for k in range(num_actions)]
    return table.reshape(-1)


def uniform_legal(draw: jax.Array, mask: jax.Array) -> jax.Array:
    """The legal action at position floor(draw * n) among the n legal ones, per row.

    draw: float32 [B] uniform in [0, 1); mask: bool [B, A] -> int32 [B]. With A <= 12 the
    mask becomes an integer and one lookup in a (2**A, A) table gives the action. Larger
    games pack the mask into 32-bit words (a reduction), count each word's legal actions
    with a popcount, pick the word that holds the k-th legal action and find the action's
    bit in it by bisection: a few dozen integer operations a row, whatever A is. Either way
    the action comes out of a gather, which XLA computes once instead of fusing (and
    repeating) the sampler inside every consumer of the action.
    """
    batch, num_actions = mask.shape
    if num_actions <= 12:
        bits = jnp.zeros(mask.shape[:1], jnp.int32)  # [B]; unrolled, as reductions are slow
        for a in range(num_actions):
            bits = bits | jnp.where(mask[:, a], 1 << a, 0)
        k = (draw * jax.lax.population_count(bits)).astype(jnp.int32)  # [B]
        return jnp.asarray(_kth_legal_table(num_actions))[bits * num_actions + k]
    num_words = -(-num_actions // 32)
    padded = jnp.pad(mask, ((0, 0), (0, 32 * num_words - num_actions)))
    shifts = jnp.left_shift(jnp.uint32(1), jnp.arange(32, dtype=jnp.uint32))  # uint32 [32]
    words = jnp.where(padded.reshape(batch, num_words, 32), shifts, jnp.uint32(0))
    words = words.sum(axis=-1, dtype=jnp.uint32)  # uint32 [B, W]: bit b of word w is 32w + b
    counts = jax.lax.population_count(words).astype(jnp.int32)  # int32 [B, W]
    k = (draw * counts.sum(axis=-1)).astype(jnp.int32)  # int32 [B]: rank among legal actions
    word, base, start = words[:, 0], jnp.zeros(batch, jnp.int32), jnp.zeros(batch, jnp.int32)
    seen = counts[:, 0]  # legal actions in words 0..w-1 at step w
    for w in range(1, num_words):  # the word holding rank k, and the legal actions before it
        later = k >= seen
        word = jnp.where(later, words[:, w], word)
        base = jnp.where(later, 32 * w, base)
        start = jnp.where(later, seen, start)
        seen = seen + counts[:, w]
    rank = k - start  # the action is the word's set bit of this rank
    for width in (16, 8, 4, 2, 1):
        low = jax.lax.population_count(word & jnp.uint32((1 << width) - 1)).astype(jnp.int32)
        up = rank >= low
        rank = jnp.where(up, rank - low, rank)
        word = jnp.where(up, word >> width, word)
        base = jnp.where(up, base + width, base)
    return jnp.arange(num_actions, dtype=jnp.int32)[jnp.minimum(base, num_actions - 1)]


def jax_runner(env: Any, batch: int, steps_per_call: int) -> Callable[[], int]:
    """A closure that plays ``steps_per_call`` auto-reset steps of ``batch`` games.

    Per call, the uniform draws for every step come from one vectorised generator call.
    Each step samples from the legal mask carried into it (a buffer XLA has already
    materialised), then steps, then restarts the games that just ended. ``env.init`` and
    ``env.step`` get fresh per-game keys every step (XLA drops keys a game never reads).
    """
    init = jax.vmap(env.init)
    step = jax.vmap(env.step)

    def body(carry, draw):
        state, key = carry
        key, k_step, k_init = jax.random.split(key, 3)
        action = uniform_legal(draw, state.legal_action_mask)
        state = step(state, action, jax.random.split(k_step, batch))
        fresh = init(jax.random.split(k_init, batch))
        done = state.terminated | state.truncated  # bool [B]

        def restart(new, old):
            return jnp.where(done.reshape(done.shape + (1,) * (old.ndim - 1)), new, old)

        return (jax.tree.map(restart, fresh, state), key), None

    @jax.jit
    def run(state, key):
        key, k_draws = jax.random.split(key)
        draws = jax.random.uniform(k_draws, (steps_per_call, batch))  # [T, B]
        carry, _ = jax.lax.scan(body, (state, key), draws)
        return carry

    key, k_init = jax.random.split(jax.random.key(0, impl="rbg"))
    carry = [jax.jit(init)(jax.random.split(k_init, batch)), key]
    jax.block_until_ready(run(*carry))  # compile + warm-up

    def call() -> int:
        carry[:] = run(*carry)
        jax.block_until_ready(carry)
        return batch * steps_per_call

    return call


def openspiel_runner(name: str, batch: int, steps_per_call: int) -> Callable[[], int]:
    """``batch`` OpenSpiel games stepped in turn from Python, about ``steps_per_call`` a call."""
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


def timed_call(call: Callable[[], int], clock: str) -> tuple[int, float]:
    """Steps and seconds of one call, by the wall clock or by this process's CPU time."""
    now = time.process_time if clock == "cpu" else time.perf_counter
    start = now()
    steps = call()
    return steps, max(now() - start, 1e-9)


def timed(call: Callable[[], int], clock: str) -> float:
    """Steps per second of one call."""
    steps, seconds = timed_call(call, clock)
    return steps / seconds


def summarise(calls: list[tuple[int, float]], statistic: str) -> float:
    """Steps per second over timed calls: the median call, or all steps over all time."""
    if statistic == "median":
        return statistics.median(steps / seconds for steps, seconds in calls)
    return sum(steps for steps, _ in calls) / sum(seconds for _, seconds in calls)


def measure(entry: Entry, batch: int, args: argparse.Namespace) -> dict[str, float | None]:
    """Steps/s per side over calls of a few milliseconds, the sides taking turns.

    Taking turns call by call puts the sides under the same machine load, and the median
    of many short calls shrugs off the calls that another process preempted.
    """
    steps_per_call = max(8, 2**15 // batch)
    runners: dict[str, Callable[[], int] | None] = {
        "ours": jax_runner(envs.make(entry.ours), batch, steps_per_call),
        "pgx": None,
        "openspiel": None,
    }
    if entry.pgx is not None and "pgx" in args.peers:
        import pgx

        runners["pgx"] = jax_runner(pgx.make(entry.pgx), batch, steps_per_call)
    if entry.openspiel is not None and "openspiel" in args.peers:
        runners["openspiel"] = openspiel_runner(entry.openspiel, batch, 2048)
    calls: dict[str, list[tuple[int, float]]] = {side: [] for side, run in runners.items() if run}
    # the JAX sides take turns; OpenSpiel's Python loop, which churns through the caches
    # between calls, runs on its own afterwards
    for group in [["ours", "pgx"], ["openspiel"]]:
        active = {side: runners[side] for side in group if runners[side] is not None}
        deadline = time.perf_counter() + args.seconds * len(active)
        while active and (time.perf_counter() < deadline or len(calls[group[0]]) < 5):
            for side, run in active.items():
                calls[side].append(timed_call(run, args.clock))
    return {
        side: summarise(calls[side], args.statistic) if side in calls else None for side in runners
    }


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


def fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", nargs="+", default=list(GAMES), choices=list(GAMES))
    parser.add_argument("--batch-sizes", nargs="+", type=int, default=[1, 256, 2048])
    parser.add_argument("--seconds", type=float, default=3.0, help="timed seconds per side")
    parser.add_argument(
        "--peers", nargs="*", default=["pgx", "openspiel"], choices=["pgx", "openspiel"]
    )
    parser.add_argument(
        "--xla-threads",
        choices=["one", "all"],
        default="one",
        help="one: XLA runs each computation on a single thread (per-core figures, steady "
        "on a shared machine); all: XLA's default thread pool",
    )
    parser.add_argument(
        "--clock",
        choices=["cpu", "wall"],
        default=None,
        help="time calls by this process's CPU time (default with one XLA thread: steps per "
        "core-second, unmoved by other processes on the machine) or by the wall clock "
        "(default with all threads)",
    )
    parser.add_argument(
        "--statistic",
        choices=["median", "total"],
        default="median",
        help="median: the median call's rate (shrugs off calls another process preempted); "
        "total: all steps over all timed seconds",
    )
    args = parser.parse_args(argv)
    args.clock = args.clock or ("cpu" if args.xla_threads == "one" else "wall")
    if args.xla_threads == "one":  # read when the CPU backend starts, i.e. on first use
        flags = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {flags}".strip()

    print(
        f"jax {jax.__version__}, pgx {_version('pgx')}, open_spiel {_version('open_spiel')} "
        f"on {jax.devices()[0].device_kind} ({os.cpu_count()} cores, load average "
        f"{os.getloadavg()[0]:.1f}), XLA threads: {args.xla_threads}; steps per second of "
        f"{args.clock} time, {'median over' if args.statistic == 'median' else 'total of'} calls "
        f"of a few ms, {args.seconds:g} s a side per cell"
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
