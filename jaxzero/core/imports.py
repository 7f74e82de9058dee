"""Import paths: how a run names a user's class or function (``"module:attribute"``), so
that a later process (``load_agent``, ``jaxzero play``) can rebuild it.

    import_path(my_rule)              # "myrules:ucb1"
    load("myrules:ucb1", "search.interior_selection")   # the function again

One loader reads them all, games included: :func:`envs.registry.load_path`.
"""

from __future__ import annotations

import functools
from typing import Any

from envs.registry import load_path, module_name


def is_import_path(text: str) -> bool:
    """Whether ``text`` has the form ``module:attribute``."""
    module, sep, attribute = text.partition(":")
    return bool(sep and module and attribute)


def import_path(obj: Any) -> str:
    """The ``"module:qualified.name"`` of a class or function.

    Args:
        obj: a class, a function, or an instance (its class is named).

    Returns:
        The path :func:`load` resolves. A lambda, a partial or a local function gets a
        path with ``<...>`` in it, which :func:`load` refuses with the reason.
    """
    if isinstance(obj, functools.partial):  # no name of its own to import it by
        return f"{module_name(obj.func)}:<partial of {obj.func.__qualname__}>"
    if not hasattr(obj, "__qualname__"):
        obj = type(obj)
    return f"{module_name(obj)}:{obj.__qualname__}"  # a script's: its file's name


def load(path: str, what: str) -> Any:
    """The object an import path names (``envs.registry.load_path``, the one loader).

    Args:
        path: ``"module:attribute"``, the attribute possibly dotted (``"mod:Class.rule"``).
        what: what the path is for, named in errors (e.g. ``"search.interior_selection"``).

    Returns:
        The object.

    Raises:
        ValueError: one line saying why it cannot be loaded and what to do.
    """
    return load_path(path, what)
