"""The Python driver around the compiled iteration: a run directory, a loop, and hooks.

    result = train("runs/c4", get_preset("connect_four"), seconds=600)

The loop is ``state, metrics, moves = trainer.iteration(state)`` (one jitted function),
then every hook in turn (:mod:`jaxzero.run.life.hooks`):

* the metrics row every ``train.log_every`` iterations (the only host pull of metrics);
* the finite guard (:class:`~jaxzero.run.life.hooks.FiniteGuard`): at the first iteration
  whose losses, gradient norms or parameters are NaN or infinite the run stops
  (:class:`~jaxzero.run.life.hooks.Diverged`), that state never saved; in a population only
  that member stops, frozen at its last finite state, until every member has
  (:class:`~jaxzero.run.life.members.MembersGuard`);
* with the gate on, every ``gate.every`` iterations the learner plays the best
  (:mod:`jaxzero.measure.gate`): ``arena/score``, ``arena/games``, ``arena/promoted``;
* every ``evaluation.every`` iterations the playing network against random and one-ply
  (``eval/vs_random``, ``eval/vs_random_wins``, ...); both checks use keys derived from
  the seed and the iteration, so a resumed run replays them exactly;
* ``metrics.jsonl``, TensorBoard under ``tb/``, the ``on_log`` callback;
* a checkpoint every ``train.checkpoint_every`` iterations and when the run stops (time
  or iteration budget reached, Ctrl-C or SIGTERM);
* any ``hooks`` the caller adds, e.g. the Go self-play recorder
  (``jaxzero.go.records.SelfPlayRecorder``) of ``jaxzero train go_6x6 --sgf DIR``;
* last, the stop hooks: :class:`Interrupt` (SIGTERM or Ctrl-C: stop after this
  iteration's hooks) and :class:`Budget` (iterations or seconds, one clock for all
  hosts); any hook may end the run by setting ``step.stop``. A periodic evaluation that
  would overrun the time budget (by its last duration) is skipped.

A run directory holds ``config.json``, ``metrics.jsonl``, ``tb/`` and ``checkpoints/``,
and ``.jaxzero-run.json``, the manifest of what jaxzero wrote there
(:mod:`jaxzero.run.folder.manifest`). A directory that already holds a run is never overwritten:
resume it, or start over explicitly with ``force``, which deletes the manifest's entries
and nothing else.

Several hosts (``jaxzero.core.sharding``, docs/scaling.md): every process runs ``train``
on the same run directory (shared storage); process 0 prepares it and alone writes the
config, metrics and TensorBoard files; all take part in each checkpoint save, which orbax
writes once; the stop decision (time budget) is process 0's, broadcast to the others.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import shutil
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import jax
import numpy as np
from jax.experimental import multihost_utils

from jaxzero.core import sharding
from jaxzero.core.config import Config, config_to_dict, valid_keys
from jaxzero.core.loop import Trainer, make_trainer, recorded
from jaxzero.core.population import Population, make_population
from jaxzero.core.trust import TrustCode, UntrustedCode, check_trusted
from jaxzero.measure.games import solved_games
from jaxzero.measure.players import RawPolicyPlayer
from jaxzero.measure.positions import SolvedPositions
from jaxzero.measure.probes import ShareJudge
from jaxzero.run.folder import manifest, nolink
from jaxzero.run.folder.config_file import read_config_dict, read_config_file
from jaxzero.run.folder.files import FileProblem, json_text, os_reason
from jaxzero.run.folder.layout import (
    CHECKPOINT_DIR,
    CONFIG_FILE,
    ELO_FILE,
    GAMES_FILE,
    LOCK_FILE,
    MEMBERS_DIR,
    METRICS_FILE,
    POPULATION_FILE,
    REPORT_DIR,
    TENSORBOARD_DIR,
)
from jaxzero.run.folder.reads import read_json
from jaxzero.run.life import hooks as hooks_lib
from jaxzero.run.life import signals, ways
from jaxzero.run.life.checkpoint import Checkpointer, CheckpointError
from jaxzero.run.life.hooks import Hook
from jaxzero.run.life.members import PopulationRun, as_run, is_population, read_population
from jaxzero.run.life.runs import Judge, Run, SingleRun

# What the compiled iteration reads (jaxzero.core.config): a resume continues the run its
# checkpoint holds only if none of these changed in config.json since.
RUN_DEFINING = (
    "game", "seed", "num_devices", "network", "search", "selfplay", "replay", "optim",
    "gate.enabled",
)  # fmt: skip
# What every config.json a run wrote holds, in every layout (the oldest, with its arena
# section, included): a config of someone else's that happens to read as ours lacks it.
WRITTEN_SECTIONS = ("game", "seed", "search", "train")
# Besides config.json and checkpoints/ (either makes a folder hold a run), what a run
# writes into its folder: a new run never starts where one of them is someone else's.
RUN_NAMES = (METRICS_FILE, POPULATION_FILE, ELO_FILE, MEMBERS_DIR, REPORT_DIR, TENSORBOARD_DIR)


class RunDirError(RuntimeError):
    """The run directory cannot be used as asked; the message says how to fix it."""


@dataclasses.dataclass(frozen=True)
class TrainResult:
    run_dir: Path
    iterations: int  # the run's total iteration count when the driver stopped
    seconds: float  # wall time of this invocation
    interrupted: bool
    last_metrics: dict[str, float]
    signal: int = 0  # the signal that interrupted it (SIGINT, SIGTERM), 0 if none


def holds_run(run_dir: Path) -> bool:
    return (
        (run_dir / CONFIG_FILE).exists()
        or (run_dir / CHECKPOINT_DIR).exists()
        or manifest.has_manifest(run_dir)
    )


def load_run_config(run_dir: str | Path) -> Config:
    path = Path(run_dir) / CONFIG_FILE
    if not path.exists():
        raise RunDirError(f"{run_dir} holds no run ({CONFIG_FILE} missing)")
    try:
        return read_config_file(path)
    except (UnicodeDecodeError, json.JSONDecodeError, ValueError) as error:
        raise RunDirError(
            f"{path} is not a readable config ({error}); restore it from "
            f"{Path(run_dir) / 'checkpoints'}/N/config, or start a new run"
        ) from None


def prepare_run_dir(run_dir: Path, config: Config | None, *, resume: bool, force: bool) -> Config:
    """Check what ``run_dir`` holds against the request and return the config to train."""
    if resume and force:
        raise RunDirError("--resume and --force contradict each other: pick one")
    if resume:
        if not holds_run(run_dir):
            raise RunDirError(f"nothing to resume in {run_dir}: start a new run without --resume")
        refuse_foreign(run_dir)
        return load_run_config(run_dir)
    assert config is not None
    refuse_overwrite(run_dir, force)
    if holds_run(run_dir):
        try:  # what the run wrote (its manifest's entries), never the user's files
            manifest.remove_run_files(run_dir)
        except manifest.InTheWay as error:
            raise RunDirError(
                f"{run_dir} was left as it was: {error}, then --force again"
            ) from None
        except OSError as error:
            raise RunDirError(
                f"cannot delete the files of the run in {run_dir}: {os_reason(error)}"
            ) from None
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        manifest.start(run_dir)  # first: a config.json without it would be no run of ours
        config_file = run_dir / CONFIG_FILE
        text = json_text(config_to_dict(config), config_file)
        nolink.write_atomic(run_dir, config_file, text)
        manifest.make_folders(run_dir, run_dir / CHECKPOINT_DIR)
    except nolink.LinkRefused as error:
        raise RunDirError(str(error)) from None
    except (OSError, FileProblem) as error:
        raise RunDirError(f"cannot write the run directory {run_dir}: {os_reason(error)}") from None
    return config


def refuse_overwrite(run_dir: Path, force: bool) -> None:
    """RunDirError when a new run would replace the run in ``run_dir`` without ``force``,
    or when ``run_dir`` holds something that is not a jaxzero run (even with ``force``:
    jaxzero deletes only what it wrote). The message says what the folder holds."""
    if not holds_run(run_dir):
        taken = [name for name in RUN_NAMES if os.path.lexists(run_dir / name)]
        if taken:  # a new run would append to them, or write beside them as if its own
            raise RunDirError(
                f"{run_dir} holds {', '.join(taken)} but no jaxzero run, and a new run writes "
                "those names: nothing was changed; pass --out DIR with a new folder"
            )
        return
    refuse_foreign(run_dir)
    if not force:
        raise RunDirError(
            f"{run_dir} already holds a run ({_describe_run(run_dir)}): add --resume to "
            "continue it, --force to start over (deletes what the run wrote), or --out DIR "
            "for a new one"
        )


def refuse_foreign(run_dir: Path) -> None:
    """RunDirError when ``run_dir``, which holds something, is not a jaxzero run: neither
    a new run nor a resume writes into someone else's folder (not even a lock), nor
    through a link below it (:func:`refuse_links`, named as a link)."""
    refuse_links(run_dir)
    foreign = _not_a_run(run_dir)
    if foreign:
        raise RunDirError(
            f"{run_dir} is not a jaxzero run ({foreign}; it holds {_listing(run_dir)}): "
            "nothing was changed; pass --out DIR with a new folder"
        )


def _not_a_run(run_dir: Path) -> str:
    """Why ``run_dir`` (which has a config.json, a checkpoints/ or a manifest) is not a
    jaxzero run, or "" when it is one: it carries a manifest jaxzero reads, or it is a run
    of a jaxzero before the manifest (:func:`jaxzero.run.folder.manifest.older_run`: a config.json
    that loads as a jaxzero config, beside a checkpoint or metrics of a run)."""
    if manifest.has_manifest(run_dir):
        try:
            manifest.read_manifest(run_dir)
        except manifest.ManifestError as error:
            return str(error)
        return ""
    path = run_dir / CONFIG_FILE
    if not path.is_file():
        return f"it has a {CHECKPOINT_DIR}/ but no {CONFIG_FILE}"
    try:
        data = read_json(path, run_dir)  # bounded: a link to /dev/zero or a FIFO is refused
        read_config_dict(data)
    except (OSError, UnicodeDecodeError, ValueError) as error:
        reason = str(error).split("; valid keys")[0]
        return f"its {CONFIG_FILE} is not a jaxzero config: {reason}"
    missing = [key for key in WRITTEN_SECTIONS if key not in data]
    if missing:  # {} and {"seed": 42} read as configs (every key has a default)
        return f"its {CONFIG_FILE} lacks {', '.join(missing)}, which every run's config holds"
    if not manifest.older_run(run_dir):
        return (
            f"no {manifest.MANIFEST_FILE} beside its {CONFIG_FILE}, which every run jaxzero "
            "writes carries, nor a checkpoint or metrics row of an older jaxzero run"
        )
    return ""


def _listing(run_dir: Path, most: int = 6) -> str:
    names = sorted(p.name + "/" * p.is_dir() for p in run_dir.iterdir())
    more = f" and {len(names) - most} more" if len(names) > most else ""
    return ", ".join(names[:most]) + more


def _describe_run(run_dir: Path) -> str:
    """What a refusal names: "a tic_tac_toe run, checkpoints up to 40"."""
    try:
        game = load_run_config(run_dir).game
    except RunDirError:
        game = f"unreadable-{CONFIG_FILE}"
    folder = run_dir / CHECKPOINT_DIR
    steps = (
        sorted(int(p.name) for p in folder.iterdir() if p.name.isdigit()) if folder.is_dir() else []
    )
    return f"a {game} run, " + (f"checkpoints up to {steps[-1]}" if steps else "no checkpoint yet")


def lock_run_dir(run_dir: Path) -> IO[bytes]:
    """Take ``RUN/.lock`` for this process: an OS file lock (flock) held until the returned
    file is closed or the process ends, however it ends, so a killed run needs no manual
    unlocking. RunDirError naming the holder's PID when another process holds it."""
    made = not run_dir.exists()
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        # unbuffered: on a full disk the pid write fails here, never later in close()
        lock = nolink.open_lock(run_dir, run_dir / LOCK_FILE)
    except (OSError, FileProblem) as error:
        if made:
            with contextlib.suppress(OSError):
                run_dir.rmdir()  # only if still empty
        if isinstance(error, FileProblem):
            raise RunDirError(str(error)) from None
        raise RunDirError(f"cannot write the run directory {run_dir}: {os_reason(error)}") from None
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as error:
        if not isinstance(error, BlockingIOError):  # e.g. ENOLCK: no locks on this storage
            lock.close()
            raise RunDirError(
                f"cannot lock {run_dir / LOCK_FILE}: {os_reason(error)}; train into a "
                "directory on local or lock-capable storage"
            ) from None
        lock.seek(0)
        holder = lock.read().decode(errors="replace").strip() or "unknown"
        lock.close()
        raise RunDirError(
            f"{run_dir} is being written by another jaxzero process (pid {holder}); wait for "
            "it to stop, or train into another --out"
        ) from None
    try:
        lock.truncate(0)
        lock.write(f"{os.getpid()}\n".encode())
    except OSError:
        pass  # a full disk: the lock holds without the pid written; writing the run says why
    return lock


