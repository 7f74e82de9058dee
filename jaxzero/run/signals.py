"""Ctrl-C and SIGTERM on the command line, outside a run's training loop: one line, exit
130 or 143 at once, and no half-made run folder left behind.

Python runs a signal handler only between bytecodes of the main thread, so a signal that
lands while the main thread is inside a long C call (importing JAX, XLA compiling) waits
for it to return; and raised there as KeyboardInterrupt, it can crash the interpreter on
its way out. So the command line's handlers do nothing themselves: every signal also wakes
a watcher thread (``signal.set_wakeup_fd``), which says what happened, removes each run
folder this process created and never checkpointed (:func:`created`), and ends the
process (``os._exit``: nothing of a half-done compile is left to tear down).

While the training loop runs it takes the signals itself (``jaxzero.run.driver.Interrupt``:
stop after the iteration, checkpoint saved); :func:`loop_takes_signals` marks that
stretch, during which the watcher lets the loop's handler act.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

_created: list[Path] = []  # run folders this process made (removed if never checkpointed)
_loop = threading.Event()  # set while the training loop takes the signals itself
_installed = threading.Event()


def install() -> None:
    """Handle SIGINT and SIGTERM as this module says, from now on (the command line's
    first line; a no-op outside the main thread or when installed already)."""
    if _installed.is_set() or threading.current_thread() is not threading.main_thread():
        return
    read, write = os.pipe()
    os.set_blocking(write, False)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _wake_only)
    signal.set_wakeup_fd(write, warn_on_full_buffer=False)
    threading.Thread(target=_watch, args=(read,), name="jaxzero-signals", daemon=True).start()
    _installed.set()


def created(run_dir: Path) -> None:
    """``run_dir`` was created by this process: an interrupt before its first checkpoint
    removes it, so that the same command can start it again."""
    _created.append(Path(run_dir))


@contextlib.contextmanager
def loop_takes_signals() -> Iterator[None]:
    """The stretch during which the training loop's own handlers act on signals."""
    _loop.set()
    try:
        yield
    finally:
        _loop.clear()


def _wake_only(signum: int, frame: object) -> None:
    """The Python-level handler: nothing (the wakeup byte reaches the watcher)."""


def _watch(read: int) -> None:
    while True:
        for signum in os.read(read, 64):
            if not _loop.is_set():
                _exit(signum)


def _exit(signum: int) -> None:
    removed = [str(run) for run in _created if _remove_unsaved(run)]
    what = f"; removed {', '.join(removed)}, which it had created" if removed else ""
    line = f"error: interrupted by {signal.Signals(signum).name}{what}\n"
    with contextlib.suppress(OSError):
        os.write(2, line.encode())
    os._exit(128 + signum)


def _remove_unsaved(run_dir: Path) -> bool:
    """Remove ``run_dir`` if it holds no checkpoint; whether it did."""
    folder = run_dir / "checkpoints"
    if folder.is_dir() and any(p.name.isdigit() for p in folder.iterdir()):
        return False
    shutil.rmtree(run_dir, ignore_errors=True)
    return True
