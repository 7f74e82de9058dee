"""The driver's hooks: each gets its turn after every iteration, and none reaches into another.

    step = Step(iteration, state, metrics, moves, clock)     # what an iteration produced
    for hook in hooks:
        hook(step)                                           # may replace step.state
    ...
    for hook in hooks:
        hook.close(step)                                     # the run stops

A hook is any callable taking a :class:`Step`; ``start(state)`` and ``close(step)`` are
optional. What one hook leaves for later ones is on the step: the host row of a logging
iteration (:class:`MetricsRow`), the checks' results (:class:`GateHook`,
:class:`EvaluationHook`), and :meth:`Step.record`, the row the writers write. The
checks' time is kept out of the throughput figure (:class:`Clock`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

from jaxzero.core import sharding
from jaxzero.measure.evaluation import Evaluation, SoloEvaluation
from jaxzero.measure.gate import Gate, copy_variables
from jaxzero.measure.match import MatchResult
from jaxzero.measure.solo import SoloResult
from jaxzero.run.folder import manifest, nolink
from jaxzero.run.folder.files import FileProblem, os_reason
from jaxzero.run.folder.reads import FileRefused, read_lines
from jaxzero.run.life.checkpoint import Checkpointer, CheckpointError

Array = jax.Array
ARENA_STREAM, EVAL_STREAM = 1, 2  # key streams of the checks, apart from the training key


@dataclasses.dataclass
class Clock:
    """Wall time of this invocation, and the seconds spent in checks (not self-play)."""

    start: float = dataclasses.field(default_factory=time.monotonic)
    checking: float = 0.0  # seconds inside checks so far
    deadline: float | None = None  # the run's time budget in seconds, if it has one

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def allows(self, seconds: float) -> bool:
        """Whether ``seconds`` more fit in the time budget."""
        return self.deadline is None or self.elapsed() + seconds <= self.deadline

    @contextlib.contextmanager
    def check(self, state: Any) -> Iterator[None]:
        """Time a check; the device finishes the iteration first, so the time is the check's."""
        jax.block_until_ready(state)
        begin = time.monotonic()
        try:
            yield
        finally:
            self.checking += time.monotonic() - begin


@dataclasses.dataclass
class Step:
    """One iteration as the hooks see it.

    The driver builds one per iteration and passes it to every hook in turn; what one
    hook leaves for later ones (``row``, ``checks``, ``stop``, a replaced ``state``) is on
    it.

    Attributes:
        iteration: iterations completed, this one included.
        state: the ``TrainState``; the gate may replace it.
        metrics: the iteration's device scalars.
        moves: the iteration's self-play moves, [T, B] each.
        clock: the invocation's :class:`Clock` (wall time, seconds spent in checks, the
            time budget).
        row: a logging iteration's metrics row, on the host ({} otherwise).
        checks: the checks' metrics (gate, evaluation) of this iteration.
        stop: set by a hook to end the run after this iteration (saved as usual).
    """

    iteration: int  # iterations completed, this one included
    state: Any  # TrainState; the gate may replace it
    metrics: dict[str, Array]  # device scalars of the iteration
    moves: dict[str, Array]  # the iteration's self-play moves [T, B]
    clock: Clock
    row: dict[str, float] = dataclasses.field(default_factory=dict)  # a logging iteration's
    checks: dict[str, float] = dataclasses.field(default_factory=dict)  # the checks' metrics
    stop: bool = False  # a hook sets it to end the run after this iteration (saved as usual)

    def record(self) -> dict[str, float]:
        """The row to write: the logged row with the checks, or the checks alone with the
        iteration and time; {} when there is nothing to write.

        Returns:
            Metric names to host floats: ``row | checks``, or ``{"iteration",
            "elapsed"} | checks``, or {}.
        """
        if self.row:
            return self.row | self.checks
        if self.checks:
            return {"iteration": self.iteration, "elapsed": self.clock.elapsed()} | self.checks
        return {}