@dataclasses.dataclass
class Interrupt:
    """The stop hook of SIGTERM (``kill``, a scheduler's pre-emption) and Ctrl-C: the run
    stops after the current iteration, its hooks done (its row written, a checkpoint
    saved). A second signal stops at once: on the command line the signal watcher ends the
    process (:mod:`jaxzero.run.life.signals`, nothing raised inside a compile); in a Python
    session a second Ctrl-C raises KeyboardInterrupt, still saving."""

    requested: bool = False
    signum: int = 0  # the first signal taken

    def __call__(self, step: hooks_lib.Step) -> None:
        step.stop = step.stop or self.requested

    @contextlib.contextmanager
    def catching_signals(self) -> Iterator[None]:
        """Only the main thread can take signals; elsewhere this does nothing."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        watched = signals.installed()  # the watcher says "stopping" and ends a second signal

        def request(signum: int, frame: object) -> None:
            signals.claim(signum)  # the loop's, whenever the watcher reads it
            if self.requested and signum == signal.SIGINT and not watched:
                raise KeyboardInterrupt
            first = not self.requested
            self.requested = True
            self.signum = self.signum or signum
            if first and signum == signal.SIGINT and not watched:  # os.write: reentrant
                with contextlib.suppress(OSError, ValueError):
                    os.write(sys.stderr.fileno(), signals.STOPPING.format("SIGINT").encode())

        previous = {sig: signal.signal(sig, request) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


@dataclasses.dataclass(frozen=True)
class Budget:
    """The stop hook: the run reaches ``iterations`` in total, or ``seconds`` pass. With
    several processes, process 0's clock decides for everyone (a broadcast)."""

    seconds: float | None
    iterations: int | None

    def __call__(self, step: hooks_lib.Step) -> None:
        if self.iterations is not None and step.iteration >= self.iterations:
            step.stop = True
            return
        stop = step.stop or self.seconds is not None and step.clock.elapsed() >= self.seconds
        if jax.process_count() > 1:
            stop = bool(multihost_utils.broadcast_one_to_all(np.bool_(stop)))
        step.stop = stop


