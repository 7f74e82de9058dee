"""Training-iteration throughput (positions/s) against the size of the data mesh.

Each device count runs in its own subprocess (one compile, then timed iterations of the
full compiled iteration: self-play, replay writes, gradient updates). By default the
devices are forced host-platform CPU devices
(``--xla_force_host_platform_device_count=N``). ``--single-thread`` makes each of them
run its kernels on one thread (``--xla_cpu_multi_thread_eigen=false
intra_op_parallelism_threads=1``), so that N devices on N cores compare with one device
on one core, as N accelerators compare with one. ``--real`` uses the first N devices of
the default backend (GPUs) instead.

    python benchmarks/scaling.py --game connect_four --single-thread --devices 1 2
    python benchmarks/scaling.py                                  # tic_tac_toe, 1 2 4 CPU
    python benchmarks/scaling.py --game connect_four --real --devices 1 2 4 8
    python benchmarks/scaling.py --weak   # global sizes grow with N (same work per device)

Columns: positions/s (B·T self-play positions per iteration / seconds per iteration,
median over repeats), speed-up over one device, and efficiency relative to linear
(speed-up / N).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Small enough for a 2-core CPU; updates start at once (min_size below one iteration).
DEFAULT_OVERRIDES = {
    "selfplay.batch_size": 128,
    "replay.capacity": 8192,
    "replay.min_size": 64,
    "optim.minibatch_size": 128,
    "optim.updates_per_iteration": 4,
}


def worker(args: argparse.Namespace) -> None:
    import jax
    import numpy as np

    from jaxzero.core.config import apply_overrides
    from jaxzero.core.loop import make_trainer
    from jaxzero.core.presets import get_preset

    n = args.worker
    overrides = dict(DEFAULT_OVERRIDES) if args.game == "tic_tac_toe" else {}
    overrides |= dict(kv.split("=", 1) for kv in args.set)
    config = apply_overrides(get_preset(args.game), overrides)
    if args.weak:
        config = apply_overrides(
            config,
            {
                "selfplay.batch_size": config.selfplay.batch_size * n,
                "optim.minibatch_size": config.optim.minibatch_size * n,
                "replay.capacity": config.replay.capacity * n,
            },
        )
    config = apply_overrides(config, {"num_devices": n})
    trainer = make_trainer(config, donate=True)
    state = trainer.init(jax.random.key(0))
    start = time.perf_counter()
    state, metrics, _ = trainer.iteration(state)
    jax.block_until_ready(metrics)
    compile_s = time.perf_counter() - start
    for _ in range(args.warmup):
        state, metrics, _ = trainer.iteration(state)
    jax.block_until_ready(metrics)
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        for _ in range(args.iterations):
            state, metrics, _ = trainer.iteration(state)
        jax.block_until_ready(metrics)
        times.append((time.perf_counter() - start) / args.iterations)
    seconds = float(np.median(times))
    positions = config.selfplay.batch_size * config.selfplay.moves_per_iteration
    result = {
        "devices": n,
        "platform": jax.devices()[0].platform,
        "batch": config.selfplay.batch_size,
        "positions_per_second": positions / seconds,
        "seconds_per_iteration": seconds,
        "compile_seconds": compile_s,
        "updated": float(metrics["updated"]),
    }
    print("RESULT " + json.dumps(result), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--game", default="tic_tac_toe", help="a preset name")
    parser.add_argument("--devices", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--real", action="store_true", help="real devices, not forced CPUs")
    parser.add_argument(
        "--single-thread", action="store_true", help="forced CPU devices, one thread each"
    )
    parser.add_argument("--weak", action="store_true", help="global sizes scale with N")
    parser.add_argument("--iterations", type=int, default=3, help="iterations per repeat")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        worker(args)
        return

    print(
        f"# {args.game}, {'real devices' if args.real else 'forced CPU devices'}"
        f"{', one thread each' if args.single_thread else ''}, "
        f"{'weak' if args.weak else 'strong'} scaling, overrides "
        f"{DEFAULT_OVERRIDES if args.game == 'tic_tac_toe' else {}} {args.set}, "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}"
    )
    print(
        f"{'devices':>7} {'batch':>6} {'positions/s':>12} {'speed-up':>9} {'efficiency':>10}"
        f" {'compile s':>10}"
    )
    base = None
    for n in args.devices:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        if not args.real:
            env["JAX_PLATFORMS"] = "cpu"
            flags = f" --xla_force_host_platform_device_count={n}"
            if args.single_thread:
                flags += " --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
            env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + flags).strip()
        command = [sys.executable, __file__, "--worker", str(n), "--game", args.game]
        command += ["--iterations", str(args.iterations), "--repeats", str(args.repeats)]
        command += ["--warmup", str(args.warmup)] + (["--weak"] if args.weak else [])
        command += ["--set", *args.set] if args.set else []
        out = subprocess.run(command, env=env, capture_output=True, text=True, cwd=ROOT)
        lines = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
        if out.returncode or not lines:
            print(f"{n:>7} failed:\n{out.stdout[-2000:]}{out.stderr[-2000:]}")
            continue
        r = json.loads(lines[-1].removeprefix("RESULT "))
        rate = r["positions_per_second"]
        base = rate if base is None else base
        speedup = rate / base
        print(
            f"{n:>7} {r['batch']:>6} {rate:>12.0f} {speedup:>9.2f} {speedup / n:>10.2f}"
            f" {r['compile_seconds']:>10.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
