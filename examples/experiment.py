"""An experiment: PUCT against Gumbel as the self-play search, over several seeds.

A study: the search kind makes the arms, each arm one population of the seeds (one
compiled program), all trained into one folder and compared by one report, as

    jaxzero train tic_tac_toe evaluation.every=20 --seeds 4 \\
        --grid search.kind=puct,gumbel --iterations 200 --out runs/examples/experiment
    jaxzero report runs/examples/experiment

does from the command line. Every 20 iterations each member's raw network is scored on
every solved tic-tac-toe position (``eval/raw_optimal``). The report (``OUT/report``)
draws every metric per arm with its seeds' 95% band and writes ``summary.md``: each
arm's last measurement, mean and interval, and Welch's difference of the arms with its
interval.

    python examples/experiment.py                  # a few minutes on a 2-core CPU
    python examples/experiment.py --seeds 8        # more seeds, a tighter interval
    python examples/experiment.py --smoke          # toy sizes, seconds (CI)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import jaxzero

SMOKE = {  # the test suite's tiny tic-tac-toe (tests/conftest.py), whose programs it shares
    "selfplay.batch_size": 8,
    "selfplay.moves_per_iteration": 3,
    "replay.capacity": 256,
    "replay.min_size": 16,
    "optim.minibatch_size": 16,
    "optim.updates_per_iteration": 2,
    "search.num_simulations": 4,
    "evaluation.simulations": 4,
    "network.hidden_size": 16,
    "network.num_blocks": 1,
    "network.channels": 8,
    "network.value_hidden": 16,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="toy sizes: a CI check, seconds")
    parser.add_argument("--out", type=Path, default=Path("runs/examples/experiment"))
    parser.add_argument("--seeds", type=int, default=4)
    args = parser.parse_args()

    seeds, iterations, every = (2, 2, 1) if args.smoke else (args.seeds, 200, 20)
    measured = {"evaluation.every": every, "train.log_every": every}
    config = jaxzero.apply_overrides(
        jaxzero.get_preset("tic_tac_toe"), measured | (SMOKE if args.smoke else {})
    )
    jaxzero.use_host_cores()  # first: on a CPU, each core becomes a device for the members
    study = jaxzero.make_study(config, seeds=seeds, grid={"search.kind": ["puct", "gumbel"]})
    jaxzero.train_study(args.out, study, iterations=iterations, log=print)
    report = jaxzero.write_study_report(args.out)
    for line in (report / "summary.md").read_text().splitlines():
        if line.startswith(("| metric", "| eval/raw_optimal")):
            print(line)  # each arm's last share [95% interval], then their difference
    print(f"wrote {report / 'summary.md'} and {report / 'eval_raw_optimal.png'}")


if __name__ == "__main__":
    try:
        main()
    except (OSError, RuntimeError, ValueError) as error:  # a read-only --out, a run in the way
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