def _prepare(
    run_dir: Path,
    config: Config | None,
    resume: bool,
    force: bool,
    run: Run | None,
    given: Given,
) -> tuple[Config, Run, IO[bytes] | None]:
    """The config and :class:`~jaxzero.run.life.runs.Run` (one run or a population), its
    directory ready on every process, and the lock process 0 holds on it
    (:func:`lock_run_dir`; the caller closes it). ``given``: a population's ``seeds`` and
    ``hyper``, and ``trust_code``, as passed to :func:`train`."""
    refuse_links(run_dir)  # first: a link is named as one, not as a folder of someone else's
    if resume and is_population(run_dir) and given.seeds is None:
        seeds, hyper = read_population(run_dir)
        given = dataclasses.replace(given, seeds=seeds, hyper=hyper)
    if run is not None and config is None and not resume:
        config = run.config
    elif run is not None and config is not None:  # as the trainer records it
        config = recorded(config, run.trainer)
    # A new run's trainer is built first, so that a bad mesh fails before the directory
    # exists; a run in the way fails before that compile. The config written is the
    # trainer's: a custom game, network or search recorded by name.
    if not resume:  # before anything is written there, its lock included
        refuse_overwrite(run_dir, force)
    elif holds_run(run_dir):
        refuse_foreign(run_dir)
    if run is None and config is not None and not resume:
        run = _build(config, given)
        config = run.config
    if run is not None and not resume:
        run.check_memory()  # before anything is allocated or written
    lock = None
    if sharding.is_main_process():
        config, lock = _ready(run_dir, config, run, resume, force)
    if jax.process_count() > 1:
        multihost_utils.sync_global_devices("jaxzero: run directory ready")
        config = load_run_config(run_dir)
    try:
        if config is None or run is not None and run.config != config:
            raise ValueError(
                "the trainer passed to train() was built for another config than the run's"
                if config is not None
                else "train() needs a config or a trainer for a new run"
            )
        if run is None:
            if resume:  # a config read from the folder: its named code needs trust
                _check_trusted(run_dir, config, given)
            run = _build(config, given)
            run.check_memory()
        if resume:
            run.check_resumed(run_dir)
    except BaseException:
        if lock is not None:
            lock.close()
        raise
    return config, run, lock