class Hook(Protocol):
    """A driver hook: called after every iteration, in its turn (:func:`jaxzero.train`'s
    ``hooks`` follow the driver's own); it may set ``step.stop`` to end the run. A hook may
    also be :class:`Starting` and :class:`Closing`."""

    def __call__(self, step: Step) -> None:
        """Take this iteration's turn.

        Args:
            step: the iteration; the hook may read it, add to ``step.row`` or
                ``step.checks``, replace ``step.state``, or set ``step.stop``.
        """
        ...


@runtime_checkable
class Starting(Protocol):
    """A hook that wants the state before the first iteration (a resumed run's, restored)."""

    def start(self, state: Any) -> None: ...


@runtime_checkable
class Closing(Protocol):
    """A hook with something to finish (files to close) after the last iteration, even
    after a failure (``step`` None when the run failed before its first iteration)."""

    def close(self, step: Any) -> None: ...


def start(hooks: Sequence[Hook], state: Any) -> None:
    """Every :class:`Starting` hook's ``start``, in order."""
    for hook in hooks:
        if isinstance(hook, Starting):
            hook.start(state)


def close(hooks: Sequence[Hook], step: Step | None) -> None:
    """Every :class:`Closing` hook's ``close``, even after one fails (the first failure is
    raised last)."""
    failure = None
    for hook in hooks:
        if isinstance(hook, Closing):
            try:
                hook.close(step)
            except Exception as error:  # the others still close their files
                failure = failure or error
    if failure is not None:
        raise failure


def check_key(seed: int, stream: int, iteration: int) -> Array:
    """The key of a check at ``iteration``: the same for a resumed run as for a straight one."""
    return jax.random.fold_in(jax.random.fold_in(jax.random.key(seed), stream), iteration)


def _to_host(metrics: dict[str, Any]) -> dict[str, float]:
    """Host floats of device scalars (a population's [P] values: their mean)."""
    return {name: float(np.mean(value)) for name, value in jax.device_get(metrics).items()}


FINITE = "finite"  # the iteration's metric that says training is still finite (1.0 or 0.0)


class Diverged(ValueError):
    """Training diverged: a loss, gradient norm or parameter became NaN or infinite. The
    run stopped at once; nothing of the diverged state was saved."""


@jax.jit
def _first_not_finite(first: Array, finite: Array, iteration: Array) -> Array:
    """int32 []: ``first``, or ``iteration`` when it is the first not finite (0: none)."""
    return jnp.where((first == 0) & (finite == 0), iteration, first).astype(jnp.int32)


@dataclasses.dataclass
class FiniteGuard:
    """Ends the run at the first iteration whose ``finite`` metric is 0.0 (a loss, a
    gradient norm, the parameters or the optimizer state NaN or infinite): raises
    :class:`Diverged` naming it and the newest checkpoint, the last finite one, since
    :class:`CheckpointHook` asks :meth:`check` before every save.

    Every iteration folds its flag into a device scalar; the host reads it only where
    it waits for the device anyway (a logged row, a save) or once it is computed, so
    the guard adds no host round trip."""

    checkpointer: Checkpointer
    diverged_at: int | None = None  # the first iteration not finite, once the host knows
    _first: Any = None  # jax.Array int32 [] on the device: that iteration, 0 none yet
    _what: str = "a loss, gradient or parameter"  # what was not finite there

    def __call__(self, step: Step) -> None:
        self.observe(step)
        # once computed, read it at no cost; with several processes only where all wait,
        # so that they all stop at the same iteration
        computed = jax.process_count() == 1 and self._first is not None and self._first.is_ready()
        if step.row or computed:
            self.check(step)

    def observe(self, step: Step) -> None:
        """Fold ``step``'s flag in, on the device (nothing waits)."""
        if FINITE in step.metrics:
            first = jnp.int32(0) if self._first is None else self._first
            finite = step.metrics[FINITE].min()  # a population's: every member's [P]
            self._first = _first_not_finite(first, finite, step.iteration)

    def check(self, step: Step) -> None:
        """Diverged when an iteration up to ``step`` was not finite (waits for it)."""
        if self.diverged_at is None and self._first is not None:
            first = int(self._first)
            if first:
                self.diverged_at = first
                if first == step.iteration:  # its losses are at hand: name the culprits
                    host = step.row or _to_host(step.metrics)
                    culprits = [n for n in host if n != FINITE and not np.isfinite(host[n])]
                    self._what = ", ".join(culprits) or "the parameters"
        if self.diverged_at is not None:
            raise Diverged(self._message())

    def _message(self) -> str:
        return (
            f"training diverged at iteration {self.diverged_at} ({self._what} not finite): "
            f"the run stopped without saving it; {self._kept()}. Start a new run with a "
            "lower optim.learning_rate, or clip gradients with optim.max_grad_norm > 0"
        )

    def _kept(self) -> str:
        """What the run's checkpoints still hold."""
        latest = self.checkpointer.latest_step()
        if latest is None:
            return "no checkpoint was saved"
        return (
            f"checkpoint {latest} is the newest and the last finite one "
            f"({self.checkpointer.shown / str(latest)})"
        )


