"""Bradley-Terry Elo: recovery of known ratings, anchoring, intervals, errors, the table."""

import numpy as np
import pytest

from jaxzero.measure.statistics import fit_elo, format_table


def expected_score(r_a: float, r_b: float) -> float:
    return 1.0 / (1.0 + 10 ** ((r_b - r_a) / 400))


def synthetic_results(true: dict[str, float], games: int, seed: int, draw_rate: float = 0.2):
    """A round robin sampled from the Elo model, with draws taking from both sides."""
    rng = np.random.default_rng(seed)
    names = list(true)
    rows = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            p = expected_score(true[a], true[b])
            # A win/draw/loss distribution whose expected score is p: draws as half wins.
            draw = draw_rate * min(p, 1 - p) * 2
            win = p - draw / 2
            w, d, lo = rng.multinomial(games, [win, draw, 1 - win - draw])
            rows.append((a, b, int(w), int(d), int(lo)))
    return rows


TRUE = {"random": 0.0, "one_ply": 350.0, "mcts": 620.0, "agent": 900.0}


def test_recovers_known_ratings_within_intervals():
    fit = fit_elo(synthetic_results(TRUE, games=4000, seed=0), virtual_draws=0)
    for name, rating in TRUE.items():
        i = fit.players.index(name)
        assert fit.lower[i] <= rating <= fit.upper[i], (name, fit.elo[i], rating)
        assert abs(fit[name] - rating) < 25
    assert fit["random"] == 0.0


def test_exact_two_player_solution():
    # Maximum likelihood for one pair: the observed score p gives 400 log10(p / (1 - p)).
    fit = fit_elo([("random", "b", 75, 0, 25)], virtual_draws=0)
    assert fit["b"] == pytest.approx(-400 * np.log10(3), abs=1e-6)
    # Draws count as half wins: 50 wins and 50 draws is a 0.75 score as well.
    fit = fit_elo([("b", "random", 50, 50, 0)], virtual_draws=0)
    assert fit["b"] == pytest.approx(400 * np.log10(3), abs=1e-6)


def test_interval_matches_fisher_information_and_shrinks_with_games():
    # Two players at p = 0.5: Fisher information n p (1 - p) in nats^-2.
    fit = fit_elo([("random", "b", 50, 0, 50)], virtual_draws=0)
    se = 400 / np.log(10) / np.sqrt(100 * 0.25)
    i = fit.players.index("b")
    assert fit.upper[i] - fit.elo[i] == pytest.approx(1.96 * se, rel=1e-6)
    big = fit_elo([("random", "b", 5000, 0, 5000)], virtual_draws=0)
    assert big.upper[i] - big.lower[i] == pytest.approx((fit.upper[i] - fit.lower[i]) / 10)


def test_anchor_choice_only_shifts_ratings():
    rows = synthetic_results(TRUE, games=300, seed=1)
    a = fit_elo(rows)
    b = fit_elo(rows, anchor="one_ply")
    shift = a["one_ply"]
    for name in TRUE:
        assert b[name] == pytest.approx(a[name] - shift, abs=1e-6)


def test_perfect_record_stays_finite_with_virtual_draws():
    fit = fit_elo([("agent", "random", 100, 0, 0), ("agent", "one_ply", 60, 20, 20)])
    assert np.isfinite(fit.elo).all() and fit["agent"] > 500
    assert fit.games[fit.players.index("agent")] == 200


def test_errors():
    with pytest.raises(ValueError, match="anchor"):
        fit_elo([("a", "b", 1, 0, 1)])
    with pytest.raises(ValueError, match="no chain"):
        fit_elo([("random", "a", 1, 0, 1), ("b", "c", 1, 0, 1)])


def test_table_lists_players_strongest_first():
    fit = fit_elo(synthetic_results(TRUE, games=200, seed=2))
    table = format_table(fit)
    lines = table.splitlines()
    assert "Elo" in lines[0] and len(lines) == 1 + len(TRUE)
    assert lines[1].split()[1] == "agent" and "(anchor)" in table
