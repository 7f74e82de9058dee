"""Strength of a trained Star Duel agent against the random and greedy opponents.

    .venv/bin/python experiments/star_duel_strength.py --run runs/star_duel_short --games 400

Loads the agent of a run directory (or one checkpoint) with ``jaxzero.run.agents.agent.load_agent``
and plays ``--games`` games against each opponent on the agent's own game (the preset's
``star_duel_short``: authority 10), half with the agent moving first, in one batched,
jitted match each (``jaxzero.measure.match.play_match``; paired games share their deals). The
agent moves by noise-free greedy search (``Agent.search_player``: ``--simulations``, default
the config's ``evaluation.simulations``; determinised when the config says so; ``--set
KEY=VALUE`` changes a ``search.*`` or ``evaluation.*`` setting: ``--set
search.determinize=false`` searches the true state, seeing the other player's hand, an
oracle for what a better treatment of the hidden cards could gain). Prints the win rate and
the score ((wins + draws / 2) / games), each with its 95% Wilson interval, and the
first-seat / second-seat split; a truncated game is a draw.

Measured (2026-11-29): ``jaxzero train star_duel --seconds 1800`` (the preset now called
``star_duel_short``) reached iteration 2,790 (2.86M positions); at 64 simulations it beat
random 400/0/0 (1.000, 95% [0.990, 1.000]) and greedy 311/1/88 (wins 0.777, 95% [0.734,
0.816]); docs/results.md has the details.
"""

from __future__ import annotations

import argparse
import time

import jax

from jaxzero.measure.match import play_match
from jaxzero.measure.opponents import make_opponent
from jaxzero.measure.statistics import wilson_interval
from jaxzero.run.agents.agent import load_agent, parse_settings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", required=True, help="run directory or checkpoint")
    parser.add_argument("--games", type=int, default=400, help="even; games per opponent")
    parser.add_argument(
        "--simulations", type=int, default=None, help="default evaluation.simulations"
    )
    parser.add_argument("--opponents", nargs="+", default=["random", "greedy"])
    parser.add_argument("--opening-plies", type=int, default=0, help="random plies first")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a search.* or evaluation.* setting, e.g. search.determinize=false (repeatable)",
    )
    args = parser.parse_args()

    agent = load_agent(args.run, settings=parse_settings(args.set))
    cfg = agent.config
    sims = cfg.evaluation.simulations if args.simulations is None else args.simulations
    print(
        f"agent {args.run} iteration {agent.iteration}: game {cfg.game} "
        f"(authority {getattr(agent.env, 'authority', '?')}), {cfg.search.kind} search, "
        f"{sims} simulations, determinize={cfg.search.determinize}, γ={cfg.selfplay.discount}"
    )
    player = agent.search_player(sims)
    key = jax.random.key(args.seed)
    for name in args.opponents:
        key, k_match = jax.random.split(key)
        start = time.perf_counter()
        result = play_match(
            agent.env,
            player,
            make_opponent(name, agent.env),
            args.games,
            k_match,
            opening_plies=args.opening_plies,
            params_a=agent.params,
        )
        low, high = result.interval()
        w_low, w_high = wilson_interval(result.wins, result.games)
        first = result.first
        second = (
            result.wins - first[0],
            result.draws - first[1],
            result.losses - first[2],
        )
        print(
            f"vs {name:>8}: wins {result.wins / result.games:.3f} [95% {w_low:.3f}, "
            f"{w_high:.3f}], score {result.score:.3f} [95% {low:.3f}, {high:.3f}] over "
            f"{result.games} games (W/D/L {result.wins}/{result.draws}/{result.losses}; "
            f"first seat {'/'.join(map(str, first))}, second seat "
            f"{'/'.join(map(str, second))}) in {time.perf_counter() - start:.0f} s"
        )


if __name__ == "__main__":
    main()
