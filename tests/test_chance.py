"""Chance in the search: a tree edge keeps the chance outcome it first sampled
(benchmarks/chance_bias.py measures what that costs)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import chance_bias  # noqa: E402


@pytest.mark.parametrize("kind", ["puct", "gumbel"])
def test_an_edge_keeps_its_first_coin_flip_however_often_it_is_visited(kind):
    m = chance_bias.measure(kind, simulations=16, searches=512)
    # Q(gamble) is one flip, 0 or 1, never the average of several: |Q - 0.5| is 0.5 exactly.
    assert m["q_abs_error"] == pytest.approx(0.5)
    assert 0.4 < m["q_mean"] < 0.6  # unbiased in the mean ...
    assert 0.7 < m["best_q"] < 0.9  # ... but the best Q is 0.8, not 0.6: the winner's curse
    assert 0.4 < m["picks_gamble"] < 0.6  # and the search gambles whenever the flip won
