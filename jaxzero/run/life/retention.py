"""Which checkpoints a run keeps, and how a reader of a run still training keeps the one
it reads from going.

The newest ``max_to_keep`` checkpoints hold the whole state. One kept only because its
step is a multiple of ``train.keep_every`` (history, for Elo curves) keeps only what
plays: its ``state`` is deleted once newer checkpoints push it out of the newest
(:func:`lighten_history`), so a long run's history costs networks, not replay buffers.

Retention removes a step in one rename (into ``checkpoints/.removed``, emptied after
each save), so a reader finds a step whole or gone. A reader holds a shared lock on the
step's folder (:func:`hold`); retention keeps a held step until a later save, and locks
each step it lets go until orbax has moved it out, so that no reader starts on it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jaxzero.core import sharding
from jaxzero.run.folder.checksums import damaged_file, write_checksums
from jaxzero.run.folder.stored_state import AGENT_ITEM, STATE_ITEM

# Where retention moves a step it deletes (an atomic rename: a reader of a live run finds
# a step whole or not at all), emptied after every save.
REMOVED = ".removed"


@dataclasses.dataclass
class Retention:
    """Which checkpoints a run keeps (an orbax preservation policy): the newest
    ``max_to_keep`` and every multiple of ``keep_every``; of the others, one a reader
    holds (:func:`hold`) stays until a later save. Each one let go is locked until
    :meth:`release`, after orbax has moved it out, so that no reader starts on it
    meanwhile."""

    directory: Path
    max_to_keep: int
    keep_every: int
    held: list[int] = dataclasses.field(default_factory=list)  # folders locked to go

    def should_preserve(self, checkpoints: Sequence[Any], *, context: Any) -> list[bool]:
        """Orbax's question: which of ``checkpoints`` (oldest first) to keep."""
        newest = len(checkpoints) - self.max_to_keep
        kept = [
            i >= newest or bool(self.keep_every) and info.step % self.keep_every == 0
            for i, info in enumerate(checkpoints)
        ]
        if not sharding.is_main_process():  # the one that deletes decides
            return kept
        return [kept[i] or self._being_read(info.step) for i, info in enumerate(checkpoints)]

    def _being_read(self, step: int) -> bool:
        """Whether a reader holds checkpoint ``step``; if not, it is locked to go."""
        try:
            folder = os.open(self.directory / str(step), os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            return False
        try:
            fcntl.flock(folder, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:  # held by a reader, or no locks on this storage
            os.close(folder)
            return isinstance(error, BlockingIOError)
        self.held.append(folder)
        return False

    def release(self) -> None:
        """Unlock the checkpoints let go (once orbax has moved them out)."""
        release(self.held)


def hold(folder: Path, holding: list[int]) -> bool:
    """Keep the step ``folder`` from a run's retention until :func:`release` of
    ``holding``: a shared lock on it, which :class:`Retention` honours. False when the
    folder is gone or retention is moving it out right now; storage without locks reads
    it unheld (True)."""
    try:
        descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except FileNotFoundError:
        return False
    holding.append(descriptor)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:  # retention is moving it out right now
        return False
    except OSError:
        pass  # no locks on this storage
    return True


def release(descriptors: list[int]) -> None:
    """Close the folders of ``descriptors`` (their locks go with them), and forget them."""
    for descriptor in descriptors:
        with contextlib.suppress(OSError):
            os.close(descriptor)
    descriptors.clear()


def empty_removed(directory: Path) -> None:
    """Delete the steps retention moved into ``directory/REMOVED`` (out of every reader's
    sight)."""
    if sharding.is_main_process():
        shutil.rmtree(directory / REMOVED, ignore_errors=True)


def lighten_history(directory: Path, history: Sequence[int]) -> None:
    """Drop the state of every checkpoint of ``history`` (those older than the newest
    ``max_to_keep``) that holds its agent beside it (kept by ``keep_every``): checksums
    first, without it, so that a crash in between leaves an intact checkpoint either
    way. A damaged one is left as it is (its damage stays detectable)."""
    for step in history:
        folder = directory / str(step)
        if not (folder / STATE_ITEM).exists() or not (folder / AGENT_ITEM).exists():
            continue
        if damaged_file(folder) is None:
            try:
                write_checksums(directory, folder, skip=STATE_ITEM)
            except OSError:
                continue  # kept whole; the next save tries again
            shutil.rmtree(folder / STATE_ITEM, ignore_errors=True)
