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
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jaxzero.core.config import Config, apply_overrides, config_from_dict, config_to_dict
from jaxzero.core.population import TRACED
from jaxzero.run.files import write_atomic
from jaxzero.run.reads import read_json

if TYPE_CHECKING:
    from jaxzero.core.trust import TrustCode
    from jaxzero.run.driver import TrainResult

STUDY_FILE = "study.json"
ARMS_DIR = "arms"


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
    hyper: dict[str, list[float]]
    command: str = ""

    def arm_config(self, name: str) -> Config:
        """The config of arm ``name``: the shared one with the arm's settings."""
        return apply_overrides(self.config, self.arms[name])

    def folder(self, root: Path, name: str) -> Path:
        """The run folder of arm ``name`` in the study at ``root``."""
        return root / ARMS_DIR / name


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
    write_atomic(root / STUDY_FILE, json.dumps(data, indent=1) + "\n")


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
    for name in study.arms:
        if not re.fullmatch(r"[A-Za-z0-9.+_-]+", name):  # a name is a folder inside it
            raise ValueError(f"{path} names an arm {name!r} that is no folder name of ours")
    return study


def refuse_study_overwrite(root: Path, force: bool) -> None:
    """RunDirError unless a new study may be written into ``root``: a new or empty
    folder, or (with ``force``) a study, whose arms then start over one by one (each
    deleting only what its run wrote). Anything else is never written into."""
    from jaxzero.run.driver import RunDirError

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
) -> dict[str, TrainResult]:
    """Train a study's arms one after another, each a population in ``root/arms/NAME``.

    Args:
        root: the study's folder.
        study: a new study (written to ``root/study.json`` first); None goes on with the
            one in ``root``.
        seconds: the wall-clock budget of the whole call, shared equally by the arms.
        iterations: each arm's total iterations.
        force: start arms that already trained over (each deleting only what its run
            wrote); a folder holding anything but a study is never written into.
        members_at_once: as :func:`jaxzero.train` takes it (None: measured).
        trust_code: as :func:`jaxzero.train` takes it, for the arms' recorded code.
        on_log: called with each arm's logged rows (its members' mean).
        log: called with a line as each arm starts.
        only: train this arm alone (with all of ``seconds``).

    Returns:
        Each trained arm's :class:`~jaxzero.run.driver.TrainResult`; the arms after one
        that was interrupted (Ctrl-C) are not started.

    Raises:
        RunDirError: ``root`` holds something else than a study, or a study without
            ``force``; or an arm's folder cannot be used.
        ValueError: an unreadable ``study.json``, an unknown ``only``, or what
            :func:`jaxzero.train` refuses.
    """
    from jaxzero.run.driver import holds_run, train

    root = Path(root)
    study = open_study(root, study, force=force, trust_code=trust_code)
    if only is not None and only not in study.arms:
        raise ValueError(f"{root} has no arm {only!r}: its arms are {', '.join(study.arms)}")
    names = [only] if only is not None else list(study.arms)
    results: dict[str, TrainResult] = {}
    for name in names:
        arm = study.folder(root, name)
        again = holds_run(arm) and not force  # an arm already started: resumed
        shown = ", ".join(f"{key}={value}" for key, value in study.arms[name].items())
        log(f"arm {name} ({shown}) in {arm}")
        results[name] = train(
            arm, None if again else study.arm_config(name),
            seconds=seconds and seconds / len(names), iterations=iterations, resume=again,
            force=force, on_log=on_log, trust_code=trust_code, members_at_once=members_at_once,
            seeds=None if again else study.seeds, hyper=None if again else study.hyper,
        )  # fmt: skip
        if results[name].interrupted:
            break
    return results
