"""Ctrl-C and SIGTERM on the command line, outside a run's training loop: one line, exit
130 or 143 at once, and no half-made run folder left behind.

Python runs a signal handler only between bytecodes of the main thread, so a signal that
lands while the main thread is inside a long C call (importing JAX, XLA compiling) waits
for it to return; and raised there as KeyboardInterrupt, it can crash the interpreter on
its way out. So the command line's handlers do nothing themselves: every signal also wakes
a watcher thread (``signal.set_wakeup_fd``), which says what happened, removes each run
folder this process created and never checkpointed (:func:`created`), and ends the
process (``os._exit``: nothing of a half-done compile is left to tear down).

While the training loop runs it takes the first signal itself
(``jaxzero.run.life.driver.Interrupt``: stop after the iteration, checkpoint saved);
:func:`loop_takes_signals` marks that stretch, during which the watcher lets the loop's
handler act on the first signal and ends the process itself on the second (or third...),
at whatever moment it comes. A signal belongs to the loop if its handler took it
(:func:`claim`), however late the watcher reads its byte: on a loaded machine the watcher
may read it only after the loop has ended and while the checkpoint is being saved, and it
must not then end the process and remove the unsaved run. The loop must
not raise there: a KeyboardInterrupt raised in the middle of the first compile left XLA
half-built, and the interpreter's teardown then crashed on it (exit 139 after "checkpoint
saved", every time); ``os._exit`` tears nothing down.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

from jaxzero.run.folder.layout import CHECKPOINT_DIR

_created: list[Path] = []  # run folders this process made (removed if never checkpointed)
_loop = threading.Event()  # set while the training loop takes the signals itself
_installed = threading.Event()
_loop_signals: list[int] = []  # the signals the watcher saw while the loop took them
_claimed: list[int] = []  # the signals the loop's own handler took (main thread)
STOPPING = "{}: stopping after this iteration (again: stop at once, unsaved)\n"


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
    atexit.register(_ignore_in_teardown)  # registered first: runs after every other
    _installed.set()


def installed() -> bool:
    """Whether this process's signals go through the watcher (the command line)."""
    return _installed.is_set()


def created(run_dir: Path) -> None:
    """``run_dir`` was created by this process: an interrupt before its first checkpoint
    removes it, so that the same command can start it again."""
    _created.append(Path(run_dir))


@contextlib.contextmanager
def loop_takes_signals() -> Iterator[None]:
    """The stretch during which the training loop's own handlers act on signals."""
    _loop_signals.clear()
    _claimed.clear()
    _loop.set()
    try:
        yield
    finally:
        _loop.clear()


def claim(signum: int) -> None:
    """The training loop's handler took ``signum`` (called from it, in the main thread):
    the watcher counts it as the loop's even when it reads its byte after the loop."""
    _claimed.append(signum)


def taken() -> list[int]:
    """The signals the watcher took while :func:`loop_takes_signals` was on (the command
    line's; empty elsewhere)."""
    return list(_loop_signals)


def _ignore_in_teardown() -> None:
    """After the last atexit hook the interpreter resets its handlers to the default, and
    a signal in the rest of its teardown killed the process (rc -2, no line): ignored
    there instead, the process ends with the code it was ending with (130 when
    interrupted). Nothing is left to do by then but free memory."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(ValueError, OSError):
            signal.signal(sig, signal.SIG_IGN)


def _wake_only(signum: int, frame: object) -> None:
    """The Python-level handler: nothing (the wakeup byte reaches the watcher)."""


def _watch(read: int) -> None:
    while True:
        for signum in os.read(read, 64):
            if not _loop.is_set() and len(_claimed) <= len(_loop_signals):
                _exit(signum)  # a signal outside the loop that its handler did not take
            _loop_signals.append(signum)
            if len(_loop_signals) > 1:  # the loop's handler took the first: this one is ours
                _exit(signum, again=True)
            with contextlib.suppress(OSError):  # at once, even while the main thread compiles
                os.write(2, STOPPING.format(signal.Signals(signum).name).encode())


def _exit(signum: int, again: bool = False) -> None:
    _flush()
    removed = [str(run) for run in _created if _remove_unsaved(run)]
    what = f"; removed {', '.join(removed)}, which it had created" if removed else ""
    how = " again: stopped at once" if again else ""
    line = f"error: interrupted by {signal.Signals(signum).name}{how}{what}\n"
    with contextlib.suppress(OSError):
        os.write(2, line.encode())
    os._exit(128 + signum)


def _flush() -> None:
    """What the main thread printed so far, written out before ``os._exit`` (from a thread
    of its own, given a second: the main thread might hold a stream's lock)."""

    def flush() -> None:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()

    flushing = threading.Thread(target=flush, daemon=True)
    flushing.start()
    flushing.join(1.0)


def _remove_unsaved(run_dir: Path, tries: int = 5) -> bool:
    """Remove ``run_dir`` if it holds no checkpoint; whether it did.

    The main thread goes on while this runs, and may be making the run's folders just
    then (``checkpoints/`` right after ``config.json``): a folder made while ``rmtree``
    listed leaves ``run_dir`` not empty, its last ``rmdir`` failing. So removed again
    until gone (the main thread makes a handful of folders, then compiles)."""
    folder = run_dir / CHECKPOINT_DIR
    if folder.is_dir() and any(p.name.isdigit() for p in folder.iterdir()):
        return False
    for _ in range(tries):
        shutil.rmtree(run_dir, ignore_errors=True)
        if not run_dir.exists():
            break
    return True
