"""Strength of a Go agent against GNU Go, through GTP, both colours.

    .venv/bin/python experiments/gnugo_match.py --checkpoint runs/go_6x6 --games 40 \
        --opening-plies 2 --level 10 --sgf runs/go_6x6/gnugo_games

Our engine runs as `jaxzero gtp` in a subprocess, GNU Go as `gnugo --mode gtp` with our
rules (`gtp_referee.GNUGO_RULES`: area scoring, positional superko); each random opening
is played twice, colours swapped; GNU Go's final_score (which judges dead stones) decides scored
games. Prints the win rate with a 95% Wilson interval.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import numpy as np

from envs.go import action_to_gtp, gtp_to_action
from jaxzero.go.sgf import GoRecord, write_sgf
from jaxzero.measure.statistics import wilson_interval
from jaxzero.run.agents.agent import load_agent, parse_settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))  # tools/ modules, as scripts
from gtp_referee import GNUGO_RULES, GtpClient, play_match  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", required=True, help="run directory or checkpoint")
    parser.add_argument("--games", type=int, default=20)
    parser.add_argument("--level", type=int, default=10, help="GNU Go level (0-10)")
    parser.add_argument("--simulations", type=int, default=None)
    parser.add_argument(
        "--opening-plies",
        type=int,
        default=2,
        help="random opening moves (distinct points), each opening played with both colours",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the openings")
    parser.add_argument("--sgf", type=Path, default=None, help="write each game here as SGF")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a search.* or evaluation.* setting of our engine, e.g. "
        "evaluation.average_symmetries=true",
    )
    args = parser.parse_args()

    gnugo = shutil.which("gnugo") or shutil.which("gnugo", path="/usr/games")
    if gnugo is None:
        sys.exit("gnugo not found: run `make system-deps`")
    agent = load_agent(args.checkpoint, settings=parse_settings(args.set))
    size, komi = agent.env.size, agent.env.komi
    ours_cmd = [sys.executable, "-m", "jaxzero.cli", "gtp", "--checkpoint", args.checkpoint]
    if args.simulations:
        ours_cmd += ["--simulations", str(args.simulations)]
    for setting in args.set:
        ours_cmd += ["--set", setting]
    gnu_cmd = [gnugo, "--mode", "gtp", "--boardsize", str(size), "--komi", str(komi)]
    gnu_cmd += ["--level", str(args.level), *GNUGO_RULES]
    ours, gnu = GtpClient(ours_cmd), GtpClient(gnu_cmd)
    if args.sgf:
        args.sgf.mkdir(parents=True, exist_ok=True)
    if args.games % 2 or args.opening_plies < 0 or args.opening_plies > size * size // 4:
        sys.exit(f"--games must be even and --opening-plies in 0..{size * size // 4}")
    # Both engines are deterministic: without varied openings every game of one colour is
    # the same game. A few random stones on distinct points (no capture is possible with
    # so few) give each pair of games its own opening, played once with each colour.
    rng = np.random.default_rng(args.seed)
    points = [action_to_gtp(int(a), size) for a in range(size * size)]
    openings = [
        [points[i] for i in rng.choice(size * size, args.opening_plies, replace=False)]
        for _ in range(args.games // 2)
    ]
    wins = 0
    try:
        for game in range(args.games):
            ours_black = game % 2 == 0
            opening = openings[game // 2]
            black, white = (ours, gnu) if ours_black else (gnu, ours)
            result = play_match(
                black,
                white,
                size=size,
                komi=komi,
                max_moves=2 * size * size,
                judge="white" if ours_black else "black",
                opening=opening,
            )
            won = result.winner == ("black" if ours_black else "white")
            wins += won
            print(
                f"game {game + 1:3d}: jaxzero {'black' if ours_black else 'white'}  "
                f"{'win ' if won else 'loss'}  {result.reason:8s} {len(result.moves):3d} moves  "
                f"{result.scores.get('black' if not ours_black else 'white', ''):8s} "
                f"opening {' '.join(opening)}",
                flush=True,
            )
            if args.sgf:
                names = ("jaxzero", f"GNU Go {args.level}")
                moves = [gtp_to_action(m, size) for m in result.moves]
                result_text = {"black": "B+", "white": "W+"}.get(result.winner, "0")
                if result.reason == "resign":
                    result_text += "R"
                record = GoRecord(
                    size=size,
                    komi=komi,
                    moves=moves,
                    result=result_text
                    if result.reason == "resign"
                    else result.scores.get("white" if ours_black else "black", ""),
                    black=names[0] if ours_black else names[1],
                    white=names[1] if ours_black else names[0],
                )
                (args.sgf / f"game_{game + 1:03d}.sgf").write_text(write_sgf(record))
    finally:
        ours.close()
        gnu.close()
    low, high = wilson_interval(wins, args.games)
    print(
        f"\njaxzero (iteration {agent.iteration}) vs GNU Go level {args.level}, {size}x{size}, "
        f"komi {komi:g}: {wins}/{args.games} wins = {wins / args.games:.1%} "
        f"(95% CI {low:.1%}-{high:.1%})"
    )


if __name__ == "__main__":
    main()