def _ready(
    run_dir: Path,
    config: Config | None,
    run: Run | None,
    resume: bool,
    force: bool,
) -> tuple[Config, IO[bytes] | None]:
    """Process 0's part of :func:`_prepare`: the run directory locked, written (a new
    run's config, a population's members) and checked writable; its config and lock."""
    made, lock = not run_dir.exists(), None
    try:
        if not made or not resume:  # else prepare_run_dir says there is nothing
            lock = lock_run_dir(run_dir)
            if made:  # an interrupt before its first checkpoint removes it
                signals.created(run_dir)
        refuse_links(run_dir)  # before anything is deleted or written
        config = prepare_run_dir(run_dir, config, resume=resume, force=force)
        if run is not None and not resume:
            run.write_new(run_dir)
        nolink.check_writable(run_dir, run_dir / CHECKPOINT_DIR, "checkpoints")  # before training
        _check_metrics_file(run_dir)
    except BaseException:
        if made and lock is not None:  # ours alone (we hold its lock): leave nothing
            shutil.rmtree(run_dir, ignore_errors=True)
        if lock is not None:
            lock.close()
        raise
    return config, lock


# Below a run's folder, what jaxzero writes and how deep its own entries go (a population's
# members/K/metrics.jsonl: 2); a link at any of them is refused before anything is written.
WRITTEN = {
    CONFIG_FILE: 0, manifest.MANIFEST_FILE: 0, METRICS_FILE: 0, GAMES_FILE: 0,
    POPULATION_FILE: 0, ELO_FILE: 0, CHECKPOINT_DIR: 2, TENSORBOARD_DIR: 1, REPORT_DIR: 1,
    MEMBERS_DIR: 3,
}  # fmt: skip


