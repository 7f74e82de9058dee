"""experiments/sweep.py: a toy sweep end to end, in this process."""

import csv

import pytest
from conftest import TINY

from experiments import sweep


def test_arms_are_the_product_of_the_grid():
    grid = ["search.kind=gumbel,puct", "seed=1,2,3"]
    points = sweep.arms(grid)
    assert len(points) == 6 and points[1] == {"search.kind": "gumbel", "seed": "2"}
    assert sweep.arms([]) == [{}]  # no grid: one arm, the --set settings alone
    with pytest.raises(ValueError, match="is not KEY=VALUE,VALUE"):
        sweep.arms(["search.kind"])
    # named arms: after the grid's, alone without one; "" is the preset as it is
    named = ["", "search.kind=puct,search.dirichlet_alpha=1.0"]
    assert sweep.arms([], named) == [{}, {"search.kind": "puct", "search.dirichlet_alpha": "1.0"}]
    assert sweep.arms(["seed=1,2"], ["seed=5"]) == [{"seed": "1"}, {"seed": "2"}, {"seed": "5"}]
    with pytest.raises(ValueError, match="--arm 'search.kind' is not KEY=VALUE"):
        sweep.arms([], ["search.kind"])


def test_a_toy_sweep_trains_measures_and_never_overwrites(tmp_path, capsys):
    tiny = [f"--set={key}={value}" for key, value in TINY.items()]
    args = ["tic_tac_toe", *tiny, "--grid", "search.kind=gumbel,puct", "--iterations", "4"]
    args += ["--simulations", "4", "--out", str(tmp_path)]
    sweep.main(args)
    with open(tmp_path / "sweep.csv") as f:
        rows = list(csv.DictReader(f))
    assert [(r["arm"], r["settings"], r["iterations"]) for r in rows] == [
        ("0", "search.kind=gumbel", "4"),
        ("1", "search.kind=puct", "4"),
    ]
    for row in rows:
        # 12 moves a game slot: every 9-move game has ended and written its positions
        assert 0.0 <= float(row["raw_optimal"]) <= 1.0 and int(row["positions"]) > 0
    table = (tmp_path / "sweep.md").read_text()
    assert "| 1 | search.kind=puct | 1 |" in table  # the arms' means
    assert "95% Wilson intervals over the 4,520 solved positions" in table
    assert {r["measured"] for r in rows} == {"4520"}
    with pytest.raises(SystemExit, match="a0 exists: choose a new --out"):
        sweep.main(args)
    with pytest.raises(SystemExit, match="the seeds of every arm are --seeds"):
        sweep.main([*args[:-1], str(tmp_path / "other"), "--grid", "seed=1,2"])
