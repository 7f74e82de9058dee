"""A study: arms × seeds in one folder, each arm a population, compared by one report.

    jaxzero train tic_tac_toe --seeds 4 --grid search.kind=puct,gumbel --out runs/study
    jaxzero report runs/study

A grid's values either may differ between the members of one population (the traced
numbers of :data:`jaxzero.core.population.TRACED`: learning rate, root noise, ...) or fix
a shape or the code (the search kind, simulations, the network). The first stay on the
population's member axis; each combination of the second is an *arm*: its own
population, compiled once, trained in its own folder. The study's folder::

    DIR/study.json             the shared config, the arms (name -> their settings), the seeds
    DIR/arms/NAME/             each arm: a population run (config.json, population.json,
                               members/K, checkpoints), as `jaxzero train --seeds` writes
    DIR/report/                `jaxzero report DIR`: every metric per arm, summary.md

An arm's name is made from its values (``kind-puct``, ``kind-gumbel_num_simulations-32``).
Each arm is an ordinary population: ``jaxzero eval|export|play DIR/arms/NAME/members/K``
and ``jaxzero report DIR/arms/NAME`` work on it as on any run, and its fault guarantees
(one lock, manifest, checkpoints) are its own.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jaxzero.core.config import Config, apply_overrides, config_from_dict, config_to_dict, flatten
from jaxzero.core.population import TRACED
from jaxzero.run.folder import nolink
from jaxzero.run.folder.layout import STUDY_FILE, arm_folder
from jaxzero.run.folder.reads import read_json

if TYPE_CHECKING:
    from jaxzero.core.trust import TrustCode
    from jaxzero.run.life.driver import TrainResult
    from jaxzero.run.life.hooks import Hook

# An arm's process: -P ("safe path") puts neither the working directory nor a script's
# folder on sys.path, so a typer.py where the study starts never runs in its arms; the
# user's own modules typed on the command line are still found there (envs.registry).
CHILD = (sys.executable, "-P", "-m", "jaxzero")


@dataclasses.dataclass(frozen=True)
class Study:
    """What ``study.json`` records.

    Attributes:
        config: the settings every arm shares (an arm's own override them).
        arms: each arm's name to the settings that make it (dotted keys to values).
        seeds: every arm's members' seeds (a population's ``seeds``).
        hyper: every arm's traced settings on its member axis (its ``hyper``).
        command: the command line that started it, for the report.
    """

    config: Config
    arms: dict[str, dict[str, Any]]
    seeds: list[int]
    hyper: dict[str, list[float]] = dataclasses.field(default_factory=dict)
    command: str = ""

    def arm_config(self, name: str) -> Config:
        """The config of an arm.

        Args:
            name: one of :attr:`arms`.

        Returns:
            The shared config with the arm's settings.
        """
        return apply_overrides(self.config, self.arms[name])

    def folder(self, root: Path, name: str) -> Path:
        """Where an arm trains.

        Args:
            root: the study's folder.
            name: one of :attr:`arms`.

        Returns:
            The arm's run folder, ``root/arms/NAME``.
        """
        return arm_folder(root, name)


def make_study(
    config: Config,
    seeds: Sequence[int] | int = 1,
    grid: Mapping[str, Sequence[Any]] | None = None,
    command: str = "",
) -> Study:
    """The study of ``config`` over ``grid``, as ``jaxzero train --seeds N --grid`` makes it.

    Args:
        config: the settings the arms share.
        seeds: every arm's seeds, or a count N: ``config.seed`` .. ``config.seed + N - 1``.
        grid: settings (dotted keys) to their values. Traced keys
            (:data:`jaxzero.core.population.TRACED`) stay on each arm's member axis,
            every point crossed with the seeds; every combination of the others is an arm.
        command: recorded for the report.

    Returns:
        The :class:`Study` (one arm, ``all``, when nothing in ``grid`` makes arms).

    Raises:
        ValueError: a key that names no setting, or a value it refuses.
    """
    from jaxzero.core.config import MAX_SEED

    typed: dict[str, list[Any]] = {}
    for key, values in (grid or {}).items():
        if key == "seed" or not values:
            raise ValueError(
                f"grid {key!r}: " + ("the seeds are the study's own (seeds=)" if values
                                     else "names no value")
            )  # fmt: skip
        typed[key] = [_as_taken(config, key, value) for value in values]
    traced, static = split_grid(typed)
    if isinstance(seeds, int):
        seeds = range(config.seed, config.seed + seeds)
    seeds = [int(seed) for seed in seeds]
    if not seeds or min(seeds) < 0 or max(seeds) > MAX_SEED:
        raise ValueError(f"seeds must be 1 or more, each from 0 to {MAX_SEED}, got {seeds[:4]}")
    members, hyper = cross(seeds, traced)
    arms = arms_of(static) if static else {"all": {}}
    return Study(config, arms, members, hyper, command)


def _as_taken(config: Config, key: str, value: Any) -> Any:
    """``value`` of ``key`` as the config takes it and reads it back (``"true"`` is True,
    ``"8"`` is 8); ValueError as :func:`apply_overrides` refuses it."""
    found: Any = apply_overrides(config, {key: value})
    for part in key.split("."):
        found = getattr(found, part)
    return found


def cross(
    seeds: Sequence[int], traced: Mapping[str, Sequence[float]]
) -> tuple[list[int], dict[str, list[float]]]:
    """Every point of a grid of traced settings crossed with the seeds, grid-major.

    Args:
        seeds: each point's seeds.
        traced: traced settings (dotted keys) to their values.

    Returns:
        The members' seeds and their ``hyper``, as :func:`jaxzero.make_population` takes
        them.
    """
    points = list(itertools.product(*traced.values())) or [()]
    members = [(point, seed) for point in points for seed in seeds]
    hyper = {key: [float(point[i]) for point, _ in members] for i, key in enumerate(traced)}
    return [seed for _, seed in members], hyper


def split_grid(grid: Mapping[str, Sequence[Any]]) -> tuple[dict[str, list], dict[str, list]]:
    """``(traced, static)``: the grid's keys members may differ in, and those that make
    arms (every other key)."""
    traced = {key: list(values) for key, values in grid.items() if key in TRACED}
    static = {key: list(values) for key, values in grid.items() if key not in TRACED}
    return traced, static


def arms_of(static: Mapping[str, Sequence[Any]]) -> dict[str, dict[str, Any]]:
    """Every combination of the static values, named from them: ``{"kind-puct":
    {"search.kind": "puct"}, ...}`` (keys by their last part; a name two keys would
    share spells the whole key)."""
    short = [key.rpartition(".")[2] for key in static]
    labels = [s if short.count(s) == 1 else key for s, key in zip(short, static, strict=True)]
    arms = {}
    for values in itertools.product(*static.values()):
        name = "_".join(f"{label}-{_slug(v)}" for label, v in zip(labels, values, strict=True))
        arms[name] = dict(zip(static, values, strict=True))
    return arms


def _slug(value: Any) -> str:
    """A value as part of a folder's name: letters, digits, '.', '+' and '-' kept."""
    text = f"{value:g}" if isinstance(value, float) else str(value)
    return re.sub(r"[^A-Za-z0-9.+-]+", "-", text).strip("-") or "none"


def is_study(folder: Path) -> bool:
    """Whether ``folder`` holds a study (its ``study.json``)."""
    return (folder / STUDY_FILE).is_file()


def write_study(root: Path, study: Study) -> None:
    """``root/study.json``; the folder made when it does not exist."""
    root.mkdir(parents=True, exist_ok=True)
    data = {
        "config": config_to_dict(study.config), "arms": study.arms, "seeds": study.seeds,
        "hyper": study.hyper, "command": study.command,
    }  # fmt: skip
    nolink.write_atomic(root, root / STUDY_FILE, json.dumps(data, indent=1) + "\n")


def read_study(root: Path) -> Study:
    """The study at ``root``; ValueError naming the file when it cannot be read."""
    path = root / STUDY_FILE
    try:
        data = read_json(path, root)
        arms = {str(name): dict(values) for name, values in data["arms"].items()}
        hyper = {str(k): [float(v) for v in values] for k, values in data["hyper"].items()}
        study = Study(
            config=config_from_dict(data["config"]), arms=arms,
            seeds=[int(s) for s in data["seeds"]], hyper=hyper, command=str(data["command"]),
        )  # fmt: skip
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise ValueError(f"{path} is not a readable study ({error})") from None
    check_arm_names(study, path)
    return study


def check_arm_names(study: Study, source: str | Path) -> None:
    """ValueError unless every arm's name is a folder of its own inside ``arms/``: letters,
    digits, '.', '+', '_' and '-', and neither "." (``arms/`` itself) nor ".." (the study's
    folder)."""
    for name in study.arms:
        if name in (".", "..") or not re.fullmatch(r"[A-Za-z0-9.+_-]+", name):
            raise ValueError(
                f"{source} names an arm {name!r} that is no folder name of ours: name it "
                "with letters, digits, '.', '+', '_' and '-' (not . or ..)"
            )


def refuse_edited(root: Path, study: Study, name: str) -> None:
    """ValueError when arm ``name`` trained with other settings, seeds or grid than
    study.json gives it now: a resumed arm goes on with what its own folder holds, so an
    edit of study.json would be ignored silently."""
    from jaxzero.run.life.driver import load_run_config
    from jaxzero.run.life.members import read_population

    arm = study.folder(root, name)
    given = flatten(config_to_dict(study.arm_config(name)), sep=".")
    held = flatten(config_to_dict(load_run_config(arm)), sep=".")
    given |= {"seeds": study.seeds, "hyper": study.hyper}
    held |= dict(zip(("seeds", "hyper"), read_population(arm), strict=True))
    changed = [key for key in given if given[key] != held.get(key)]
    if changed:
        key = changed[0]
        raise ValueError(
            f"{root / STUDY_FILE} gives arm {name} {key}={_shown(given[key])}, but {arm} "
            f"trained with {_shown(held.get(key))}: a resumed arm goes on as it started, so "
            "put study.json back, or start the arms over with --force (deletes what they wrote)"
        )


def _shown(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


def refuse_study_overwrite(root: Path, force: bool) -> None:
    """RunDirError unless a new study may be written into ``root``: a new or empty
    folder, or (with ``force``) a study, whose arms then start over one by one (each
    deleting only what its run wrote). Anything else is never written into."""
    from jaxzero.run.life.driver import RunDirError

    if not root.exists() or (root.is_dir() and not any(root.iterdir())):
        return
    if not is_study(root):
        held = ", ".join(sorted(p.name for p in root.iterdir())[:5]) if root.is_dir() else "a file"
        raise RunDirError(
            f"{root} is not a jaxzero study (it holds {held}): nothing was changed; pass "
            "--out DIR with a new folder"
        )
    if not force:
        raise RunDirError(
            f"{root} already holds a study: add --resume to continue it, --force to start "
            "its arms over (deletes what they wrote), or --out DIR for a new one"
        )


def open_study(
    root: Path, study: Study | None, *, force: bool = False, trust_code: TrustCode = False
) -> Study:
    """``study`` written into ``root`` (refused where :func:`refuse_study_overwrite`
    says), or, None, the study ``root`` holds: read as data, its arms' configs naming
    only code ``trust_code`` allows (:func:`jaxzero.core.trust.check_trusted`)."""
    from jaxzero.core.trust import check_trusted

    if study is not None:
        check_arm_names(study, "the study")
        refuse_study_overwrite(root, force)
        write_study(root, study)
        return study
    study = read_study(root)
    for name in study.arms:
        check_trusted(study.arm_config(name), root / STUDY_FILE, trust_code=trust_code)
    return study


def train_study(
    root: str | Path,
    study: Study | None = None,
    *,
    seconds: float | None = None,
    iterations: int | None = None,
    force: bool = False,
    members_at_once: int | None = None,
    trust_code: TrustCode = False,
    on_log: Callable[[dict[str, float]], None] | None = None,
    log: Callable[[str], None] = lambda line: None,
    only: str | None = None,
    hooks: Callable[[str, Path], Sequence[Hook]] | None = None,
    jobs: int = 1,
    options: Sequence[str] = (),
) -> dict[str, TrainResult | int]:
    """Train a study's arms, each a population in ``root/arms/NAME``: one after another in
    this process, or ``jobs`` at a time, each in a ``jaxzero train`` process of its own on
    its share of the CPUs (its members split over them as devices).

    Args:
        root: the study's folder.
        study: a new study (written to ``root/study.json`` first); None goes on with the
            one in ``root``.
        seconds: the wall-clock budget of the whole call: each arm gets its share of it
            (the call's over the arms, or over the rounds of ``jobs`` arms at once).
        iterations: each arm's total iterations.
        force: start arms that already trained over (each deleting only what its run
            wrote); a folder holding anything but a study is never written into.
        members_at_once: as :func:`jaxzero.train` takes it (None: measured).
        trust_code: as :func:`jaxzero.train` takes it, for the arms' recorded code.
        on_log: called with each arm's logged rows (its members' mean; in this process).
        log: called with a line as each arm starts, and (``jobs`` > 1) with each line the
            arms' processes print, as ``[NAME] line``.
        only: train this arm alone (with all of ``seconds``).
        hooks: each arm's driver hooks, from its name and folder (in this process).
        jobs: arms trained at once (> 1: in processes of their own).
        options: more ``jaxzero train`` options for the arms' processes (``jobs`` > 1),
            e.g. ``["--wandb", "PROJECT"]``.

    Returns:
        Each arm's :class:`~jaxzero.run.life.driver.TrainResult` (in this process), or its
        process's exit status (``jobs`` > 1: 0, or 128 + the signal that stopped it,
        saved); the arms after an interrupt (Ctrl-C) are not started, nor listed.

    Raises:
        RunDirError: ``root`` holds something else than a study, or a study without
            ``force``; or an arm's folder cannot be used.
        ValueError: an unreadable ``study.json``, an unknown ``only``, ``jobs`` not
            between 1 and the CPUs, or what :func:`jaxzero.train` refuses.
    """
    from jaxzero.run.life.driver import RunDirError, holds_run, train

    root = Path(root)
    groups = cpu_shares(jobs)  # a bad count refused before anything is written
    if study is not None:  # the caller's own: what its arms' processes read back is trusted
        trust_code = typed_trust(study, trust_code)
    study = open_study(root, study, force=force, trust_code=trust_code)
    if only is not None and only not in study.arms:
        raise ValueError(f"{root} has no arm {only!r}: its arms are {', '.join(study.arms)}")
    names = [only] if only is not None else list(study.arms)
    for name in names:  # the study's folder is the one given: an arm below it is no link
        try:
            nolink.check(root, study.folder(root, name))
        except nolink.LinkRefused as error:
            raise RunDirError(str(error)) from None
    for name in names if not force else ():  # before any arm trains
        if holds_run(study.folder(root, name)):
            refuse_edited(root, study, name)
    if jobs > 1 and len(names) > 1:
        rounds = -(-len(names) // jobs)  # the arms' turns on the CPUs
        passed = _passed(seconds and seconds / rounds, iterations, force, members_at_once,
                         trust_code)  # fmt: skip
        return _arms_at_once(root, names, [*passed, *options], groups, log)
    results: dict[str, TrainResult | int] = {}
    for name in names:
        arm = study.folder(root, name)
        again = holds_run(arm) and not force  # an arm already started: resumed
        shown = ", ".join(f"{key}={value}" for key, value in study.arms[name].items())
        log(f"arm {name} ({shown}) in {arm}")
        result = train(
            arm, None if again else study.arm_config(name),
            seconds=seconds and seconds / len(names), iterations=iterations, resume=again,
            force=force, on_log=on_log, trust_code=trust_code, members_at_once=members_at_once,
            seeds=None if again else study.seeds, hyper=None if again else study.hyper,
            hooks=hooks(name, arm) if hooks is not None else (),
        )  # fmt: skip
        results[name] = result
        if result.interrupted:
            break
    return results


def typed_trust(study: Study, trust_code: TrustCode) -> TrustCode:
    """``trust_code`` and every import path a new ``study``'s arms name: the caller built
    it (typed it on the command line, or in Python), so its code is the caller's own, and
    the arms' processes, which read it back from study.json, are told so."""
    from jaxzero.core.trust import imported_code

    if trust_code is True:
        return True
    typed = [path for name in study.arms for path in imported_code(study.arm_config(name)).values()]
    return sorted({*(trust_code or ()), *typed})


def _passed(
    seconds: float | None,
    iterations: int | None,
    force: bool,
    members_at_once: int | None,
    trust_code: TrustCode,
) -> list[str]:
    """The ``jaxzero train`` options an arm's process is given."""
    options = [] if seconds is None else ["--seconds", repr(seconds)]
    options += [] if iterations is None else ["--iterations", str(iterations)]
    options += ["--force"] if force else []
    options += [] if members_at_once is None else ["--members-at-once", str(members_at_once)]
    # What this call trusts, and no more: the arms' code recorded in study.json is
    # checked against it again in each process (open_study).
    if trust_code is True:
        return [*options, "--trust-code"]
    return options + [f"--trusted={name}" for name in trust_code or ()]


def cpu_shares(jobs: int) -> list[list[int]]:
    """This process's CPUs dealt into disjoint shares, one per arm trained at once.

    Args:
        jobs: the arms trained at once.

    Returns:
        ``jobs`` lists of CPU ids, each of the same length.

    Raises:
        ValueError: ``jobs`` below 1 or above the CPUs this process may use.
    """
    cpus = sorted(os.sched_getaffinity(0))
    if not 1 <= jobs <= len(cpus):
        raise ValueError(
            f"--jobs {jobs}: this process may use {len(cpus)} CPUs, and each arm trained at "
            f"once needs one of its own; pass --jobs 1 to {len(cpus)}"
        )
    share = len(cpus) // jobs
    return [cpus[i * share : (i + 1) * share] for i in range(jobs)]


def _arms_at_once(
    root: Path,
    names: list[str],
    options: list[str],
    groups: list[list[int]],
    log: Callable[[str], None],
) -> dict[str, TrainResult | int]:
    """The arms, one a CPU group at a time, each ``jaxzero train --out ROOT --arm NAME
    OPTIONS`` pinned to its group, each core a device; the exit statuses of those that
    started. Every line they print goes to ``log`` as ``[NAME] line``.

    The processes run in sessions of their own, so a terminal's Ctrl-C reaches this
    process alone, which passes it on once: each arm stops after its iteration and saves
    (exit 128 + the signal), and no further arm starts."""
    from jaxzero.run.life import signals

    jobs = len(groups)
    waiting, statuses = list(names), dict[str, int]()
    running: dict[subprocess.Popen, tuple[int, str, threading.Thread]] = {}  # (CPUs, arm, echo)
    interrupts: list[int] = []  # a caller's Ctrl-C outside the command line's handlers
    passed_on = False
    with signals.loop_takes_signals():
        while waiting or running:
            try:
                while waiting and len(running) < jobs:
                    busy = [group for group, *_ in running.values()]
                    free = next(i for i in range(jobs) if i not in busy)
                    name = waiting.pop(0)
                    command = [*CHILD, "train", f"--out={root}", f"--arm={name}", *options]
                    process, echo = _start(command, name, groups[free], log)
                    running[process] = (free, name, echo)
                done = next((p for p in running if p.poll() is not None), None)
                if done is None:
                    threading.Event().wait(0.2)
                else:
                    _, name, echo = running.pop(done)
                    echo.join()  # its last lines said before the next arm's
                    statuses[name] = done.returncode
            except KeyboardInterrupt:
                interrupts.append(signal.SIGINT)
            stop = signals.taken() or interrupts
            if stop and not passed_on:
                passed_on = True
                waiting.clear()
                for process in running:
                    process.send_signal(stop[0])
    return {name: statuses[name] for name in names if name in statuses}


def _start(
    command: list[str], name: str, cpus: list[int], log: Callable[[str], None]
) -> tuple[subprocess.Popen, threading.Thread]:
    """``command`` on ``cpus`` only (a core a device), and the thread that passes its lines
    to ``log`` as ``[NAME] line``."""
    from jaxzero.run.life.ways import DEVICES_FLAG, HOST_DEVICES_VAR

    # its own cores as devices, not this process's count (use_host_cores set XLA_FLAGS)
    flags = [flag for flag in os.environ.get("XLA_FLAGS", "").split() if DEVICES_FLAG not in flag]
    env = os.environ | {HOST_DEVICES_VAR: str(len(cpus)), "XLA_FLAGS": " ".join(flags)}
    env["PYTHONUNBUFFERED"] = "1"  # its lines as they come, not when a pipe's buffer fills
    taskset = shutil.which("taskset")  # util-linux: pins before the child's Python starts
    process = subprocess.Popen(
        [taskset, "-c", ",".join(map(str, cpus)), *command] if taskset else command,
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        preexec_fn=None if taskset else lambda: os.sched_setaffinity(0, cpus),
        start_new_session=True,  # signals reach it from this process only (_arms_at_once)
    )  # fmt: skip

    def echo() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            log(f"[{name}] {line.rstrip()}")

    thread = threading.Thread(target=echo, daemon=True)
    thread.start()
    return process, thread
