"""Import paths: how a run names a user's class or function (``"module:attribute"``), so
that a later process (``load_agent``, ``jaxzero play``) can rebuild it.

    import_path(my_rule)              # "myrules:ucb1"
    load("myrules:ucb1", "search.interior_selection")   # the function again

A module is imported as Python would, with the working directory as a last resort, so
that ``jaxzero train mygames.connect3:ConnectThree`` finds a file beside the user.
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
from typing import Any

from envs.registry import import_failure, module_name


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
    """The object an import path names.

    Args:
        path: ``"module:attribute"``, the attribute possibly dotted (``"mod:Class.rule"``).
        what: what the path is for, named in errors (e.g. ``"search.interior_selection"``).

    Returns:
        The object.

    Raises:
        ValueError: one line saying why it cannot be loaded and what to do.
    """
    module_name, _, attribute = path.partition(":")
    if not is_import_path(path):
        raise ValueError(f"{what}: {path!r} is not an import path (module:attribute)")
    if "<" in attribute or module_name == "__main__":
        raise ValueError(
            f"{what}: {path} cannot be imported by another process (a lambda, a partial, or "
            "defined in a function or a script); define it at the top level of a module"
        )
    try:
        module = _import(module_name)
    except ImportError as error:
        raise ValueError(f"{what}: cannot import {module_name} for {path} ({error})") from None
    except (SystemExit, Exception) as error:  # the module's own code, run on import
        said = import_failure(error)
        raise ValueError(f"{what}: importing {module_name} for {path} {said}") from None
    obj: Any = module
    for part in attribute.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"{what}: {module_name} has no {attribute} (from {path})")
        obj = getattr(obj, part)
    return obj


def _import(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as error:
        here = os.getcwd()
        missing = error.name or ""
        if here in sys.path or not (name == missing or name.startswith(missing + ".")):
            raise
        sys.path.append(here)  # a file beside the user, as `python -m` would find it
        return importlib.import_module(name)
