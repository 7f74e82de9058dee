"""Reading a file of a run or agent folder that someone else may have made: bounded, regular.

    read_bytes(folder / "config.json", folder, SMALL)     # the bytes, or FileRefused
    for number, line in read_lines(run_dir / "metrics.jsonl", run_dir): ...

A folder jaxzero is given (a colleague's run, a downloaded agent) may hold a FIFO, a device,
a symlink to ``/dev/zero`` or a sparse file of a terabyte where jaxzero expects its own
JSON. Reading one would hang or exhaust memory, so every read of such a folder's files goes
through here and refuses, in one line naming the file, what is not

* a regular file: a FIFO, device, socket or folder is refused without blocking (opened with
  ``O_NONBLOCK``, checked with ``fstat`` before a byte is read);
* inside its folder: a symlink is followed only when it resolves inside the folder (a folder
  copied with relative links keeps working; the target passes the same checks); one leading
  out of it (``/dev/zero``, ``~/.ssh/...``) is refused;
* under its size cap: :data:`SMALL` for the JSON files jaxzero writes (config.json,
  agent.json, population.json, checksum listings), :data:`ELO` for elo.json, the network's
  own size for params.msgpack (the caller knows it); metrics.jsonl is read line by line,
  each line under :data:`LINE`, never whole, the file under :data:`METRICS`.

A file missing or unreadable for the operating system's reasons raises OSError as before;
FileRefused is a ValueError, which the readers already turn into their one-line errors.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

MB = 1 << 20
SMALL = MB  # config.json, agent.json, population.json, checksums: a few kB when jaxzero writes them
ELO = 16 * MB  # elo.json: a row per rated checkpoint
LINE = MB  # a metrics.jsonl row: a few kB when jaxzero writes it
LISTING = 16 * MB  # a checkpoint's checksums.sha256: a line per file of the step
METRICS = 512 * MB  # metrics.jsonl: 150 MB after 100,000 iterations logged every one

_KINDS = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a folder",
}


class FileRefused(ValueError):
    """A file of a run or agent folder that jaxzero will not read; the message names it and
    says what is wrong."""


def open_regular(path: Path, folder: Path) -> io.BufferedReader:
    """``path`` opened for reading, checked to be a regular file inside ``folder``.

    Args:
        path: the file, under ``folder``.
        folder: the run or agent folder it belongs to; a symlink may not lead out of it.

    Returns:
        The open file (binary); the caller closes it.

    Raises:
        FileRefused: a symlink leading out of ``folder``, or not a regular file.
        OSError: the file cannot be opened (missing, permission denied).
    """
    real = _check_inside(path, folder)
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    descriptor = os.open(real, flags)  # O_NONBLOCK: a FIFO opens at once, then is refused
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            raise FileRefused(_not_regular(path, mode))
        return open(descriptor, "rb")  # noqa: SIM115 (the caller closes it)
    except BaseException:
        os.close(descriptor)
        raise


def _check_inside(path: Path, folder: Path) -> str:
    """``path`` resolved (symlinks followed), FileRefused unless it lies inside ``folder``."""
    real = os.path.realpath(path)
    home = os.path.realpath(folder)
    if real != home and not real.startswith(home.rstrip(os.sep) + os.sep):
        raise FileRefused(
            f"{path} is a symlink to {real}, outside {folder} (jaxzero reads only files "
            "inside the folder)"
        )
    return real


def _not_regular(path: Path, mode: int) -> str:
    return f"{path} is {_KINDS.get(stat.S_IFMT(mode), 'no regular file')}, not a regular file"


def read_bytes(path: Path, folder: Path, limit: int) -> bytes:
    """The bytes of ``path``, a regular file inside ``folder`` of at most ``limit`` bytes.

    Args:
        path: the file.
        folder: the run or agent folder it belongs to.
        limit: the most bytes the file may hold.

    Returns:
        Its bytes.

    Raises:
        FileRefused: see :func:`open_regular`, or the file holds more than ``limit`` bytes.
        OSError: the file cannot be read.
    """
    with open_regular(path, folder) as file:
        size = os.fstat(file.fileno()).st_size
        data = file.read(limit + 1) if size <= limit else b""  # it may grow meanwhile
    _check_size(path, max(size, len(data)), limit)
    return data


def _check_size(path: Path, size: int, limit: int) -> None:
    if size > limit:
        raise FileRefused(f"{path} holds {size:,} bytes, more than the {limit:,} it may hold")


def read_text(path: Path, folder: Path, limit: int = SMALL) -> str:
    """:func:`read_bytes` as UTF-8 text (UnicodeDecodeError, a ValueError, if it is not)."""
    return read_bytes(path, folder, limit).decode("utf-8")


def read_json(path: Path, folder: Path, limit: int = SMALL) -> Any:
    """The JSON in ``path`` (:func:`read_text`); FileRefused when it nests too deeply for
    Python's parser (``[[[[...`` of a megabyte), ValueError when it is no JSON."""
    text = read_text(path, folder, limit)
    try:
        return json.loads(text)
    except RecursionError:
        raise FileRefused(f"{path} nests its JSON deeper than Python can parse") from None


def read_lines(
    path: Path, folder: Path, limit: int = LINE, total: int = METRICS
) -> Iterator[tuple[int, bytes | None]]:
    """(line number from 1, the line without its end) of ``path``, a regular file inside
    ``folder`` of at most ``total`` bytes, one at a time: memory holds one line, never the
    file. A line longer than ``limit`` bytes comes as None (read past in bounded pieces),
    for the caller to skip.

    Args:
        path: the file.
        folder: the run folder it belongs to.
        limit: the most bytes a line may hold.
        total: the most bytes the file may hold.

    Returns:
        An iterator of (number, line or None).

    Raises:
        FileRefused: see :func:`open_regular`, or the file holds more than ``total`` bytes.
        OSError: the file cannot be read.
    """
    with open_regular(path, folder) as file:
        _check_size(path, os.fstat(file.fileno()).st_size, total)
        number = 0
        while line := file.readline(limit + 1):
            number += 1
            if len(line) > limit and not line.endswith(b"\n"):
                while (rest := file.readline(limit)) and not rest.endswith(b"\n"):
                    pass  # the rest of the overlong line, a piece at a time
                yield number, None
            else:
                yield number, line.rstrip(b"\r\n")


def odd_entry(folder: Path, *, top_only: bool = False) -> str | None:
    """The first entry under ``folder`` (walked without following symlinks; its own
    entries alone with ``top_only``) that is neither a folder nor a regular file inside it,
    said in words; None when there is none. For folders a library reads after us (orbax's
    checkpoint steps): refused before it opens one.
    """
    for root, folders, files in os.walk(folder):
        if top_only and Path(root) != folder:
            break
        for name in sorted(folders + files):
            path = Path(root) / name
            try:
                _check_inside(path, folder)
                mode = os.stat(path).st_mode  # the target of a symlink inside
            except FileRefused as error:
                return str(error)
            except OSError:
                continue  # gone meanwhile, or unreadable: the checksums or orbax say so
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                return _not_regular(path, mode)
    return None


def sha256_inside(path: Path, folder: Path, limit: int | None = None) -> str:
    """The sha256 (hex) of ``path``, a regular file inside ``folder`` (of at most ``limit``
    bytes, when given: checked before a byte is hashed), read a megabyte at a time
    (FileRefused, OSError as :func:`open_regular`)."""
    digest = hashlib.sha256()
    with open_regular(path, folder) as file:
        if limit is not None:
            _check_size(path, os.fstat(file.fileno()).st_size, limit)
        while block := file.read(MB):
            digest.update(block)
    return digest.hexdigest()