def refuse_links(run_dir: Path) -> None:
    """RunDirError, nothing written, when a name the run writes below ``run_dir`` (or an
    entry of its folders) is a symbolic link (:mod:`jaxzero.run.folder`)."""
    for name, depth in WRITTEN.items():
        found = nolink.links_below(run_dir, run_dir / name, depth=depth)
        if found:
            raise RunDirError(found)


@dataclasses.dataclass(frozen=True)
class Given:
    """What :func:`train` was asked beyond the config: a population's members, and the
    code its caller trusts."""

    seeds: Sequence[int] | None = None
    hyper: Mapping[str, Sequence[float] | float] | None = None
    members_at_once: int | None = None
    trust_code: TrustCode = False


def _build(config: Config, given: Given) -> Run:
    """``make_trainer(config)``, or ``make_population`` when ``given`` has seeds, its
    members run the way ``given`` says or the fastest measured here."""
    if given.seeds is None:
        return SingleRun(make_trainer(config))
    seeds, hyper = given.seeds, given.hyper
    say = lambda line: print(f"population: {line}", file=sys.stderr, flush=True)  # noqa: E731
    at_once = given.members_at_once
    way = ways.choose(config, seeds=seeds, hyper=hyper, at_once=at_once, log=say)
    return PopulationRun(
        make_population(
            config, seeds=seeds, hyper=hyper, members_at_once=way.at_once, devices=way.devices
        )
    )


def _check_trusted(run_dir: Path, config: Config, given: Given) -> None:
    """RunDirError when the run's config names code that ``given`` does not trust."""
    try:
        check_trusted(config, run_dir / CONFIG_FILE, trust_code=given.trust_code)
    except UntrustedCode as error:
        raise RunDirError(str(error)) from None


def _judge(config: Config, trainer: Trainer) -> Judge | None:
    """The raw policy's share of solved positions, for a game with a solved set."""
    if config.evaluation.every > 0 and trainer.env.id in solved_games():
        return ShareJudge(RawPolicyPlayer(trainer.apply_fn), SolvedPositions(trainer.env))
    return None


def _check_metrics_file(run_dir: Path) -> None:
    """RunDirError when the run's metrics.jsonl is there but is no file to append to."""
    path = run_dir / METRICS_FILE
    if path.is_dir():
        raise RunDirError(f"{path} is a folder, not the run's metrics file: move it away")
    if path.exists() and not path.is_file():
        raise RunDirError(f"{path} is not a regular file: move it away")