@dataclasses.dataclass
class MetricsRow:
    """Every ``every`` iterations: the row of metrics, time and self-play throughput
    (positions per second since the last row, the checks' time excluded)."""

    every: int
    positions_per_iteration: int
    _since: int = 0  # iterations since the last row
    _mark: tuple[float, float] | None = None  # (time, checking seconds) at the last row

    def __call__(self, step: Step) -> None:
        self._since += 1
        if self._mark is None:
            self._mark = (step.clock.start, 0.0)
        if step.iteration % self.every:
            return
        row = {"iteration": step.iteration, "elapsed": step.clock.elapsed()}
        row |= _to_host(step.metrics)  # waits for the device: time after it
        row.pop(FINITE, None)  # the guard's flag (FiniteGuard), not a metric to plot
        now = time.monotonic()
        seconds = now - self._mark[0] - (step.clock.checking - self._mark[1])
        row["positions_per_second"] = (
            self._since * self.positions_per_iteration / max(seconds, 1e-9)
        )
        step.row = row
        self._since, self._mark = 0, (now, step.clock.checking)


@dataclasses.dataclass
class GateHook:
    """Every ``gate.config.every`` iterations the learner plays the best, which it
    replaces when the gate promotes it; logs ``arena/score``, ``arena/games`` and
    ``arena/promoted``. Keys come from the seed and the iteration, so a resumed run
    replays its matches exactly."""

    gate: Gate
    seed: int

    def __call__(self, step: Step) -> None:
        if step.iteration % self.gate.config.every:
            return
        key = check_key(self.seed, ARENA_STREAM, step.iteration)
        with step.clock.check(step.state):
            state = step.state
            verdict = self.gate(state.params, state.best_params, key)
            if verdict.promoted:
                step.state = state.replace(best_params=copy_variables(state.params))
        step.checks |= verdict.metrics()


