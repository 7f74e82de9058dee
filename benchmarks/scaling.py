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

from child_env import child_env

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
    _wait_for_the_others()
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


def _wait_for_the_others() -> None:
    """With SCALING_BARRIER=DIR:N, wait until N workers are warm, so that they time
    together."""
    if not os.environ.get("SCALING_BARRIER"):
        return
    folder, count = os.environ["SCALING_BARRIER"].rsplit(":", 1)
    Path(folder, str(os.getpid())).touch()
    while len(os.listdir(folder)) < int(count):
        time.sleep(0.05)


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
    parser.add_argument(
        "--ceiling",
        action="store_true",
        help="also time n independent one-device processes at once (n = each device count "
        "above 1): the speed-up this machine allows without any communication",
    )
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
        out = _launch(args, n, n, []).communicate()[0]
        r = _parse(out)
        if r is None:
            print(f"{n:>7} failed:\n{out[-3000:]}")
            continue
        rate = r["positions_per_second"]
        base = rate if base is None else base
        speedup = rate / base
        print(
            f"{n:>7} {r['batch']:>6} {rate:>12.0f} {speedup:>9.2f} {speedup / n:>10.2f}"
            f" {r['compile_seconds']:>10.1f}",
            flush=True,
        )
    for n in [n for n in args.devices if n > 1] if args.ceiling and base else []:
        rate = _independent(args, n)
        print(f"{n:>5}x1 {'':>6} {rate:>12.0f} {rate / base:>9.2f} {rate / base / n:>10.2f}"
              f"   (n independent one-device processes, B/n games each: the ceiling)")  # fmt: skip


def _launch(args, n: int, devices: int, extra: list[str], barrier: str = "") -> subprocess.Popen:
    """A worker timing ``n`` devices (``devices`` forced on the platform)."""
    env = child_env(SCALING_BARRIER=barrier)  # the caller's PYTHONPATH kept, after the repo
    if not args.real:
        env["JAX_PLATFORMS"] = "cpu"
        flags = f" --xla_force_host_platform_device_count={devices}"
        if args.single_thread:
            flags += " --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + flags).strip()
    command = [sys.executable, __file__, "--worker", str(n), "--game", args.game]
    command += ["--iterations", str(args.iterations), "--repeats", str(args.repeats)]
    command += ["--warmup", str(args.warmup)] + (["--weak"] if args.weak else [])
    command += ["--set", *args.set, *extra] if args.set or extra else []
    return subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT
    )


def _parse(output: str) -> dict | None:
    lines = [line for line in output.splitlines() if line.startswith("RESULT ")]
    return json.loads(lines[-1].removeprefix("RESULT ")) if lines else None


def _independent(args, n: int) -> float:
    """Summed positions/s of n one-device processes run at once, each with the per-device
    share of the global sizes, timed together (a barrier after their warm-up): what n
    devices could do with no communication at all, on this machine."""
    import tempfile

    from jaxzero.core.config import apply_overrides
    from jaxzero.core.presets import get_preset

    overrides = dict(DEFAULT_OVERRIDES) if args.game == "tic_tac_toe" else {}
    overrides |= dict(kv.split("=", 1) for kv in args.set)
    config = apply_overrides(get_preset(args.game), overrides)
    share = [
        f"selfplay.batch_size={config.selfplay.batch_size // n}",
        f"optim.minibatch_size={config.optim.minibatch_size // n}",
        f"replay.capacity={config.replay.capacity // n}",
    ]
    with tempfile.TemporaryDirectory() as barrier:
        workers = [_launch(args, 1, 1, share, f"{barrier}:{n}") for _ in range(n)]
        results = [_parse(w.communicate()[0]) for w in workers]
    return sum(r["positions_per_second"] for r in results if r) if all(results) else 0.0


if __name__ == "__main__":
    main()
