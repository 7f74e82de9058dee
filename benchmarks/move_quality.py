"""Move quality of a trained agent on solved positions: raw policy and search.

    .venv/bin/python benchmarks/move_quality.py runs/tic_tac_toe --simulations 64
    .venv/bin/python benchmarks/move_quality.py runs/connect_four --simulations 64
    .venv/bin/python benchmarks/move_quality.py RUN --set search.average_symmetries=true

Tic-tac-toe: all 4,520 decision states; Connect Four: the shipped labelled set of 1,000
solved positions (jaxzero/data/connect_four_positions.npz). "optimal" is the share of
positions where the chosen move keeps the game-theoretic result; "kept" is that share
among the critical positions, where some legal move would change the result.
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp

from jaxzero.measure.evaluate import optimal_move_share
from jaxzero.run.agent import load_agent, parse_settings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", help="run directory or checkpoint")
    parser.add_argument("--simulations", type=int, default=64)
    parser.add_argument("--search", choices=["gumbel", "puct"], default=None)
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a search.* setting, e.g. search.average_symmetries=true (repeatable)",
    )
    args = parser.parse_args()

    agent = load_agent(args.run, search=parse_settings(args.set))

    def raw_policy(states, key):
        logits, _ = agent.evaluate(states)
        return jnp.argmax(logits, axis=-1).astype(jnp.int32)

    def search_policy(states, key):
        return agent.act(states, key, num_simulations=args.simulations, search=args.search)

    game = agent.config.game
    print(f"{game} agent at iteration {agent.iteration} ({args.run})")
    print(f"raw policy          : {optimal_move_share(raw_policy, agent.env)}")
    kind = args.search or agent.config.search.kind
    quality = optimal_move_share(search_policy, agent.env, key=jax.random.key(1))
    print(f"{kind} {args.simulations:>4} sims    : {quality}")


if __name__ == "__main__":
    main()