@dataclasses.dataclass
class EvaluationHook:
    """Every ``every`` iterations the playing network: with a ``judge`` (the game has a
    solved position set), its raw policy's optimal share ``eval/raw_optimal``; and,
    whenever they fit in ``max_share`` of the wall time so far, its matches against the
    fixed opponents: ``eval/vs_NAME`` (score) and ``eval/vs_NAME_wins`` (win rate); in a
    single-player game its mean score ``eval/score`` beside ``eval/NAME_score`` of the
    fixed players. The first matches run at the first measurement; after them, their
    last duration is counted ahead, so that from then on the checks stay within the
    share (matches that take a minute play about once in twenty minutes at 5%). Without
    an ``evaluation`` (``evaluation.games=0``) only ``eval/raw_optimal`` is measured."""

    evaluation: Evaluation | SoloEvaluation | None  # None: no matches
    every: int
    seed: int
    judge: Callable[[Any], dict[str, float]] | None = None
    max_share: float = 1.0
    # (iteration, opponent, actions [G, L], outcome [G], seat [G]) of each opponent's games,
    # e.g. GameRecorder.add_match; None: the matches are played without their record
    games: Callable[[int, str, Any, Any, Any], None] | None = None
    _seconds: float = 0.0  # how long the matches last took in this process
    _said: bool = False  # whether the first skip was told

    def __call__(self, step: Step) -> None:
        if step.iteration % self.every:
            return
        if self.judge is not None:
            with step.clock.check(step.state):
                step.checks["eval/raw_optimal"] = self.judge(step.state.best_params)["optimal"]
        if self.evaluation is None:
            return
        fits = step.clock.allows(self._seconds) and self._affordable(step.clock)
        if jax.process_count() > 1:  # one decision for all hosts: process 0's clock
            fits = bool(multihost_utils.broadcast_one_to_all(np.bool_(fits)))
        if not fits:  # it would overrun the time budget or the measuring share
            self._tell_skip(step)
            return
        key = check_key(self.seed, EVAL_STREAM, step.iteration)
        begin = step.clock.elapsed()
        results: dict[str, MatchResult] | dict[str, SoloResult]
        with step.clock.check(step.state):
            if self.games is not None and isinstance(self.evaluation, Evaluation):
                played = self.evaluation.recorded(step.state.best_params, key)
                results = {name: result for name, (result, _) in played.items()}
                for name, (_, (outcome, seat, actions, _)) in played.items():
                    self.games(step.iteration, name, actions, outcome, seat)
            else:
                results = self.evaluation(step.state.best_params, key)
        # the results of this evaluation, of the kind its own metrics read (mypy cannot pair them)
        step.checks |= self.evaluation.metrics(results)  # type: ignore[arg-type]
        self._seconds = step.clock.elapsed() - begin

    def _tell_skip(self, step: Step) -> None:
        """Say once, on stderr, why the matches were skipped and how to have them all."""
        if self._said or not sharding.is_main_process():
            return
        self._said = True
        if step.clock.allows(self._seconds):  # the measuring share ruled them out
            why = (
                f"to keep measuring within evaluation.max_share={self.max_share:g} of the "
                f"run's time (they last took {self._seconds:.0f} s)"
            )
            remedy = f"evaluation.max_share=1 plays them every {self.every} iterations"
        else:  # the time budget did, whatever the share: only more time helps
            why = "as they would overrun the run's time budget"
            remedy = "a longer --seconds leaves them the time"
        measured = " (eval/raw_optimal is still measured each time)" if self.judge else ""
        print(
            f"evaluation: the matches at iteration {step.iteration} were skipped {why}"
            f"{measured}, as they will be whenever they do not fit; {remedy} (said once)",
            file=sys.stderr,
            flush=True,
        )

    def _affordable(self, clock: Clock) -> bool:
        """Whether the matches, at their last duration, keep the checks within
        ``max_share`` of the wall time."""
        if self.max_share >= 1.0 or not self._seconds:
            return True
        ahead = self._seconds
        return clock.checking + ahead <= self.max_share * (clock.elapsed() + ahead)


@dataclasses.dataclass
class JsonlWriter:
    """Appends each row to ``metrics.jsonl`` (flushed, so a crash loses no written row).
    On resume it first drops the rows after the restored checkpoint, which the resumed
    run writes again: the log ends up as an uninterrupted run's."""

    path: Path
    _file: Any = None

    @property
    def _root(self) -> Path:
        """The folder given, below which no link is followed: the run's (a member's
        ``RUN/members/K/metrics.jsonl`` is below its population's)."""
        return manifest.run_root(self.path.parent)

    def start(self, state: Any) -> None:
        if not os.path.lexists(self.path):
            return
        restored = int(state.iteration)
        try:  # a line at a time, each bounded (jaxzero.run.folder.reads)
            lines = [line for _, line in read_lines(self.path, self.path.parent)]
        except FileRefused as error:
            raise FileProblem(f"{error}: move it away") from None
        except OSError as error:
            raise FileProblem(f"cannot read {self.path}: {os_reason(error)}") from None
        kept = [line for line in lines if line is not None and _row_iteration(line) <= restored]
        if len(kept) < len(lines):
            data = b"".join(line + b"\n" for line in kept)
            nolink.write_atomic(self._root, self.path, data)

    def __call__(self, step: Step) -> None:
        row = step.record()
        if row:
            self.write(row)

    def write(self, row: dict[str, float]) -> None:
        """Append ``row`` (FileProblem, in one line, when it cannot be written)."""
        self.append(_json_values(row))

    def append(self, data: dict[str, Any]) -> None:
        """Append ``data`` as one line of strict JSON (FileProblem, in one line, when it
        cannot be written); the first line records the file in the run's manifest."""
        try:
            if self._file is None:
                if not os.path.lexists(self.path):
                    manifest.record(manifest.run_root(self.path.parent), files=[self.path])
                self._file = nolink.open_append(self._root, self.path)
            self._file.write(json.dumps(data, allow_nan=False) + "\n")
            self._file.flush()
        except OSError as error:
            if self._file is not None:  # its buffer still holds the row: drop it with the file
                with contextlib.suppress(OSError):
                    self._file.close()
                self._file = None
            raise FileProblem(f"cannot write {self.path}: {os_reason(error)}") from None

    def close(self, step: Step | None) -> None:
        if self._file is not None:
            self._file.close()


