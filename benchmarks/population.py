"""A population of P members against P runs of one member, one after another.

    python benchmarks/population.py                                  # both games, P 1-16
    python benchmarks/population.py --game tic_tac_toe --members 1 8 --seconds 10
    python benchmarks/population.py --game connect_four --ways "cores, one at a time"

A position is one move of one self-play game, searched, played and learned from (the
whole training iteration, ``trainer.iteration``). The single side is one member's run
(``make_trainer(config)`` on one device, as ``jaxzero train`` runs it); P runs one after
another train at its rate, so the ratio ``population / single`` is what one process
gains over P processes taking turns on the same machine. The population
(``jaxzero.make_population``) puts the learning rate on its axis, as a sweep does, so its
hyperparameters are traced values, not constants. It runs each way
(:class:`jaxzero.run.life.ways.Way`): on one device all P members vmapped together or one
member at a time (``lax.map`` inside the one compiled iteration), and split over the
machine's cores as devices (:func:`jaxzero.run.life.ways.use_host_cores`, as ``jaxzero train
--seeds`` does on a CPU), each core's members one at a time or vmapped.

Both sides run at the game's preset sizes (``--set`` overrides, e.g.
``--set selfplay.batch_size=32``); after compiling and one warm-up call they take turns
call by call for ``--seconds`` each, every call ending in ``block_until_ready``; the
table shows median rates. The machine is shared and noisy: read the ratios.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jaxzero.run.life import ways  # noqa: E402

CORES = ways.use_host_cores()  # before JAX starts: the cores as devices

import jax  # noqa: E402

from jaxzero.core.config import apply_overrides, parse_key_values  # noqa: E402
from jaxzero.core.loop import make_trainer  # noqa: E402
from jaxzero.core.population import make_population  # noqa: E402
from jaxzero.core.presets import get_preset  # noqa: E402

# name: (devices, members vmapped together); 0: all of them
WAYS = {
    "vmapped": (1, 0),
    "one at a time": (1, 1),
    "cores, one at a time": (0, 1),
    "cores, vmapped": (0, 0),
}


def rates(
    game: str, members: int, seconds: float, overrides: dict[str, str], names: list[str]
) -> dict:
    """Positions per second of one run, and of the population each way in ``names``
    (:data:`WAYS`): medians of alternating calls."""
    config = apply_overrides(get_preset(game), {"num_devices": 1} | overrides)
    positions = config.selfplay.batch_size * config.selfplay.moves_per_iteration
    trainer = make_trainer(config)
    rate = config.optim.learning_rate
    hyper = {"optim.learning_rate": [rate * (1 + k / members) for k in range(members)]}
    sides = {"single": [trainer.iteration, trainer.init(jax.random.key(0)), positions]}
    made = set()
    for name in names:
        devices, at_once = WAYS[name]
        devices = devices or math.gcd(members, jax.device_count())
        at_once = at_once or members // devices
        if (devices, at_once) in made:
            continue  # the same program as a way already timed
        made.add((devices, at_once))
        population = make_population(
            config, seeds=range(members), hyper=hyper, members_at_once=at_once, devices=devices
        )
        sides[name] = [population.iteration, population.init(), positions * members]
    for side in sides.values():  # compile and warm up
        side[1] = jax.block_until_ready(side[0](side[1])[0])
    times: dict[str, list[float]] = {name: [] for name in sides}
    spent = {name: 0.0 for name in sides}
    while min(spent.values()) < seconds or min(len(t) for t in times.values()) < 3:
        for name, side in sides.items():
            begin = time.perf_counter()
            side[1] = jax.block_until_ready(side[0](side[1])[0])
            took = time.perf_counter() - begin
            times[name].append(side[2] / took)
            spent[name] += took
    return {name: statistics.median(rates) for name, rates in times.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", nargs="+", default=["tic_tac_toe", "connect_four"])
    parser.add_argument("--members", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    parser.add_argument("--seconds", type=float, default=10.0, help="timed seconds a side")
    parser.add_argument("--set", nargs="*", default=[], help="config overrides KEY=VALUE")
    parser.add_argument(
        "--ways", nargs="+", choices=list(WAYS), default=list(WAYS),
        help="the population's sides to time (vmapped Connect Four at P >= 4 takes minutes)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    overrides = parse_key_values(args.set, "--set")
    print(f"device: {jax.devices()[0].device_kind}, {jax.device_count()} device(s)")
    print("| game | P | one run pos/s | " + " | ".join(args.ways) + " |")
    print("|---|---|---|" + "---|" * len(args.ways))
    for game in args.game:
        for members in args.members:
            found = rates(game, members, args.seconds, overrides, args.ways)
            cells = [_cell(found, name, members) for name in args.ways]
            print(
                f"| {game} | {members} | {found['single']:,.0f} | {' | '.join(cells)} |", flush=True
            )


def _cell(found: dict[str, float], name: str, members: int) -> str:
    """A side's rate and its ratio to one run's; "same" for a program timed already."""
    if name in found:
        return f"{found[name]:,.0f}, {found[name] / found['single']:.2f}x"
    return "same"


if __name__ == "__main__":
    main()
