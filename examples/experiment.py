"""An experiment: PUCT against Gumbel as the self-play search, over several seeds, in a PNG.

Each search trains the tic-tac-toe preset's network from each seed for the same iterations
and simulations a move; every few iterations the raw network's move is scored on every
solved tic-tac-toe position (``jaxzero.optimal_move_share``). One compiled trainer per
search serves all its seeds (``trainer.init(key)`` takes the seed), so each search
compiles once. The figure draws the mean over seeds and their range as a band; the numbers
go to a CSV beside it.

    python examples/experiment.py                  # about three minutes on a 2-core CPU
    python examples/experiment.py --seeds 8        # more seeds, a tighter mean
    python examples/experiment.py --smoke          # toy sizes, seconds (CI)
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import jax
import numpy as np
from matplotlib.figure import Figure  # no pyplot: renders with Agg, no display needed

import envs
import jaxzero

SMOKE = {
    "selfplay.batch_size": 8,
    "selfplay.moves_per_iteration": 4,
    "search.num_simulations": 4,
    "replay.capacity": 256,
    "replay.min_size": 16,
    "optim.minibatch_size": 16,
    "optim.updates_per_iteration": 2,
    "network.hidden_size": 16,
}


def learning_curves(
    config: jaxzero.Config, search: jaxzero.SearchPolicy, seeds: int, iterations: int, every: int
) -> np.ndarray:
    """The raw network's optimal-move share, float [seeds, iterations // every]."""
    env = envs.make(config.game)
    trainer = jaxzero.make_trainer(config, search=search)
    player = jaxzero.RawPolicyPlayer(trainer.apply_fn)
    shares = np.zeros((seeds, iterations // every))
    for seed in range(seeds):
        state = trainer.init(jax.random.key(seed))
        for i in range(iterations):
            state, _, _ = trainer.iteration(state)
            if (i + 1) % every == 0:
                quality = jaxzero.optimal_move_share(player, env, params=state.params)
                shares[seed, i // every] = quality.optimal
        print(f"seed {seed}: {shares[seed, -1]:.1%} optimal after {iterations} iterations")
    return shares


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="toy sizes: a CI check, seconds")
    parser.add_argument("--out", type=Path, default=Path("runs/examples/experiment"))
    parser.add_argument("--seeds", type=int, default=4)
    args = parser.parse_args()

    config = jaxzero.get_preset("tic_tac_toe")
    if args.smoke:
        config = jaxzero.apply_overrides(config, SMOKE)
    seeds, iterations, every = (2, 2, 1) if args.smoke else (args.seeds, 200, 20)
    sims = config.search.num_simulations
    searches: dict[str, jaxzero.SearchPolicy] = {
        "PUCT": jaxzero.PuctSearch(),
        "Gumbel": jaxzero.GumbelSearch(max_num_considered_actions=9),
    }
    curves = {}
    for name, search in searches.items():
        print(f"{name}:")
        curves[name] = learning_curves(config, search, seeds, iterations, every)
    steps = every * np.arange(1, iterations // every + 1)

    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "optimal_share.csv", "w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["search", "seed", "iteration", "optimal_share"])
        for name, shares in curves.items():
            for seed, row in enumerate(shares):
                writer.writerows(
                    [name, seed, int(t), f"{v:.4f}"] for t, v in zip(steps, row, strict=True)
                )

    figure = Figure(figsize=(6, 4), layout="constrained")
    axes = figure.subplots()
    for name, shares in curves.items():
        mean = shares.mean(axis=0)
        axes.plot(steps, mean, label=f"{name}: mean, band: range of {seeds} seeds")
        axes.fill_between(steps, shares.min(axis=0), shares.max(axis=0), alpha=0.25)
        last = shares[:, -1]
        print(f"{name}: mean {mean[-1]:.1%} optimal (seeds {last.min():.1%} to {last.max():.1%})")
    axes.set(
        xlabel="training iteration",
        ylabel="raw policy: optimal-move share",
        title=f"tic-tac-toe, {sims} simulations a move: PUCT vs Gumbel",
    )
    axes.legend()
    figure.savefig(args.out / "puct_vs_gumbel.png", dpi=120)
    print(f"wrote {args.out / 'puct_vs_gumbel.png'} and {args.out / 'optimal_share.csv'}")


if __name__ == "__main__":
    try:
        main()
    except (OSError, RuntimeError, ValueError) as error:  # a read-only --out, a run in the way
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
