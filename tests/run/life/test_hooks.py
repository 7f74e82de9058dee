"""The driver's hooks, each alone: no trainer, hand-made steps."""

import dataclasses
import json

import jax
import jax.numpy as jnp
import numpy as np

from jaxzero.core.config import GateConfig
from jaxzero.measure.gate import Gate, Verdict
from jaxzero.measure.match import MatchResult
from jaxzero.run.life import hooks
from jaxzero.run.life.checkpoint import Checkpointer


@dataclasses.dataclass(frozen=True)
class FakeState:
    params: dict
    best_params: dict

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)


def _step(iteration, state=None, clock=None, **metrics):
    state = state or FakeState({"w": jnp.ones(2)}, {"w": jnp.zeros(2)})
    values = {name: jnp.float32(v) for name, v in metrics.items()}
    return hooks.Step(iteration, state, values, {}, clock or hooks.Clock())


def test_metrics_row_every_k_iterations_and_the_record_with_checks():
    clock = hooks.Clock()
    row = hooks.MetricsRow(every=2, positions_per_iteration=10)
    first, second = _step(1, clock=clock, loss=1.0), _step(2, clock=clock, loss=0.5)
    row(first)
    assert first.row == {} and first.record() == {}
    first.checks = {"eval/vs_random": 1.0}  # a check alone makes a row of its own
    assert set(first.record()) == {"iteration", "elapsed", "eval/vs_random"}
    row(second)
    assert second.row["iteration"] == 2 and second.row["loss"] == 0.5
    assert second.row["positions_per_second"] > 0
    second.checks = {"arena/score": 0.5}
    assert second.record() == second.row | {"arena/score": 0.5}


def test_throughput_leaves_out_the_checks_time():
    clock = hooks.Clock()
    row = hooks.MetricsRow(every=1, positions_per_iteration=1000)
    step = _step(1, clock=clock)
    clock.checking += 1e6  # checks took all the time since the start: no self-play time left
    row(step)
    assert step.row["positions_per_second"] == 1000 / 1e-9  # the clamp of zero seconds


def test_progress_passes_each_row_and_keeps_the_latest_of_every_metric():
    seen = []
    progress = hooks.Progress(seen.append)
    logged = _step(2)
    logged.row = {"iteration": 2, "loss": 1.0}
    progress(logged)
    checks = _step(3)
    checks.checks = {"eval/vs_random": 0.75}
    progress(checks)
    assert progress.last["loss"] == 1.0 and progress.last["eval/vs_random"] == 0.75
    assert progress.last["iteration"] == 3 and len(seen) == 2
    # on_log gets each row as written: the check-only row repeats no earlier loss (a
    # progress line at iteration 3 with iteration 2's losses read as new ones)
    assert "loss" not in seen[1] and seen[1]["eval/vs_random"] == 0.75
    progress(_step(4))  # nothing to write: nothing passed on
    assert len(seen) == 2


def test_jsonl_writer_appends_rows(tmp_path):
    writer = hooks.JsonlWriter(tmp_path / "metrics.jsonl")
    for i in (1, 2):
        step = _step(i)
        step.row = {"iteration": i}
        writer(step)
    writer(_step(3))  # no row
    writer.close(None)
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert rows == [{"iteration": 1}, {"iteration": 2}]


class FakeMatch:
    def __init__(self, outcome):
        self.outcome = np.asarray(outcome)

    def result(self, params_a, params_b, key):
        return MatchResult.from_games(self.outcome, np.repeat([0, 1], len(self.outcome) // 2))


def test_the_gate_hook_promotes_a_copy_and_logs_its_verdict():
    gate = Gate(GateConfig(enabled=True, every=2, num_games=4), FakeMatch([1, 1, 1, 0]))
    hook = hooks.GateHook(gate, seed=0)
    off = _step(1)
    hook(off)
    assert off.checks == {}  # not due
    due = _step(2)
    hook(due)
    assert due.checks == {"arena/score": 0.875, "arena/games": 4.0, "arena/promoted": 1.0}
    np.testing.assert_array_equal(due.state.best_params["w"], due.state.params["w"])
    assert due.state.best_params["w"] is not due.state.params["w"]
    lost = _step(2)
    hooks.GateHook(Gate(gate.config, FakeMatch([-1, 0, 1, -1])), seed=0)(lost)
    assert lost.checks["arena/promoted"] == 0.0 and float(lost.state.best_params["w"][0]) == 0.0
    assert isinstance(gate(None, None, None), Verdict)


def test_checkpoint_hook_saves_every_k_and_when_the_run_stops(tmp_path):
    saving = hooks.CheckpointHook(Checkpointer(tmp_path), every=2, config={})
    for i in (1, 2, 3):
        saving(_step(i, state={"step": jnp.int32(i)}))
    saving.close(_step(3, state={"step": jnp.int32(3)}))
    with Checkpointer(tmp_path) as checkpointer:
        assert checkpointer.steps() == [2, 3]


def test_the_check_keys_depend_on_seed_stream_and_iteration_only():
    data = lambda seed, stream, i: jax.random.key_data(hooks.check_key(seed, stream, i))  # noqa: E731
    assert jnp.array_equal(data(0, hooks.ARENA_STREAM, 5), data(0, hooks.ARENA_STREAM, 5))
    assert not jnp.array_equal(data(0, hooks.ARENA_STREAM, 5), data(0, hooks.EVAL_STREAM, 5))
    assert not jnp.array_equal(data(0, hooks.ARENA_STREAM, 5), data(1, hooks.ARENA_STREAM, 5))


def test_the_budget_stops_at_its_iteration_count_or_its_time():
    from jaxzero.run.life.driver import Budget

    by_count = Budget(seconds=None, iterations=3)
    for iteration, stop in ((2, False), (3, True)):
        step = _step(iteration)
        by_count(step)
        assert step.stop == stop
    late = hooks.Clock(start=0.0)  # started at the epoch of the monotonic clock: long ago
    step = _step(1, clock=late)
    Budget(seconds=10.0, iterations=None)(step)
    assert step.stop
    step = _step(1)
    step.stop = True  # another hook's stop stands
    Budget(seconds=None, iterations=None)(step)
    assert step.stop
