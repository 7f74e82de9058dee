"""A comparison's summary leads with the study's answer (its question's metric, seed by
seed, the difference in words), keeps every interval within its metric's range, says
when every seed measured one value, and warns about reading many intervals at once."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from jaxzero.run.studies.comparison import Arm, headline, metric_range, write_comparison

# Each arm's seeds: (raw policy optimal, draw rate, value loss, positions per second)
ARMS = {
    "puct": [(0.90, 0.99, 0.010, 5e3), (0.93, 0.97, 0.030, 5e3), (0.99, 1.00, 0.002, 5e3)],
    "gumbel": [(0.99, 0.90, 0.040, 4.8e3), (1.00, 0.95, 0.050, 4.8e3), (0.98, 0.80, 0.045, 4.8e3)],
}  # fmt: skip


def _arms(root: Path) -> list[Arm]:
    arms = []
    for name, seeds in ARMS.items():
        runs = []
        for k, (optimal, draws, loss, speed) in enumerate(seeds):
            run = root / name / str(k)
            run.mkdir(parents=True)
            row = {"iteration": 100, "eval/raw_optimal": optimal, "draw_rate": draws,
                   "value_loss": loss, "positions_per_second": speed}  # fmt: skip
            later = {"iteration": 120, "game_length": 7.0}  # trained on after the evaluation
            (run / "metrics.jsonl").write_text(json.dumps(row) + "\n" + json.dumps(later) + "\n")
            runs.append(run)
        arms.append(Arm(name, tuple(runs)))
    return arms


@pytest.fixture(scope="module")
def summary(tmp_path_factory) -> str:
    root = tmp_path_factory.mktemp("compared")
    write_comparison(root / "report", _arms(root), "Study report", ["two arms"])
    return (root / "report" / "summary.md").read_text()


def _numbers(cell: str) -> list[float]:
    return [float(x) for x in re.findall(r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?", cell)]


def test_the_summary_leads_with_the_answer_seed_by_seed(summary):
    sections = [line for line in summary.splitlines() if line.startswith("## ")]
    assert sections == ["## The answer: eval/raw_optimal", "## Every metric"]
    assert "eval/raw_optimal (at iteration 100; trained to 120), seed by seed" in summary
    assert "| puct | 0.9, 0.93, 0.99 |" in summary
    assert "| gumbel | 0.99, 1, 0.98 |" in summary
    assert "puct − gumbel: -0.05 [" in summary and "these seeds do not tell" in summary


def test_no_interval_leaves_its_metrics_range(summary):
    table = summary.split("## Every metric")[1].split("Differences")[0]
    rows = {line.split("|")[1].strip(): line.split("|")[2:4] for line in table.splitlines()
            if line.startswith("| ") and "[" in line}  # fmt: skip
    for metric in ("draw_rate", "value_loss"):
        low, high = metric_range(metric)
        for cell in rows[metric]:
            mean, lo, hi = _numbers(cell)[:3]
            assert low <= lo <= mean <= hi <= high, (metric, cell)
    # the t interval alone would reach past 1 and below 0 here
    assert "1.017" not in summary and "[-0.0" not in rows["value_loss"][0]
    answer = summary.split("## Every metric")[0]
    for line in answer.splitlines():
        if line.startswith("| gumbel"):
            assert _numbers(line.split("[")[1])[1] <= 1.0


def test_one_value_for_every_seed_is_said_not_given_an_interval(summary):
    line = next(line for line in summary.splitlines() if line.startswith("| positions_per_second"))
    assert re.search(r"5000 \(all \d+ seeds alike: no interval\)", line)
    assert "[5000, 5000]" not in line
    assert "(one value a side: no interval)" in summary


def test_many_intervals_come_with_their_warning(summary):
    assert "These are 5 intervals side by side" in summary and "by chance alone" in summary


def test_the_question_and_the_ranges():
    assert headline(["draw_rate", "eval/vs_random", "eval/raw_optimal"]) == "eval/raw_optimal"
    assert headline(["draw_rate", "eval/vs_one_ply_wins"]) == "eval/vs_one_ply_wins"
    assert headline(["draw_rate", "value_loss"]) is None
    assert metric_range("eval/vs_random") == (0.0, 1.0)
    assert metric_range("eval/vs_random_wins") == (0.0, math.inf)
    assert metric_range("model/value_error_3") == (0.0, math.inf)
    assert metric_range("root_value") == (-math.inf, math.inf)