def edited_fields(saved: Config, config: Config) -> list[str]:
    """``RUN_DEFINING``'s dotted keys whose value differs between ``saved`` (a
    checkpoint's config) and ``config`` (the run's config.json), each as ``key: old saved,
    new in config.json``."""

    def value(of: Config, key: str) -> Any:
        for name in key.split("."):
            of = getattr(of, name)
        return of

    def shown(x: Any) -> str:
        text = repr(x)
        return text if len(text) <= 40 else text[:37] + "..."

    keys = [k for k in valid_keys() if any(k == d or k.startswith(f"{d}.") for d in RUN_DEFINING)]
    return [
        f"{key}: {shown(value(saved, key))} saved, {shown(value(config, key))} in config.json"
        for key in keys
        if value(saved, key) != value(config, key)
    ]


def _check_config_unchanged(config: Config, checkpointer: Checkpointer) -> None:
    """CheckpointError naming every field of ``RUN_DEFINING`` that config.json changed
    since the latest checkpoint was saved."""
    step, saved = checkpointer.saved_config()
    try:
        before = read_config_dict(saved)
    except ValueError:  # not a config this jaxzero reads: the restore names what differs
        return
    changes = edited_fields(before, config)
    if changes:
        original = checkpointer.shown / str(step) / "config" / "metadata"
        raise CheckpointError(
            f"checkpoint {step} in {checkpointer.shown} was written under another config "
            f"({'; '.join(changes)}), so resuming would not continue its run: compare the "
            f"run's config.json with {original} and restore it from there, or start a new "
            f"run in a new --out directory"
        )


def _initial_state(run: Run, checkpointer: Checkpointer, resume: bool) -> Any:
    if resume:
        abstract = jax.eval_shape(run.fresh)
        checkpointer.expect(abstract)  # before a step's bytes are hashed
        if checkpointer.latest_step() is not None:
            _check_config_unchanged(run.config, checkpointer)
        try:
            return checkpointer.restore(abstract)[0]
        except CheckpointError:
            if checkpointer.latest_step() is not None:
                raise
    return run.fresh()  # a new run, or one stopped before its first checkpoint


