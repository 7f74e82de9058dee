"""Train one preset under several settings for the same budget, then measure every run.

    python -m experiments.sweep connect_four --set search.kind=puct \\
        --grid search.dirichlet_alpha=0.3,1.0 --grid selfplay.temperature_moves=6,15 \\
        --seeds 0 1 --seconds 600 --jobs 2 --out runs/puct_sweep
    python -m experiments.sweep connect_four --arm= --arm search.kind=puct \\
        --arm search.reuse_tree=true --seeds 0 1 --seconds 600 --jobs 2 --out runs/study
    python -m experiments.sweep tic_tac_toe --grid search.kind=gumbel,puct --iterations 2 \\
        --out /tmp/sweep                                   # a toy, in this process

The arms are the Cartesian product of the ``--grid`` values, then each ``--arm
KEY=V,KEY=V`` (``--arm=``: the preset as it is), each over the ``--set`` settings (and
``evaluation.every=0``: no periodic evaluation eating the budget). Each arm trains all
its seeds as one population (:func:`jaxzero.make_population`, one compiled program) into
``OUT/aARM``, seed k's run being ``OUT/aARM/members/K``, with the library's driver:
``--jobs 1`` in this process, ``--jobs N`` as N ``jaxzero train --seeds`` processes at a
time, each pinned to CPUs of its own (single-threaded XLA on one CPU;
:mod:`experiments.pinned`). ``--seconds`` is per seed: an arm of P seeds trains P times as
long, the compute of P single runs. A run directory that exists is refused, never
overwritten.

Then every run's last network is measured on its game's solved positions
(:class:`~jaxzero.measure.positions.SolvedPositions`: tic-tac-toe's 4,520 decision states,
Connect Four's 1,000 labelled ones): the raw policy's optimal share and the result kept on
the critical positions, raw and with ``--simulations`` of the run's own search.
``OUT/sweep.csv`` holds a row per run, ``OUT/sweep.md`` the same as a table (each share
with its 95% Wilson interval) and each arm's mean over its seeds.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np

from experiments import pinned
from jaxzero.core.config import apply_overrides, parse_key_values
from jaxzero.core.presets import get_preset
from jaxzero.measure.players import RawPolicyPlayer
from jaxzero.measure.positions import SolvedPositions
from jaxzero.measure.statistics import wilson_interval
from jaxzero.run.agents.agent import load_agent
from jaxzero.run.life.compile_cache import enable_compile_cache
from jaxzero.run.life.driver import train
from jaxzero.run.life.ways import use_host_cores
from jaxzero.run.reports.rows import read_metrics

COLUMNS = (
    "arm", "settings", "seed", "iterations", "positions",
    "raw_optimal", "raw_kept", "search_kept", "simulations", "measured", "critical",
)  # fmt: skip
BASE = {"evaluation.every": "0"}


def arms(grid: Sequence[str], named: Sequence[str] = ()) -> list[dict[str, str]]:
    """One settings dict per arm: the Cartesian product of the ``KEY=V1,V2,...`` items of
    ``grid`` (with neither grid nor named arms, one arm of no settings), then one arm per
    ``KEY=V,KEY=V`` item of ``named`` (an empty item: no settings)."""
    extra = [parse_key_values(item.split(","), "--arm") if item else {} for item in named]
    if named and not grid:
        return extra
    axes = []
    for item in grid:
        key, sep, values = item.partition("=")
        if not sep or not key or not values:
            raise ValueError(f"--grid {item!r} is not KEY=VALUE,VALUE,...")
        axes.append([(key, value) for value in values.split(",")])
    return [dict(point) for point in itertools.product(*axes)] + extra


def run_dirs(out: Path, settings: list[dict[str, str]], seeds: Sequence[int]) -> list[tuple]:
    """(arm index, settings, seed, member's run directory) of every run, in run order: the
    arm's population is ``OUT/aARM``, seed k's run its member ``OUT/aARM/members/K``."""
    runs = []
    for arm, point in enumerate(settings):
        runs += [(arm, point, s, out / f"a{arm}" / "members" / str(k)) for k, s in enumerate(seeds)]
    return runs


def train_all(
    game: str,
    base: dict,
    runs: list[tuple],
    seeds: Sequence[int],
    budget: dict,
    jobs: int,
    out: Path,
):
    """Train every arm as a population of ``seeds``: here one by one (``jobs`` 1), else
    ``jobs`` pinned processes. ``budget["seconds"]`` is per seed."""
    populations = list(dict.fromkeys((arm, run_dir.parent.parent) for arm, _, _, run_dir in runs))
    points = {arm: point for arm, point, *_ in runs}
    for _, run_dir in populations:
        if run_dir.exists():
            raise FileExistsError(f"{run_dir} exists: choose a new --out (nothing is overwritten)")
    if budget.get("seconds") is not None:
        budget = budget | {"seconds": budget["seconds"] * len(seeds)}
    if jobs == 1:
        for arm, run_dir in populations:
            config = apply_overrides(get_preset(game), base | points[arm] | {"seed": seeds[0]})
            train(run_dir, config, seeds=seeds, **budget)
        return
    if list(seeds) != list(range(seeds[0], seeds[0] + len(seeds))):
        raise ValueError(
            f"--jobs > 1 trains `jaxzero train --seeds N`: consecutive seeds, not {seeds}"
        )
    flags = [f"--{name}={value}" for name, value in budget.items() if value is not None]
    commands, logs = [], []
    for arm, run_dir in populations:
        settings = [f"{k}={v}" for k, v in (base | points[arm] | {"seed": str(seeds[0])}).items()]
        train_cmd = ["train", game, *settings, *flags, "--seeds", str(len(seeds))]
        commands.append([sys.executable, "-m", "jaxzero.cli", *train_cmd, "--out", str(run_dir)])
        logs.append(out / "logs" / f"{run_dir.name}.txt")
    logs[0].parent.mkdir(parents=True, exist_ok=True)
    pinned.run_pinned(commands, logs, jobs, names=[run_dir.name for _, run_dir in populations])


def measure(runs: list[tuple], simulations: int) -> list[dict[str, Any]]:
    """A row of :data:`COLUMNS` per run: its last network on the solved positions."""
    rows, probe = [], None
    for arm, point, seed, run_dir in runs:
        agent = load_agent(run_dir)
        probe = SolvedPositions(agent.env) if probe is None else probe
        raw = probe.quality(RawPolicyPlayer(agent.apply_fn), agent.params)
        player = agent.search_player(simulations)
        search = probe.quality(player, agent.params, key=jax.random.key(seed))
        positions = int(read_metrics(run_dir)[0][-1].get("positions_written", 0))
        values = (arm, " ".join(f"{k}={v}" for k, v in point.items()), seed, agent.iteration)
        values += (positions, raw.optimal, raw.kept, search.kept, simulations)
        values += (raw.positions, raw.critical)
        rows.append(dict(zip(COLUMNS, values, strict=True)))
        print(f"  {run_dir.name}: {rows[-1]}", flush=True)
    return rows


def write_results(out: Path, rows: list[dict[str, Any]], command: str) -> str:
    """``sweep.csv`` and ``sweep.md`` (the runs, then each arm's means); the markdown."""
    with open(out / "sweep.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    pct = lambda x: f"{100 * x:.1f}"

    def interval(share: float, n: int) -> str:  # the share with its 95% Wilson interval
        low, high = wilson_interval(share * n, n)
        return f"{pct(share)} [{pct(low)}, {pct(high)}]"

    lines = [f"`{command}`", "", "| arm | settings | seed | iterations | positions | raw "
             "optimal % | raw kept % | search kept % |", "|---" * 8 + "|"]  # fmt: skip
    for r in rows:
        lines.append(
            f"| {r['arm']} | {r['settings']} | {r['seed']} | {r['iterations']} | "
            f"{r['positions']:,} | {interval(r['raw_optimal'], r['measured'])} | "
            f"{interval(r['raw_kept'], r['critical'])} | "
            f"{interval(r['search_kept'], r['critical'])} |"
        )
    lines += [
        "",
        f"Brackets: 95% Wilson intervals over the {rows[0]['measured']:,} solved "
        f"positions (optimal) and their {rows[0]['critical']:,} critical ones (kept).",
    ]
    lines += ["", "| arm | settings | runs | raw optimal % | raw kept % | search kept % |"]
    lines += ["|---" * 6 + "|"]
    for arm, group in itertools.groupby(rows, key=lambda r: r["arm"]):
        group = list(group)
        mean = lambda name, g=group: pct(np.mean([r[name] for r in g]))
        lines.append(
            f"| {arm} | {group[0]['settings']} | {len(group)} | {mean('raw_optimal')} | "
            f"{mean('raw_kept')} | {mean('search_kept')} |"
        )
    text = "\n".join(lines) + "\n"
    (out / "sweep.md").write_text(text)
    return text


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("game", help="preset to train, e.g. connect_four")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2")
    parser.add_argument("--arm", action="append", default=[], metavar="KEY=V,KEY=V")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--seconds", type=float, default=None, help="training time per seed")
    parser.add_argument("--iterations", type=int, default=None, help="or iterations per run")
    parser.add_argument("--simulations", type=int, default=64, help="of the measured search")
    parser.add_argument("--jobs", type=int, default=1, help="runs at a time, pinned")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    try:
        base = BASE | parse_key_values(args.set, "--set")
        settings = arms(args.grid, args.arm)
        if any("seed" in point for point in settings) or "seed" in base:
            raise ValueError("the seeds of every arm are --seeds (one population an arm)")
        for point in settings:  # a bad key or value fails now, not after hours of training
            apply_overrides(get_preset(args.game), base | point)
        pinned.cpu_groups(args.jobs)
        runs = run_dirs(args.out, settings, args.seeds)
        args.out.mkdir(parents=True, exist_ok=True)
        budget = {"seconds": args.seconds, "iterations": args.iterations}
        enable_compile_cache()  # a rerun reads its programs back
        use_host_cores()  # on a CPU, a population's members split over its cores
        train_all(args.game, base, runs, args.seeds, budget, args.jobs, args.out)
    except (ValueError, FileExistsError) as error:
        sys.exit(f"error: {error}")
    command = "python -m experiments.sweep " + " ".join(sys.argv[1:] if argv is None else argv)
    print(write_results(args.out, measure(runs, args.simulations), command))


if __name__ == "__main__":
    main()
