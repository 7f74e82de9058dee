"""Every path jaxzero creates, writes or deletes below a folder it was given, and the one
rule for them all: no step below the folder goes through a symbolic link.

    write_atomic(run_dir, run_dir / "config.json", text)     # the old file or the whole new one
    with open_append(run_dir, run_dir / "metrics.jsonl") as file: ...
    make_folders(run_dir, run_dir / "members" / "3")         # [the folders made]
    check(run_dir, run_dir / "checkpoints")                  # before a library writes there

The folder itself, as typed (``--out runs/x``, ``jaxzero report RUN``), is the user's choice
and may be a link. Everything below it is reached one step at a time from the folder's
descriptor, each folder opened with ``O_NOFOLLOW`` relative to its parent's, and each file
created with ``O_NOFOLLOW`` (exclusively where a new file is meant), so a link planted where
jaxzero expects its own file or folder (``RUN/.lock -> ~/thesis.txt``, ``checkpoints ->
~/photos``, ``arms/kind-gumbel -> ../../myrun``, a dangling ``metrics.jsonl``) is refused
in one line naming it (:class:`LinkRefused`), and nothing is written. Where a library
writes by path (orbax, TensorBoard), its folder is checked here first, made by jaxzero
(``make_folders``), and whatever it writes lands inside.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from jaxzero.run.folder.files import FileProblem, json_text, os_reason

DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class LinkRefused(FileProblem):
    """A symbolic link stands where jaxzero would write its own file or folder."""


def parts_below(root: Path, path: Path) -> tuple[str, ...]:
    """The names leading from ``root`` to ``path`` (``()`` for the root itself); ValueError
    when ``path`` is not below ``root`` or climbs with ``..``."""
    root, path = Path(root), Path(path)
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        parts = Path(os.path.abspath(path)).relative_to(os.path.abspath(root)).parts
    if ".." in parts:
        raise ValueError(f"{path} is not inside {root}")
    return parts


def _refused(root: Path, parts: tuple[str, ...], what: str = "") -> LinkRefused:
    path = Path(root, *parts)
    try:
        target = f" (to {os.readlink(path)})"
    except OSError:
        target = ""
    return LinkRefused(
        f"{path} is a symbolic link{target}, and jaxzero {what or 'writes'} nothing through a "
        f"link below {root}: nothing was written; remove the link, or use another folder"
    )


def _is_link(fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


@contextlib.contextmanager
def opened(root: Path, folder: Path, *, make: bool = False) -> Iterator[int]:
    """A descriptor of ``folder`` (``root`` or below it), reached from ``root`` one step at
    a time without following a link; with ``make``, each missing step is made (mode 0o777
    less the umask). LinkRefused at a link, OSError (FileNotFoundError...) otherwise."""
    parts = parts_below(root, folder)
    if make:
        with contextlib.suppress(FileExistsError):
            os.makedirs(root)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)  # the root as typed
    try:
        for depth, part in enumerate(parts):
            if make:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, dir_fd=fd)
            try:
                below = os.open(part, DIRECTORY, dir_fd=fd)
            except OSError as error:
                if error.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(fd, part):
                    raise _refused(root, parts[: depth + 1]) from None
                raise
            os.close(fd)
            fd = below
        yield fd
    finally:
        os.close(fd)


def check(root: Path, path: Path) -> None:
    """LinkRefused when a step from ``root`` to ``path`` (``path`` included) is a link;
    steps that do not exist yet are fine (jaxzero makes them)."""
    parts = parts_below(root, path)
    try:
        with opened(root, Path(root, *parts[:-1])) as fd:
            if parts and _is_link(fd, parts[-1]):
                raise _refused(root, parts)
    except (FileNotFoundError, NotADirectoryError):
        return  # nothing there yet (or a file in the way, which the write itself names)


def make_folders(root: Path, folder: Path) -> list[Path]:
    """``folder`` and its missing parents below ``root`` made without following a link;
    the folders made, outermost first (for the run's manifest)."""
    parts = parts_below(root, folder)
    made = []
    missing = False
    for depth in range(len(parts)):
        here = Path(root, *parts[: depth + 1])
        missing = missing or not os.path.lexists(here)
        if missing:
            made.append(here)
    with opened(root, folder, make=True):
        pass
    return made


def _create(fd: int, name: str, flags: int) -> int:
    """``name`` in folder ``fd`` opened with ``flags`` (never through a link)."""
    return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666, dir_fd=fd)


def _file_in(root: Path, path: Path) -> tuple[Path, str]:
    parts = parts_below(root, path)
    if not parts:
        raise ValueError(f"{path} is the folder {root} itself, not a file in it")
    return Path(root, *parts[:-1]), parts[-1]