def train(
    run_dir: str | Path,
    config: Config | None = None,
    *,
    seconds: float | None = None,
    iterations: int | None = None,
    resume: bool = False,
    force: bool = False,
    on_log: Callable[[dict[str, float]], None] | None = None,
    hooks: Sequence[Hook] = (),
    trainer: Trainer | Population | None = None,
    seeds: Sequence[int] | None = None,
    hyper: Mapping[str, Sequence[float] | float] | None = None,
    members_at_once: int | None = None,
    trust_code: TrustCode = False,
) -> TrainResult:
    """Train until ``seconds`` pass or the run reaches ``iterations`` in total.

    With neither, ``config.train.iterations`` is the budget. Ctrl-C stops after the
    current iteration and saves a checkpoint.

    Args:
        run_dir: the run directory; a new run's is created, an existing run is never
            overwritten without ``force``.
        config: the run's settings; may be omitted when resuming (the directory's
            config.json) or when ``trainer`` is given.
        seconds: a wall-clock budget for this invocation.
        iterations: the run's total iteration budget (a resumed run counts its past ones).
        resume: continue the run in ``run_dir`` from its latest checkpoint.
        force: start over in a ``run_dir`` that holds a run (deletes it).
        on_log: called with each logged metrics row (a dict of floats).
        hooks: hooks of your own (:class:`~jaxzero.run.life.hooks.Hook`); they take their
            turn after the driver's own (:func:`standard_hooks`) and its checkpoint,
            before the stop hooks; one may end the run by setting ``step.stop``.
        trainer: the :class:`~jaxzero.core.loop.Trainer` or
            :class:`~jaxzero.core.population.Population` to train, built by the caller:
            with a custom game, network or search policy
            (``make_trainer(config, env=..., network=..., search=...)``), or to share one
            compiled trainer between runs of one config (``config`` may then be omitted).
            The run's config.json records a custom env, network and search by name, so
            that ``load_agent``, ``play`` and ``eval`` rebuild them where importable, and a
            resumed run needs them again (a trainer) only where not.
        seeds: train a population (:func:`~jaxzero.core.population.make_population`),
            one member per seed, as one compiled program; the run directory then holds
            each member as ``RUN/members/K`` (:mod:`jaxzero.run.life.members`). A resumed
            population needs neither ``seeds`` nor ``hyper`` (its population.json).
        hyper: a population's hyperparameters on its axis, as ``make_population`` takes.
        members_at_once: a population's members vmapped together on each device (1: one
            at a time); None: the fastest way measured here (:func:`jaxzero.run.life.ways.choose`,
            which also splits the members over the devices; a line on stderr says what
            it chose).
        trust_code: resuming, import the code the run's config.json names (a
            ``module:attribute`` game, network or search function): True trusts whoever
            wrote it, a collection allows those import paths alone. By default a resumed
            run's config names code only by registered names (:mod:`jaxzero.core.trust`),
            or a ``trainer`` built with the objects is passed.

    Returns:
        A ``TrainResult``: ``run_dir``, ``iterations`` (the run's total when it stopped),
        ``seconds`` (this invocation's wall time), ``interrupted`` (Ctrl-C or SIGTERM),
        ``last_metrics`` (the last logged row; {} on processes other than 0).

    Raises:
        RunDirError: ``run_dir`` cannot be used as asked (a run in the way without
            ``resume`` or ``force``, nothing to resume, another process writing it, not
            writable, or its config names code not trusted), in one line saying how to
            fix it.
        CheckpointError: ``resume`` with a checkpoint that cannot be restored.
        ValueError: neither ``config`` nor ``trainer`` for a new run, a ``trainer`` built
            for another config than the run's, or a setting the config or
            :func:`~jaxzero.core.loop.make_trainer` refuses; or
            :class:`~jaxzero.run.life.hooks.Diverged` (a ValueError): training diverged, the
            newest checkpoint is the last finite one.
    """
    run_dir = Path(run_dir)
    sharding.initialize()  # joins a multi-process job when JAXZERO_COORDINATOR etc. are set
    given = Given(seeds, hyper, members_at_once, trust_code)
    passed = None if trainer is None else as_run(trainer)
    config, run, lock = _prepare(run_dir, config, resume, force, passed, given)
    if iterations is None and seconds is None:
        iterations = config.train.iterations
    try:
        return _train(run_dir, config, run, Budget(seconds, iterations), resume, on_log, hooks)
    finally:
        if lock is not None:
            lock.close()


def _train(
    run_dir: Path,
    config: Config,
    run: Run,
    budget: Budget,
    resume: bool,
    on_log: Callable | None,
    hooks: Sequence[Hook],
) -> TrainResult:
    """The loop of :func:`train` over a prepared, locked run directory."""
    checkpointer = Checkpointer(run_dir, keep_every=config.train.keep_every)
    state = _initial_state(run, checkpointer, resume)
    guard = run.guard(checkpointer, run_dir)  # a population's members fail alone
    saving = hooks_lib.CheckpointHook(
        checkpointer, config.train.checkpoint_every, config_to_dict(config), guard
    )
    interrupt = Interrupt()
    row, *checks = run.hooks(run_dir, on_log, _judge(config, run.trainer))  # the row first
    turns = [row, guard, *checks, saving, *hooks, interrupt, budget]
    hooks_lib.start(turns, state)
    clock = hooks_lib.Clock(deadline=budget.seconds)
    step = hooks_lib.Step(int(np.max(state.iteration)), state, {}, {}, clock)  # [P]: a population
    budget(step)  # a run already at its budget trains nothing
    interrupted = False
    try:
        with interrupt.catching_signals(), signals.loop_takes_signals():
            while not step.stop:
                state, metrics, moves = run.iteration(step.state)
                step = hooks_lib.Step(step.iteration + 1, state, metrics, moves, clock)
                for hook in turns:
                    hook(step)
    except KeyboardInterrupt:
        interrupted = True
        interrupt.signum = interrupt.signum or signal.SIGINT
    finally:
        hooks_lib.close(turns, step)
    progress = next((h for h in turns if isinstance(h, hooks_lib.Progress)), None)
    last = progress.last if progress is not None else {}
    interrupted = interrupted or interrupt.requested
    return TrainResult(
        run_dir, step.iteration, clock.elapsed(), interrupted, last, int(interrupt.signum)
    )
