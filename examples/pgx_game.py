"""A pgx game through the bridge: pgx's tic-tac-toe trained by jaxzero, rules and all pgx's.

``envs.make("pgx/<id>")`` wraps a perfect-information pgx game of one or two players as an
``envs.Env`` (``envs.from_pgx(pgx.make(...))`` wraps a pgx env object the same way): a
step is pgx's own ``step``, so the game trains, searches and plays like any other, here
from ``jaxzero.default_config``. Othello, hex, animal shogi, backgammon and 2048 have tuned
presets (``jaxzero.get_preset("pgx/othello")``); see docs/pgx.md. Every 100 iterations the
driver's evaluation plays the agent against random and one-ply players (scores in [0, 1]).

Needs pgx: ``pip install 'jaxzero[pgx]'``.

    python examples/pgx_game.py                    # about three minutes on a 2-core CPU
    python examples/pgx_game.py --game pgx/connect_four
    python examples/pgx_game.py --smoke            # toy sizes, seconds (CI; no evaluation)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

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
    "network.num_blocks": 1,
    "network.channels": 8,
    "network.value_hidden": 16,
    "evaluation.every": 0,
    "train.log_every": 1,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="toy sizes: a CI check, seconds")
    parser.add_argument("--out", type=Path, default=Path("runs/examples/pgx_game"))
    parser.add_argument("--force", action="store_true", help="replace the run in --out")
    parser.add_argument("--game", default="pgx/tic_tac_toe", help="a pgx id, pgx/<id>")
    args = parser.parse_args()

    env = envs.make(args.game)  # ValueError saying what to install when pgx is missing
    print(f"{env.id}: {env.num_actions} actions, observation {env.observation_shape}")
    iterations = 3 if args.smoke else 300
    config = jaxzero.default_config(env)
    evaluation = {"evaluation.every": 100, "evaluation.max_share": 1.0}  # never skipped
    config = jaxzero.apply_overrides(config, SMOKE if args.smoke else evaluation)

    def log(row: dict[str, float]) -> None:
        scores = {k: v for k, v in row.items() if k.startswith("eval/vs_") and "wins" not in k}
        print(
            f"iteration {row['iteration']:4.0f}  policy loss {row['policy_loss']:.3f}  "
            f"value loss {row['value_loss']:.3f}  game length {row['game_length']:.1f}"
            + "".join(f"  {k.removeprefix('eval/')} {v:.2f}" for k, v in scores.items())
        )

    trainer = jaxzero.make_trainer(config, env=env)
    result = jaxzero.train(
        args.out, trainer=trainer, iterations=iterations, force=args.force, on_log=log
    )
    print(f"{result.iterations} iterations in {result.seconds:.0f} s; the run is in {args.out}")
    print(f"play it: jaxzero play --checkpoint {args.out}")


if __name__ == "__main__":
    try:
        main()
    except (OSError, RuntimeError, ValueError) as error:  # a read-only --out, a run in the way
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
