"""Move quality of a trained agent on solved positions: raw policy and search.

    .venv/bin/python experiments/move_quality.py runs/tic_tac_toe --simulations 64
    .venv/bin/python experiments/move_quality.py runs/connect_four --simulations 64
    .venv/bin/python experiments/move_quality.py RUN --set evaluation.average_symmetries=true

Tic-tac-toe: all 4,520 decision states; Connect Four: the shipped labelled set of 1,000
solved positions (jaxzero/data/connect_four_positions.npz). "optimal" is the share of
positions where the chosen move keeps the game-theoretic result; "kept" is that share
among the critical positions, where some legal move would change the result. The raw
policy is ``RawPolicyPlayer`` (argmax of the legal logits of the agent's network, averaged
over the symmetries when ``evaluation.average_symmetries`` is on), the search the agent's
noise-free ``SearchPlayer`` (``Agent.search_player``); both are asked about the same
positions (one ``SolvedPositions``, replayed once).
"""

from __future__ import annotations

import argparse

import jax

from jaxzero.measure.players import RawPolicyPlayer
from jaxzero.measure.positions import SolvedPositions
from jaxzero.run.agents.agent import load_agent, parse_settings


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
        help="a search.* or evaluation.* setting, e.g. evaluation.average_symmetries=true "
        "(repeatable)",
    )
    args = parser.parse_args()

    agent = load_agent(args.run, settings=parse_settings(args.set))
    probe = SolvedPositions(agent.env)
    raw = RawPolicyPlayer(agent.apply_fn)  # the network as the agent's search sees it
    search = agent.search_player(args.simulations, args.search)

    game = agent.config.game
    print(f"{game} agent at iteration {agent.iteration} ({args.run})")
    print(f"raw policy          : {probe.quality(raw, agent.params)}")
    kind = args.search or agent.config.search.kind
    quality = probe.quality(search, agent.params, key=jax.random.key(1))
    print(f"{kind} {args.simulations:>4} sims    : {quality}")


if __name__ == "__main__":
    main()
