"""Does a search with explicit chance nodes play better? The same trained network, two searches.

    python experiments/chance_search.py --run runs/pgx_2048 --games 200
    python experiments/chance_search.py --run runs/pgx_backgammon --games 200

The agent of ``--run`` (a run directory, a checkpoint or an exported agent of pgx/2048 or
pgx/backgammon) plays with its evaluation search (noise-free, ``--simulations`` each, the
search kind it trained with), once as the step key decides chance (the default: a tree edge
keeps the outcome it first sampled) and once with explicit chance nodes
(``search.chance_nodes``: outcomes weighed by their probabilities). Nothing else differs.

* 2048: both play ``--games`` games from the same starting boards; the table gives each
  one's mean score with its 95% interval and the largest tiles, and the mean of the
  paired differences (game i of each starts from the same board) with its interval.
* backgammon: the two play each other, ``--games`` games of paired random openings (each
  opening played with both colours); the score of the chance-node search, with its Wilson
  interval.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from pathlib import Path

import jax

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jaxzero  # noqa: E402
from jaxzero.core.games import game_kit  # noqa: E402
from jaxzero.measure.match import play_match  # noqa: E402
from jaxzero.measure.solo import make_solo  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", required=True, help="run directory, checkpoint or agent")
    parser.add_argument("--games", type=int, default=200)
    parser.add_argument("--simulations", type=int, default=None, help="default: the run's")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    agent = jaxzero.load_agent(args.run)
    if agent.env.num_chance_outcomes == 0:
        sys.exit(
            f"error: {agent.env.id} does not list its chance events; use pgx/2048 or pgx/backgammon"
        )
    player = agent.search_player(args.simulations)  # as the run searched, either way
    options = dataclasses.replace(player.options, reuse_tree=False)
    step_key = player.replace(options=dataclasses.replace(options, chance_nodes=False))
    chance = player.replace(options=dataclasses.replace(options, chance_nodes=True))
    key = jax.random.key(args.seed)
    print(
        f"{agent.env.id}: {args.run} (iteration {agent.iteration}, trained with "
        f"{'chance nodes' if agent.config.search.chance_nodes else 'the step key'}), "
        f"{agent.config.search.kind} "
        f"search, {step_key.num_simulations} simulations, jax {jax.__version__} on "
        f"{jax.default_backend()}"
    )
    if agent.env.num_players == 1:
        results = {}
        for name, player in (("step key", step_key), ("chance nodes", chance)):
            results[name] = make_solo(agent.env, player, args.games)(agent.params, key)
        summary = game_kit(agent.env.id).score_summary or (lambda r: "")
        print("\n| search | mean score | 95% interval | moves a game | |")
        print("|---|---|---|---|---|")
        for name, result in results.items():
            low, high = result.interval()
            print(
                f"| {name} | {result.mean:,.0f} | [{low:,.0f}, {high:,.0f}] | "
                f"{result.lengths.mean():.0f} | {summary(result)} |"
            )
        difference = results["chance nodes"].scores - results["step key"].scores
        half = 1.96 * difference.std(ddof=1) / math.sqrt(len(difference))
        print(
            f"\nchance nodes - step key, paired by starting board: {difference.mean():+,.0f} "
            f"[{difference.mean() - half:+,.0f}, {difference.mean() + half:+,.0f}]"
        )
    else:
        result = play_match(
            agent.env, chance, step_key, args.games, key,
            params_a=agent.params, params_b=agent.params,
        )  # fmt: skip
        low, high = result.interval()
        print(
            f"\nchance nodes vs step key: {result.wins}-{result.draws}-{result.losses}, score "
            f"{result.score:.3f} [{low:.3f}, {high:.3f}] (Wilson 95%)"
        )


if __name__ == "__main__":
    main()
