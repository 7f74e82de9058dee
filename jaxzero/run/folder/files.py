"""Why a file of a run could not be written, in one line; JSON as jaxzero writes it.

os_reason(error)        # "No space left on device; the disk is full: free some space"
json_text(data, path)   # strict JSON, a NaN refused naming the file

Writing itself goes through :mod:`jaxzero.run.folder`, which refuses links.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import json
import os
import re
from pathlib import Path

ADVICE = {
    errno.ENOSPC: "the disk is full: free some space",
    errno.EDQUOT: "the disk quota is used up: free some space",
    errno.EROFS: "the file system is read-only: make it writable or use another directory",
    errno.EACCES: "permission denied: make it writable or use another directory",
    errno.EPERM: "permission denied: make it writable or use another directory",
    errno.ENOTDIR: "a file stands where a folder belongs: move that file away",
    errno.EEXIST: "a file stands where a folder belongs: move that file away",
}


class FileProblem(RuntimeError):
    """A file of a run cannot be written; the message says why and what to do."""


def _errno(error: BaseException | None) -> tuple[int | None, str]:
    """(errno, file) at the root of ``error``: an OSError's, or the code tensorstore
    writes into its message (``[os_error_code='28']``); (None, '') when none is found."""
    while error is not None:
        if isinstance(error, OSError) and error.errno is not None:
            return error.errno, str(error.filename or "")
        found = re.search(r"os_error_code='?(\d+)", str(error))
        if found:
            path = re.search(r'file "([^"]+)"', str(error))
            return int(found.group(1)), path.group(1) if path else ""
        error = error.__cause__ or error.__context__
    return None, ""


def os_reason(error: BaseException) -> str:
    """One line on why a file operation failed, with what usually fixes it."""
    code, filename = _errno(error)
    if code is None:
        text = str(error).strip().splitlines()
        return text[0][:200] if text else type(error).__name__
    where = f" ({filename})" if filename else ""
    return f"{os.strerror(code)}{where}; {ADVICE.get(code, 'check the disk')}"


def json_text(data: object, path: Path) -> str:
    """``data`` as strict JSON (indented, a final newline), for ``path``: a NaN or
    infinite number has no JSON spelling (Python writes ``Infinity``, which no other
    reader takes), so it is refused, in one line naming the file."""
    try:
        return json.dumps(data, indent=2, allow_nan=False) + "\n"
    except ValueError:
        raise ValueError(
            f"{path.name} would hold a NaN or infinite number, which JSON cannot hold: "
            "check the settings written there (every value must be finite)"
        ) from None


def sha256(path: Path) -> str:
    """The sha256 of ``path``'s bytes (hex), read a megabyte at a time."""
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(functools.partial(file.read, 1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
