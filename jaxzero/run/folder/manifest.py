"""``RUN/.jaxzero-run.json``, a run's manifest: what jaxzero wrote there, and all that
``train --force`` deletes.

    {"format": 1, "jaxzero": "0.1.0",
     "files": ["config.json", "metrics.jsonl", "tb/events.out.tfevents.1796410717.vm"],
     "folders": ["checkpoints", "tb"],
     "checkpoints": ["checkpoints/2", "checkpoints/4"]}

Paths are relative to the run directory. ``files``: each file a writer created
(config.json, metrics.jsonl, TensorBoard's event files, population.json, a member's
config and metrics, report figures and summary, elo.json); ``folders``: each folder
jaxzero made because it was missing; ``checkpoints``: each step orbax wrote, recorded once
saved and dropped once retention removed it. Writers record what they create as they
create it (:func:`record`, :func:`make_folders`, :func:`record_checkpoint`), on process 0,
under a lock on the run directory, so that a ``jaxzero eval`` or ``report`` beside a
training run loses no entry. A folder without a manifest records nothing.

``--force`` (:func:`remove_run_files`) deletes exactly these entries:

* a file entry, and the ``.NAME.partial*`` a crashed atomic write of it left;
* of a step, what orbax writes: ``_CHECKPOINT_METADATA``, ``commit_success.txt``,
  ``checksums.sha256`` and the item folders ``state/``, ``agent/``, ``config/`` (leaf
  folders orbax fills whole); a file of the user's beside them stays, and so its step
  folder. A save cut short leaves steps under orbax's own names
  (``N.orbax-checkpoint-tmp-*``, ``.removed/N``), which go the same way;
* a folder entry, once it is empty.

Nothing outside the run directory is ever touched: an entry is a relative path without
``..``, every folder on its way is opened without following a symlink, and a symlink is
never followed nor removed (jaxzero makes none), so a ``report`` that links elsewhere keeps
its target as it was.

Run directories of a jaxzero before the manifest carry none (:func:`older_run`). One is
told from someone else's folder by its config.json reading as a jaxzero config *and* a
trace only a run leaves: a checkpoint step holding its ``checksums.sha256``, or a metrics
row (a JSON object with a numeric ``iteration``) first in ``metrics.jsonl`` or
``members/0/metrics.jsonl``; ``{}`` beside ``model.pt`` is no run. Such a run resumes and
loads as before; ``--force`` deletes in it only the names jaxzero writes there (before
the manifest, and since: a resumed run's ``games.jsonl``, a report's games), in the
folders it writes them (:func:`older_entries`), as if recorded.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import fcntl
import json
import os
import re
import stat
from collections.abc import Iterable, Iterator, Sequence
from importlib import metadata
from pathlib import Path, PurePosixPath

from jaxzero.run.folder import nolink
from jaxzero.run.folder.files import FileProblem, os_reason
from jaxzero.run.folder.layout import (
    CHECKPOINT_DIR,
    CHECKSUMS,
    CONFIG_FILE,
    ELO_FILE,
    GAMES_FILE,
    MANIFEST_FILE,
    MEMBERS_DIR,
    METRICS_FILE,
    POPULATION_FILE,
    REPORT_DIR,
    SUMMARY_FILE,
    TENSORBOARD_DIR,
)

FORMAT = 1
KINDS = ("files", "folders", "checkpoints")
MOST_BYTES = 16 << 20  # a manifest larger than this is no manifest of ours
# What orbax writes into a step (jaxzero.run.life.checkpoint: CHECKSUMS, STATE_ITEM, AGENT_ITEM
# and the config item); kept here so that deleting a run needs no orbax import.
CHECKPOINTS = CHECKPOINT_DIR
STEP_FILES = ("_CHECKPOINT_METADATA", "commit_success.txt", CHECKSUMS)
STEP_ITEMS = ("state", "agent", "config")
ORBAX_TEMPORARY = re.compile(r"\d+\.orbax-checkpoint-tmp.*")
ORBAX_REMOVED = ".removed"
# What jaxzero wrote before the manifest (format 1): the only names --force deletes in a run
# without one. A closed list, history: newer files are recorded in the manifest.
# and what today's jaxzero writes by name when it resumes or reports such a run
OLDER_TOP_FILES = (CONFIG_FILE, METRICS_FILE, POPULATION_FILE, ELO_FILE, GAMES_FILE)
OLDER_ELO = re.compile(r"elo-\d{8}-\d{6}(-\d+)?\.json")
OLDER_EVENTS = re.compile(r"events\.out\.tfevents\..+")
OLDER_REPORT = (
    SUMMARY_FILE, "losses.png", "kl_gap.png", "win_rates.png", "games.png", "elo.png",
    "policy_loss.png", "value_loss.png", "value_error.png", "kl_search_prior.png",
    "game_length.png", "draw_rate.png", "game_return.png",
    *(f"game_{k}.svg" for k in range(1, 6)),  # a report's games (jaxzero.run.reports.report.STRIPS)
)  # fmt: skip
OLDER_MEMBER_FILES = (CONFIG_FILE, METRICS_FILE, GAMES_FILE)
GONE = (errno.ENOENT, errno.ENOTDIR, errno.ELOOP)  # no such folder, or a symlink in the way


class ManifestError(ValueError):
    """A run's manifest cannot be read; the message names the file and why."""


