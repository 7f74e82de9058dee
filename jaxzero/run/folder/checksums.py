"""Checksums of a checkpoint step: beside each finished step,
``checkpoints/N/checksums.sha256`` (``sha256sum`` format) holds the hash of every file
orbax wrote; every load checks it, so damaged bytes are refused instead of played with."""

from __future__ import annotations

from pathlib import Path

from jaxzero.run.folder.files import sha256
from jaxzero.run.folder.layout import CHECKSUMS
from jaxzero.run.folder.nolink import write_atomic
from jaxzero.run.folder.reads import LISTING, FileRefused, odd_entry, read_bytes, sha256_inside


def _file_hashes(folder: Path, skip: str = "") -> dict[str, str]:
    """sha256 of every file under ``folder`` but the checksum file (and those under its
    subfolder ``skip``), by relative path."""
    hashes = {}
    found = (p for p in folder.rglob("*") if p.is_file() and p.name != CHECKSUMS)
    for path in sorted(p for p in found if p.relative_to(folder).parts[0] != skip):
        hashes[path.relative_to(folder).as_posix()] = sha256(path)
    return hashes


def write_checksums(root: Path, folder: Path, skip: str = "") -> None:
    """``folder/checksums.sha256`` for a finished checkpoint step (``sha256sum -c`` reads
    it), never through a link below ``root`` (the run's ``checkpoints/``); ``skip``: a
    subfolder left out (one about to be deleted)."""
    lines = "".join(f"{h}  {name}\n" for name, h in _file_hashes(folder, skip).items())
    write_atomic(root, folder / CHECKSUMS, lines)


def damaged_file(folder: Path, most_bytes: int | None = None) -> str | None:
    """What is wrong with checkpoint ``folder``, in words ("NAME does not match its
    checksum", "NAME is missing", "PATH is a FIFO, not a regular file"), None when nothing.
    Every entry must be a folder or a regular file inside it (:func:`odd_entry`: checked
    before orbax opens one). A step without checksums (written by an older jaxzero, or
    killed between orbax's commit and the checksums) counts as intact. With
    ``most_bytes``, a step whose files hold more is damaged before a byte is hashed (a
    sparse file of a terabyte would take an hour to hash)."""
    odd = odd_entry(folder)
    if odd is not None:
        return odd
    if most_bytes is not None:
        held = sum(p.lstat().st_size for p in folder.rglob("*") if p.is_file())
        if held > most_bytes:
            return (
                f"its files hold {held:,} bytes, more than the {most_bytes:,} a checkpoint of "
                "this run holds"
            )
    try:  # a listing names every file of the step: a few kB
        text = read_bytes(folder / CHECKSUMS, folder, LISTING).decode(errors="replace")
    except FileNotFoundError:
        return None
    except FileRefused as error:
        return str(error)
    expected = {}
    for line in text.splitlines():
        digest, _, name = line.partition("  ")
        expected[name] = digest
    for name, digest in expected.items():  # only those listed: others may come and go
        try:
            if sha256_inside(folder / name, folder, most_bytes) != digest:
                return f"{name} does not match its checksum"
        except FileRefused as error:
            return f"{name} is missing" if (folder / name).is_dir() else str(error)
        except FileNotFoundError:
            return f"{name} is missing"
    return None
