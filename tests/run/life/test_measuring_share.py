"""The periodic measurement's share of a run: the raw policy's optimal share every time,
the matches only while they fit in ``evaluation.max_share`` of the wall time."""

import contextlib
import dataclasses

from jaxzero.run.life.hooks import Clock, EvaluationHook, Step


@dataclasses.dataclass
class FakeClock(Clock):
    now: float = 0.0

    def elapsed(self) -> float:
        return self.now

    @contextlib.contextmanager
    def check(self, state):
        begin = self.now
        yield
        self.checking += self.now - begin


@dataclasses.dataclass
class Matches:
    """Matches that take ``seconds`` of the fake clock."""

    clock: FakeClock
    seconds: float
    played: int = 0

    def __call__(self, params, key):
        self.clock.now += self.seconds
        self.played += 1
        return {}

    def metrics(self, results):
        return {"eval/vs_random": 1.0}


class State:
    best_params = None


def test_matches_stay_within_their_share_and_the_raw_share_is_always_logged(capsys):
    clock = FakeClock()
    matches = Matches(clock, seconds=60.0)
    judged = []

    def judge(params):
        clock.now += 0.5  # one batched forward pass
        judged.append(params)
        return {"optimal": 0.9}

    hook = EvaluationHook(matches, every=25, seed=0, judge=judge, max_share=0.05)
    shares = []
    for iteration in range(1, 2001):  # 2,000 iterations of 9 s: five hours
        clock.now += 9.0
        step = Step(iteration, State(), {}, {}, clock)
        hook(step)
        if iteration % 25 == 0:
            assert step.checks["eval/raw_optimal"] == 0.9
            shares.append(clock.checking / clock.now)
        if iteration == 167:  # 25 minutes: the first matches alone, 4% of the time
            assert matches.played == 1 and clock.checking / clock.now < 0.05
    assert len(judged) == 2000 // 25
    # after the first matches' cost is known the share only falls towards its limit
    assert max(shares[shares.index(max(shares)) + 1 :]) <= max(shares)
    assert 0.03 < clock.checking / clock.now <= 0.05 + 0.5 / 225 and matches.played >= 10
    # the first skip is told once, with the setting that has them all
    [told] = capsys.readouterr().err.strip().splitlines()
    assert told.startswith("evaluation: the matches at iteration 50 were skipped to keep")
    assert "evaluation.max_share=0.05" in told and "evaluation.max_share=1 plays" in told


def test_matches_over_the_time_budget_are_skipped_with_advice_that_helps(capsys):
    """With evaluation.max_share=1 already, matches that would overrun the time budget
    are skipped for the budget's sake: the advice is more time, not the share again."""
    clock = FakeClock(deadline=100.0)
    matches = Matches(clock, seconds=60.0)
    hook = EvaluationHook(matches, every=1, seed=0, max_share=1.0)
    for iteration in range(1, 4):
        clock.now += 1.0
        hook(Step(iteration, State(), {}, {}, clock))
    assert matches.played == 1  # 61 s + 60 s would pass the 100 s budget
    [told] = capsys.readouterr().err.strip().splitlines()
    assert "were skipped as they would overrun the run's time budget" in told
    assert "a longer --seconds leaves them the time" in told and "max_share=1" not in told


def test_a_share_of_one_plays_every_time():
    clock = FakeClock()
    matches = Matches(clock, seconds=60.0)
    hook = EvaluationHook(matches, every=1, seed=0, max_share=1.0)
    for iteration in range(1, 6):
        clock.now += 1.0
        hook(Step(iteration, State(), {}, {}, clock))
    assert matches.played == 5


def test_no_skip_no_line(capsys):
    clock = FakeClock()
    hook = EvaluationHook(Matches(clock, seconds=1.0), every=1, seed=0, max_share=1.0)
    hook(Step(1, State(), {}, {}, clock))
    assert capsys.readouterr().err == ""


def test_games_zero_measures_the_solved_positions_only(capsys):
    """evaluation.games=0: no matches (no Evaluation), eval/raw_optimal every time, and
    no line about skipped matches; the config takes 0 and still refuses an odd count."""
    import pytest

    from jaxzero.core.config import EvaluationConfig

    clock = FakeClock()
    hook = EvaluationHook(None, every=2, seed=0, judge=lambda params: {"optimal": 0.7})
    steps = [Step(i, State(), {}, {}, clock) for i in range(1, 5)]
    for step in steps:
        hook(step)
    assert [step.checks for step in steps] == [{}, {"eval/raw_optimal": 0.7}] * 2
    assert capsys.readouterr().err == ""
    assert EvaluationConfig(games=0).games == 0
    with pytest.raises(ValueError, match="evaluation.games must be 0 or an even number"):
        EvaluationConfig(games=3)


def test_the_benchmark_reads_each_measurement_from_the_gap_after_its_row():
    from measuring_share import measuring_costs  # benchmarks/, on the path from conftest

    rows = [{"iteration": 0, "elapsed": 0.0}]
    for i in range(1, 9):  # 5 s an iteration; row 4 measured for 30 s, row 8 at the end
        pause = 30.0 if i == 5 else 0.0
        rows.append({"iteration": i, "elapsed": rows[-1]["elapsed"] + 5.0 + pause})
    rows[4]["eval/raw_optimal"] = rows[8]["eval/raw_optimal"] = 0.8
    pace, costs = measuring_costs(rows)
    assert pace == 5.0
    assert costs == [30.0]  # the last row's measurement has no gap after it yet