class InTheWay(ValueError):
    """A file not jaxzero's stands where --force would leave a checkpoint folder behind."""


@dataclasses.dataclass(frozen=True)
class Manifest:
    """The entries of a manifest, as relative POSIX paths."""

    files: frozenset[str] = frozenset()
    folders: frozenset[str] = frozenset()
    checkpoints: frozenset[str] = frozenset()

    def __or__(self, other: Manifest) -> Manifest:
        return Manifest(*(getattr(self, k) | getattr(other, k) for k in KINDS))


def version() -> str:
    try:
        return metadata.version("jaxzero")
    except metadata.PackageNotFoundError:  # a source tree that was never installed
        return "0+unknown"


def has_manifest(run_dir: Path) -> bool:
    return os.path.lexists(run_dir / MANIFEST_FILE)


def read_manifest(run_dir: Path) -> Manifest | None:
    """The manifest of ``run_dir``; None when it has none; ManifestError when it is not
    one this jaxzero reads (damaged, a newer format, an entry leaving the folder)."""
    path = run_dir / MANIFEST_FILE
    if not has_manifest(run_dir):
        return None
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            raise ValueError("not a regular file")
        with open(path, "rb") as file:
            data = json.loads(file.read(MOST_BYTES + 1)[:MOST_BYTES])
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            found = data.get("format") if isinstance(data, dict) else None
            raise ValueError(f"format {found!r}, where this jaxzero reads format {FORMAT}")
        return Manifest(*(frozenset(map(_checked, data[kind])) for kind in KINDS))
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as error:
        raise ManifestError(f"{path} is not a run manifest jaxzero reads ({error})") from None


def _checked(entry: object) -> str:
    """``entry`` when it names a path inside the run directory, else ValueError."""
    parts = PurePosixPath(entry).parts if isinstance(entry, str) else ()
    if not parts or str(PurePosixPath(*parts)) != entry or parts[0] == "/" or ".." in parts:
        raise ValueError(f"the entry {entry!r} is not a path inside the run directory")
    return entry


def start(run_dir: Path) -> None:
    """A new run's manifest, recording the config.json about to be written."""
    _write(run_dir, Manifest(files=frozenset({CONFIG_FILE})))


def _write(run_dir: Path, manifest: Manifest) -> None:
    data = {"format": FORMAT, "jaxzero": version()}
    data |= {kind: sorted(getattr(manifest, kind)) for kind in KINDS}
    nolink.write_atomic(run_dir, run_dir / MANIFEST_FILE, json.dumps(data, indent=1) + "\n")


def run_root(folder: Path) -> Path:
    """The run directory whose manifest covers what is written into ``folder``: the folder
    itself, or RUN for a population's member folder ``RUN/members/K``."""
    if folder.name.isdigit() and folder.parent.name == MEMBERS_DIR:
        if has_manifest(folder.parent.parent) and not has_manifest(folder):
            return folder.parent.parent
    return folder


