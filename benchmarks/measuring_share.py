"""The share of a run's wall time that its periodic measurement took, from the run's
``metrics.jsonl``.

    make train ARGS="--seconds 1500 --out runs/measure_share"
    python benchmarks/measuring_share.py runs/measure_share

The driver reads a row's ``elapsed`` before it measures, so a measurement's time shows in
the gap to the next row. Each such gap, less what its iterations take at the run's median
pace between unmeasured rows, is the measurement's cost (the noise of an ordinary gap, a
second or two, comes with it). The share is their sum over the run's wall time.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path


def measuring_costs(rows: list[dict]) -> tuple[float, list[float]]:
    """(seconds an iteration, each measurement's seconds) from metrics rows in order."""
    gaps = [
        (b["iteration"] - a["iteration"], b["elapsed"] - a["elapsed"], _measured(a))
        for a, b in zip(rows, rows[1:], strict=False)
    ]
    pace = statistics.median(seconds / its for its, seconds, measured in gaps if not measured)
    return pace, [seconds - its * pace for its, seconds, measured in gaps if measured]


def _measured(row: dict) -> bool:
    return any(key.startswith("eval/") for key in row)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="a run directory")
    args = parser.parse_args(argv)
    lines = (args.run / "metrics.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in lines if line.strip()]
    pace, costs = measuring_costs(rows)
    total = rows[-1]["elapsed"]
    print(f"{rows[-1]['iteration']} iterations in {total:.0f} s, {pace:.2f} s an iteration")
    print("each measurement (s):", " ".join(f"{cost:.1f}" for cost in costs))
    print(f"measuring: {sum(costs):.0f} s, {100 * sum(costs) / total:.1f}% of the run")


if __name__ == "__main__":
    main()
