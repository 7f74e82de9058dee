"""The environment of a benchmark's child process: the caller's own, with this repository
first on PYTHONPATH and the caller's PYTHONPATH entries after it, so that packages found
through PYTHONPATH (a ``pip install --target DIR`` folder) are found by the child too."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def child_env(**changes: str) -> dict[str, str]:
    """``os.environ`` with the repository first on PYTHONPATH, then the caller's entries.

    Args:
        **changes: further variables to set (or replace) in the child's environment.

    Returns:
        A new environment dict; ``os.environ`` is left as it is.
    """
    caller = [entry for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry]
    path = os.pathsep.join(dict.fromkeys([str(ROOT), *caller]))  # each entry once, repo first
    return {**os.environ, "PYTHONPATH": path, **changes}