def _json_values(row: dict[str, float]) -> dict[str, float | None]:
    """``row`` with a NaN or infinite value as None (JSON null): strict JSON."""
    return {name: value if math.isfinite(value) else None for name, value in row.items()}


def _row_iteration(line: bytes) -> float:
    """The iteration of a metrics.jsonl line; a line a crash cut short counts as after
    every checkpoint (so it is dropped)."""
    try:
        return float(json.loads(line)["iteration"])
    except (ValueError, KeyError, TypeError, RecursionError):
        return float("inf")


@dataclasses.dataclass
class TensorBoardWriter:
    """Every row's values as TensorBoard scalars under ``directory``."""

    directory: Path
    _writer: Any = None

    def __call__(self, step: Step) -> None:
        row = step.record()
        if not row:
            return
        if self._writer is None:
            from tensorboardX import SummaryWriter  # heavy import, kept off `import jaxzero`

            run_dir = self.directory.parent
            manifest.make_folders(run_dir, self.directory)  # LinkRefused: a link at tb/
            before = set(os.listdir(self.directory))
            self._writer = SummaryWriter(str(self.directory))
            made = set(os.listdir(self.directory)) - before  # its event file
            manifest.record(run_dir, files=[self.directory / name for name in made])
        for name, value in row.items():
            if name != "iteration":
                self._writer.add_scalar(name, value, step.iteration)

    def close(self, step: Step | None) -> None:
        if self._writer is not None:
            self._writer.close()


@dataclasses.dataclass
class Progress:
    """Calls ``on_log`` with every row written, as metrics.jsonl has it (a check-only
    row: the iteration, the time and the checks, no losses of an earlier row); ``last``
    is the latest of every metric (the logged row, updated by later check-only rows)."""

    on_log: Callable[[dict[str, float]], None] | None = None
    last: dict[str, float] = dataclasses.field(default_factory=dict)

    def __call__(self, step: Step) -> None:
        row = step.record()
        if not row:
            return
        self.last = row if step.row else self.last | row
        if self.on_log is not None:
            self.on_log(row)


@dataclasses.dataclass
class CheckpointHook:
    """Saves the whole TrainState every ``every`` iterations, and when the run stops. A
    save that fails raises CheckpointError, which ends the run at once: nothing tries
    to save again on the way out. With a ``guard``, a state that is not finite is never
    saved: the guard raises :class:`Diverged` instead."""

    checkpointer: Checkpointer
    every: int
    config: dict[str, Any]  # written beside each checkpoint
    guard: FiniteGuard | None = None
    _failed: bool = False

    def __call__(self, step: Step) -> None:
        if step.iteration % self.every == 0:
            self._save(step)

    def _save(self, step: Step) -> None:
        if self.guard is not None:
            self.guard.check(step)
        try:
            self.checkpointer.save(step.iteration, step.state, self.config)
            if jax.process_index() == 0:  # the one that writes the run's files
                manifest.record_checkpoint(self.checkpointer.directory.parent, step.iteration)
        except (CheckpointError, FileProblem):
            self._failed = True
            raise

    def close(self, step: Step) -> None:
        try:
            diverged = self.guard is not None and self.guard.diverged_at is not None
            if not (self._failed or diverged) and self.checkpointer.latest_step() != step.iteration:
                self._save(step)
        finally:
            self.checkpointer.close()