@contextlib.contextmanager
def _locked(run_dir: Path) -> Iterator[None]:
    """An exclusive lock (flock) on the run directory itself while its manifest is
    updated; without lock support the update goes ahead (one writer is the rule)."""
    fd = os.open(run_dir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _relative(run_dir: Path, paths: Iterable[Path | str]) -> frozenset[str]:
    found = set()
    for path in paths:
        with contextlib.suppress(ValueError):  # not inside the run: not the run's to record
            found.add(Path(path).relative_to(run_dir).as_posix())
    return frozenset(found - {"."})


def record(
    run_dir: Path,
    *,
    files: Iterable[Path] = (),
    folders: Iterable[Path] = (),
    checkpoints: Iterable[Path] = (),
) -> None:
    """Add what a writer created (paths inside ``run_dir``) to its manifest; nothing when
    ``run_dir`` has none (an older run, or not a run) or one it cannot read (then
    ``--force`` refuses it). FileProblem when the manifest cannot be written."""
    entries = Manifest(*(_relative(run_dir, p) for p in (files, folders, checkpoints)))
    _update(run_dir, lambda found: found | entries)


def record_checkpoint(run_dir: Path, step: int) -> None:
    """Record the step just saved and drop the steps retention removed."""

    def update(found: Manifest) -> Manifest:
        steps = {s for s in found.checkpoints if os.path.lexists(run_dir / s)}
        return dataclasses.replace(found, checkpoints=frozenset(steps | {f"{CHECKPOINTS}/{step}"}))

    _update(run_dir, update)


def _update(run_dir: Path, change) -> None:
    if not has_manifest(run_dir):
        return
    try:
        with _locked(run_dir):
            try:
                found = read_manifest(run_dir)
            except ManifestError:
                return
            if found is not None and (changed := change(found)) != found:
                _write(run_dir, changed)
    except OSError as error:
        raise FileProblem(f"cannot write {run_dir / MANIFEST_FILE}: {os_reason(error)}") from None


def make_folders(run_dir: Path, folder: Path) -> None:
    """``folder`` (inside ``run_dir``) and its missing parents made, never through a link
    (:class:`~jaxzero.run.folder.nolink.LinkRefused`), each one made recorded: only a folder
    jaxzero made is ever removed."""
    record(run_dir, folders=nolink.make_folders(run_dir, folder))


# --- what --force deletes -------------------------------------------------------------


def older_run(run_dir: Path) -> bool:
    """Whether ``run_dir`` (no manifest, a config.json that reads as a jaxzero config)
    holds a trace that only a jaxzero run leaves: a checkpoint step with its checksums,
    or a metrics row first in metrics.jsonl (a population's: its member 0's)."""
    root = os.open(run_dir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        steps = [n for n in _names(root, [CHECKPOINTS]) if n.isdigit()]
        if any(_is_file(root, [CHECKPOINTS, n, CHECKSUMS]) for n in steps):
            return True
        metrics = ([METRICS_FILE], [MEMBERS_DIR, "0", METRICS_FILE])
        return any(_first_row(root, parts) for parts in metrics)
    finally:
        os.close(root)


def older_entries(run_dir: Path) -> Manifest:
    """What an older jaxzero wrote into ``run_dir``, found by its names (module doc)."""
    root = os.open(run_dir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        top = _names(root, [])
        files = {n for n in top if n in OLDER_TOP_FILES or OLDER_ELO.fullmatch(n)}
        tb = TENSORBOARD_DIR
        files |= {f"{tb}/{n}" for n in _names(root, [tb]) if OLDER_EVENTS.fullmatch(n)}
        files |= {f"report/{n}" for n in OLDER_REPORT}
        folders = {CHECKPOINTS, TENSORBOARD_DIR, REPORT_DIR, MEMBERS_DIR}
        for k in (n for n in _names(root, [MEMBERS_DIR]) if n.isdigit()):
            files |= {f"members/{k}/{n}" for n in OLDER_MEMBER_FILES}
            files |= {f"members/{k}/report/{n}" for n in OLDER_REPORT}
            folders |= {f"members/{k}", f"members/{k}/report"}
        steps = {f"{CHECKPOINTS}/{n}" for n in _names(root, [CHECKPOINTS]) if n.isdigit()}
    finally:
        os.close(root)
    return Manifest(frozenset(files), frozenset(folders), frozenset(steps))


def remove_run_files(run_dir: Path) -> None:
    """Delete what jaxzero wrote into ``run_dir`` (its manifest's entries, or an older
    run's names), nothing else, then the manifest (last: a failure part way leaves it to
    finish the job). ManifestError when the manifest cannot be read, InTheWay when a step
    folder holds a file of someone else's (nothing deleted); OSError when a file cannot
    be deleted."""
    entries = read_manifest(run_dir)
    if entries is None:
        entries = older_entries(run_dir)
    root = os.open(run_dir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        steps = [s.split("/") for s in entries.checkpoints]
        if CHECKPOINTS in entries.folders or steps:  # what a save cut short left, by name
            names = _names(root, [CHECKPOINTS])
            steps += [[CHECKPOINTS, n] for n in names if ORBAX_TEMPORARY.fullmatch(n)]
            removed = _names(root, [CHECKPOINTS, ORBAX_REMOVED])
            steps += [[CHECKPOINTS, ORBAX_REMOVED, n] for n in removed if n.isdigit()]
        _refuse_strays(root, [p for p in steps if len(p) == 2 and p[1].isdigit()])
        for parts in steps:
            _remove_step(root, parts)
        _remove_empty(root, [CHECKPOINTS, ORBAX_REMOVED])
        by_folder: dict[tuple[str, ...], list[str]] = {}
        for entry in entries.files:
            folder, _, name = entry.rpartition("/")
            by_folder.setdefault(tuple(folder.split("/")) if folder else (), []).append(name)
        for place, names in by_folder.items():  # each folder listed once, not once a file
            _remove_files(root, place, names)
        for entry in sorted(entries.folders, key=lambda f: -f.count("/")):  # deepest first
            _remove_empty(root, entry.split("/"))
        _remove_file(root, [MANIFEST_FILE])
    finally:
        os.close(root)


def _refuse_strays(root: int, steps: Sequence[Sequence[str]]) -> None:
    """InTheWay, before anything is deleted, when a step folder holds a file that is not
    orbax's: kept, it would leave the folder behind, which orbax lists as a checkpoint."""
    for parts in steps:
        strays = sorted(set(_names(root, parts)) - {*STEP_FILES, *STEP_ITEMS})
        if strays:
            where = "/".join(parts)
            raise InTheWay(
                f"{where} holds {', '.join(strays[:3])}, which jaxzero did not write; left "
                f"there, it would keep {where} as a checkpoint: move it out of {where}"
            )


def _open_folder(root: int, parts: Sequence[str]) -> int | None:
    """A descriptor of the folder ``parts`` below ``root``, each step taken without
    following a symlink; None when there is no such folder."""
    fd = os.dup(root)
    try:
        for part in parts:
            below = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = below
    except OSError as error:
        os.close(fd)
        if error.errno in GONE:
            return None
        raise
    return fd


@contextlib.contextmanager
def _folder(root: int, parts: Sequence[str]) -> Iterator[int | None]:
    fd = _open_folder(root, parts)
    try:
        yield fd
    finally:
        if fd is not None:
            os.close(fd)


def _names(root: int, parts: Sequence[str]) -> list[str]:
    with _folder(root, parts) as fd:
        return [] if fd is None else os.listdir(fd)


def _kind(fd: int, name: str) -> int:
    """The file type bits of ``name`` in folder ``fd`` (its own: a symlink is a symlink);
    0 when absent."""
    try:
        return stat.S_IFMT(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
    except FileNotFoundError:
        return 0


def _is_file(root: int, parts: Sequence[str]) -> bool:
    with _folder(root, parts[:-1]) as fd:
        return fd is not None and _kind(fd, parts[-1]) == stat.S_IFREG


def _first_row(root: int, parts: Sequence[str]) -> bool:
    """Whether the file's first line is a metrics row of jaxzero's."""
    with _folder(root, parts[:-1]) as fd:
        if fd is None or _kind(fd, parts[-1]) != stat.S_IFREG:
            return False
        file = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
        try:
            line = os.read(file, 1 << 16).split(b"\n")[0]
        finally:
            os.close(file)
    try:
        row = json.loads(line)
    except (ValueError, RecursionError):  # [[[[... of a megabyte: no row of ours
        return False
    iteration = row.get("iteration") if isinstance(row, dict) else None
    return isinstance(iteration, int | float) and not isinstance(iteration, bool)


def _unlink_file(fd: int, name: str) -> None:
    if _kind(fd, name) == stat.S_IFREG:
        os.unlink(name, dir_fd=fd)


def _remove_file(root: int, parts: Sequence[str]) -> None:
    """The regular file ``parts``, and what a crashed atomic write of it left."""
    _remove_files(root, parts[:-1], [parts[-1]])


def _remove_files(root: int, parts: Sequence[str], names: Sequence[str]) -> None:
    """The regular files ``names`` in folder ``parts``, and what crashed atomic writes of
    them left (``.NAME.partial*``)."""
    with _folder(root, parts) as fd:
        if fd is None:
            return
        wanted = set(names)
        for name in os.listdir(fd):
            partial = name.startswith(".") and ".partial" in name
            if name in wanted or partial and name[1:].split(".partial")[0] in wanted:
                _unlink_file(fd, name)


def _remove_empty(root: int, parts: Sequence[str]) -> None:
    with _folder(root, parts[:-1]) as fd:
        if fd is not None and _kind(fd, parts[-1]) == stat.S_IFDIR:
            with contextlib.suppress(OSError):  # not empty: it holds someone's files
                os.rmdir(parts[-1], dir_fd=fd)


def _remove_step(root: int, parts: Sequence[str]) -> None:
    """Of checkpoint step ``parts``, what orbax wrote (module doc); then the step folder
    itself when that leaves it empty."""
    with _folder(root, parts) as fd:
        if fd is None:
            return
        for name in STEP_FILES:
            _unlink_file(fd, name)
        for item in STEP_ITEMS:
            _remove_leaf(fd, item)
    _remove_empty(root, parts)


def _remove_leaf(fd: int, name: str) -> None:
    """A folder orbax filled whole: its regular files and then its emptied folders; a
    symlink is neither followed nor removed."""
    if _kind(fd, name) != stat.S_IFDIR:
        return
    for _, dirs, files, below in os.fwalk(name, dir_fd=fd, topdown=False):
        for file in files:
            _unlink_file(below, file)
        for folder in dirs:
            with contextlib.suppress(OSError):
                os.rmdir(folder, dir_fd=below)
    with contextlib.suppress(OSError):
        os.rmdir(name, dir_fd=fd)