def write_atomic(
    root: Path, path: Path, data: str | bytes, *, before: Callable[[], object] | None = None
) -> None:
    """Replace ``path`` (below ``root``, its folder made) by ``data`` all at once: a crash or
    a full disk leaves the old file (or none), never half of the new one. LinkRefused when
    ``path`` or a folder on its way is a link. ``before`` runs once the new file is whole
    on disk, before it takes ``path``'s place (to move the old one aside)."""
    folder, name = _file_in(root, path)
    with opened(root, folder, make=True) as fd:
        if _is_link(fd, name):
            raise _refused(root, parts_below(root, path))
        partial = f".{name}.partial-{os.getpid()}"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(partial, dir_fd=fd)  # a crashed write of this process id's
        out = _create(fd, partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        try:
            with open(out, "wb", closefd=True) as file:
                file.write(data.encode() if isinstance(data, str) else data)
            if before is not None:
                before()
            os.replace(partial, name, src_dir_fd=fd, dst_dir_fd=fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(partial, dir_fd=fd)
            raise


def write_json(root: Path, path: Path, data: object) -> None:
    """:func:`write_atomic` of ``data`` as strict JSON
    (:func:`jaxzero.run.folder.files.json_text`)."""
    write_atomic(root, path, json_text(data, path))


def _open_regular(root: Path, path: Path, flags: int) -> int:
    """A descriptor of the regular file ``path`` below ``root`` opened with ``flags`` (and
    ``O_CREAT``), never through a link, not even a dangling one (LinkRefused); FileProblem
    when it is no regular file (a FIFO is not waited on)."""
    folder, name = _file_in(root, path)
    with opened(root, folder, make=True) as fd:
        try:
            out = _create(fd, name, flags | os.O_CREAT | os.O_NONBLOCK)
        except OSError as error:
            if error.errno == errno.ELOOP and _is_link(fd, name):
                raise _refused(root, parts_below(root, path)) from None
            raise
    if not stat.S_ISREG(os.fstat(out).st_mode):
        os.close(out)
        raise FileProblem(f"{path} is not a regular file: move it away")
    os.set_blocking(out, True)
    return out


def open_append(root: Path, path: Path) -> IO[str]:
    """``path`` (below ``root``) opened to append text, created when missing
    (:func:`_open_regular`'s refusals)."""
    out = _open_regular(root, path, os.O_WRONLY | os.O_APPEND)
    return open(out, "a", encoding="utf-8", closefd=True)


def open_lock(root: Path, path: Path) -> IO[bytes]:
    """``path`` (below ``root``) opened to read and write, created when missing
    (:func:`_open_regular`'s refusals), unbuffered: a lock file, its content the holder's
    pid."""
    return io.FileIO(_open_regular(root, path, os.O_RDWR), "r+", closefd=True)


def links_below(root: Path, folder: Path, *, depth: int = 1) -> str | None:
    """The first link at ``folder`` (below ``root``) or among its entries ``depth`` levels
    down, said in words as LinkRefused says it; None when there is none. For a folder a
    library writes and deletes in by path (orbax's ``checkpoints/``)."""
    try:
        check(root, folder)
        with opened(root, folder) as fd:
            return _link_among(root, parts_below(root, folder), fd, depth)
    except LinkRefused as error:
        return str(error)
    except (FileNotFoundError, NotADirectoryError):
        return None


def _link_among(root: Path, parts: tuple[str, ...], fd: int, depth: int) -> str | None:
    if depth <= 0:
        return None
    for name in sorted(os.listdir(fd)):
        mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
        if stat.S_ISLNK(mode):
            return str(_refused(root, (*parts, name)))
        if stat.S_ISDIR(mode):
            below = os.open(name, DIRECTORY, dir_fd=fd)
            try:
                found = _link_among(root, (*parts, name), below, depth - 1)
            finally:
                os.close(below)
            if found:
                return found
    return None


def check_writable(root: Path, folder: Path, what: str) -> None:
    """FileProblem unless files can be created in ``folder`` (below ``root``, made if
    missing, never through a link): said now, not after an hour of training."""
    probe = f".write-test-{os.getpid()}"
    try:
        with opened(root, folder, make=True) as fd:
            os.close(_create(fd, probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL))
            os.unlink(probe, dir_fd=fd)
    except LinkRefused:
        raise
    except OSError as error:
        raise FileProblem(f"cannot write {what} in {folder}: {os_reason(error)}") from None


def write_figure(root: Path, path: Path, figure: object, **options: object) -> None:
    """A matplotlib figure saved as ``path`` (below ``root``; the format its suffix) through
    :func:`write_atomic`: matplotlib itself would open the path, links and all."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format=Path(path).suffix.lstrip("."), **options)  # type: ignore[attr-defined]
    write_atomic(root, path, buffer.getvalue())
