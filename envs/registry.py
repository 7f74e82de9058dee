"""The game registry: what ``envs.make`` builds from a string, and the string back.

A game spec is one of

* a registered id: ``make("connect_four")``, ``make("go", size=7)``;
* an id of a registered family, an id prefix ending in ``/``: ``make("pgx/othello")`` is
  ``make_pgx("othello")`` for any pgx game, listed in :func:`available` or not;
* an import path ``"module:attribute"``: ``make("mygames.connect3:ConnectThree", rows=4)``,
  where the attribute (dotted names reach into classes) is an :class:`Env` subclass or a
  function that returns an Env, called with the keyword arguments. The module is imported
  as Python would import it; if that very module is missing and the working directory is
  not on ``sys.path``, the working directory is appended to it and the import tried again,
  so that ``jaxzero train mygame:MyGame`` works from the folder that holds ``mygame.py``.

Whatever fails is a ``ValueError`` of one line saying what is wrong and how to fix it.

Games of installed packages: the entry-point group ``jaxzero.games``. Each entry point
names a function of no arguments that registers the package's games by calling
:func:`register` (the entry point's own name labels it in warnings; by custom, the
package's id or family)::

    # the package's pyproject.toml
    [project.entry-points."jaxzero.games"]
    mygames = "mygames:register_games"

    # mygames/__init__.py
    def register_games() -> None:
        envs.register("connect3", "mygames.connect3:ConnectThree")
        envs.register("connect3_small", "mygames.connect3:ConnectThree", rows=4)

The functions run once, on the first :func:`make` of an id not registered yet or the first
:func:`available`, so ``import envs`` imports no package's games; a function that fails
is skipped with a warning. pgx's games are registered this way, by jaxzero's own entry
point ``pgx = "envs.pgx:register"``: the ids it knows, and the family ``pgx/``.

:func:`game_spec` goes the other way: the string that rebuilds a given env through
:func:`make`, for a run's config to record.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import os
import sys
import warnings
from collections.abc import Callable
from typing import Any

from envs.core import Env

Factory = Callable[..., Env]

_REGISTRY: dict[str, tuple[Factory | str, dict[str, Any]]] = {}
_FAMILIES: dict[str, tuple[Factory | str, dict[str, Any]]] = {}
_ENTRY_POINT_GROUP = "jaxzero.games"
_entry_points_loaded = False


def register(env_id: str, factory: Factory | str, **defaults: Any) -> None:
    """Make ``make(env_id, **kwargs)`` build ``factory(**defaults, **kwargs)``.

    ``factory`` may be a ``"module:attribute"`` string, imported on first use, so that
    ``import envs`` stays cheap however many games are registered. An ``env_id`` ending in
    ``/`` registers a family: ``make(env_id + name, **kwargs)`` builds
    ``factory(name, **defaults, **kwargs)`` for any ``name`` not registered on its own.
    A second registration of an id replaces the first.
    """
    if env_id.endswith("/"):
        _FAMILIES[env_id] = (factory, defaults)
    else:
        _REGISTRY[env_id] = (factory, defaults)


def available() -> list[str]:
    """The registered ids (families' members listed by their packages), sorted."""
    _load_entry_points()
    return sorted(_REGISTRY)


def imports_code(spec: str) -> bool:
    """Whether :func:`make` of ``spec`` imports the module ``spec`` names (an import path,
    not a registered id): what a file that names a game may not make us do untrusted."""
    return spec not in _REGISTRY and ":" in spec


def make(spec: str, **kwargs: Any) -> Env:
    """Build the game ``spec`` names (see the module docstring), e.g. ``make("connect_four")``,
    ``make("go", size=7)``, ``make("pgx/othello")`` or ``make("mygames:ConnectThree")``."""
    if imports_code(spec):
        return _checked(_import(spec, spec)(**kwargs), spec)
    if spec not in _REGISTRY:
        _load_entry_points()
    if spec in _REGISTRY:
        factory, defaults = _REGISTRY[spec]
        return _checked(_resolve(factory, spec)(**{**defaults, **kwargs}), spec)
    family = _family_of(spec)
    if family is None:
        raise ValueError(f"unknown game {spec!r}; choose one of: {_choices()}")
    factory, defaults = _FAMILIES[family]
    name = spec.removeprefix(family)
    return _checked(_resolve(factory, spec)(name, **{**defaults, **kwargs}), spec)


def game_spec(env: Env) -> str:
    """The spec that rebuilds ``env`` through :func:`make`: ``env.id`` when ``make(env.id)``
    builds the same class with the same settings (its attributes of plain values: numbers,
    strings, tuples of them), else another registered id of the class that does, else
    ``"module:QualifiedName"`` of its class when the class built without arguments does.

    A class in ``__main__`` is named by the module its script would be imported as (a
    script run from the working directory: its file name). ValueError when no spec
    rebuilds ``env``: a class defined inside a function, or settings that only arguments
    give (register an id with those arguments, then build the env by that id).
    """
    cls = type(env)
    path = f"{module_name(cls)}:{cls.__qualname__}"
    env_id = getattr(env, "id", None)
    candidates = [env_id] if isinstance(env_id, str) else []
    candidates += [i for i, (factory, _) in sorted(_REGISTRY.items()) if factory in (cls, path)]
    for candidate in dict.fromkeys(candidates):  # in order, once each
        if _rebuilds(env, functools.partial(make, candidate)):
            return candidate
    if "<locals>" in cls.__qualname__:
        raise ValueError(
            f"{cls.__qualname__} is defined inside a function, where make cannot import it: "
            "define it at the top level of a module"
        )
    if not _rebuilds(env, cls):
        raise ValueError(
            f"{env!r} is not what {path} builds without arguments: register an id with its "
            f"arguments (envs.register('my_game', {path!r}, ...)) and build the game by that id"
        )
    return path


def _checked(env: Any, spec: str) -> Env:
    if not isinstance(env, Env):
        raise ValueError(
            f"game {spec!r} built an object of type {type(env).__name__}, not an envs.Env: "
            "its factory must return an Env"
        )
    return env


def _resolve(factory: Factory | str, spec: str) -> Factory:
    return _import(factory, spec) if isinstance(factory, str) else factory


def _import(path: str, spec: str) -> Factory:
    """The Env subclass or factory that ``"module:attribute"`` names (``spec`` for errors)."""
    target = load_path(path, f"game {spec!r}", missing=_env_classes)
    if isinstance(target, type) and not issubclass(target, Env):
        raise ValueError(f"{path!r} is a class but not an envs.Env subclass")
    if not callable(target):
        raise ValueError(
            f"{path!r} is neither an envs.Env subclass nor a function that returns an Env, "
            f"but a value of type {type(target).__name__}"
        )
    return target


def _env_classes(module: Any) -> str:
    """The Env classes ``module`` defines, as the end of a missing attribute's error."""
    games = sorted(
        n
        for n, v in vars(module).items()
        if isinstance(v, type) and issubclass(v, Env) and v.__module__ == module.__name__
    )
    return f"; its Env classes: {', '.join(games)}" if games else ""


def load_path(path: str, what: str, missing: Callable[[Any], str] | None = None) -> Any:
    """The object an import path ``"module:attribute"`` names (the attribute possibly
    dotted, ``"mod:Class.rule"``): the one loader of a game, a network or a search rule.

    The module is imported as Python would, with the working directory as a last resort,
    so that ``jaxzero train mygames.connect3:ConnectThree`` finds a file beside the user.

    Args:
        path: the import path.
        what: what the path is for, starting each error (``"game 'x:Y'"``, ``"search.kind"``).
        missing: given the module, more words for the error of a missing attribute.

    Returns:
        The object.

    Raises:
        ValueError: one line saying why it cannot be loaded and what to do.
    """
    module_name, _, attribute = path.partition(":")
    if not module_name or not attribute:
        raise ValueError(
            f"{what}: {path!r} is not an import path: write module:attribute, e.g. "
            "mygames.connect3:ConnectThree"
        )
    if "<" in attribute or module_name == "__main__":
        raise ValueError(
            f"{what}: {path} cannot be imported by another process (a lambda, a partial, or "
            "defined in a function or a script); define it at the top level of a module"
        )
    module = _import_module(module_name, what)
    target: Any = module
    for name in attribute.split("."):
        if not hasattr(target, name):
            more = missing(module) if missing is not None else ""
            raise ValueError(f"{what}: module {module_name!r} has no attribute {attribute!r}{more}")
        target = getattr(target, name)
    return target


def _import_module(name: str, what: str) -> Any:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as error:
        missing = error.name or ""
        itself = name == missing or name.startswith(missing + ".")
        cwd = os.getcwd()
        if itself and cwd not in sys.path and "" not in sys.path:
            sys.path.append(cwd)  # a file beside the user, as `python -m` would find it
            return _import_module(name, what)
        if itself:
            raise ValueError(
                f"{what}: no module named {missing!r} here or in the environment: run "
                "from the folder that holds it, add that folder to PYTHONPATH, or install "
                "its package"
            ) from None
        raise ValueError(f"{what}: importing {name!r} failed: {error}") from error
    except (ImportError, SyntaxError) as error:
        first_line = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise ValueError(f"{what}: importing {name!r} failed: {first_line}") from error
    except (SystemExit, Exception) as error:  # the module's own code, run on import
        raise ValueError(f"{what}: importing {name!r} {import_failure(error)}") from None


def import_failure(error: BaseException) -> str:
    """What a module's own code did when imported, in one line: "raised Type: message",
    or "called sys.exit(0)" (which, uncaught, would end the command with that code)."""
    if isinstance(error, SystemExit):
        return (
            f"called sys.exit({error.code!r}): a module must define what it names, not run "
            "a program on import"
        )
    text = str(error).strip().splitlines()
    return "raised " + (f"{type(error).__name__}: {text[0]}" if text else type(error).__name__)


def _family_of(spec: str) -> str | None:
    """The longest registered family prefix of ``spec``, if any."""
    matches = [family for family in _FAMILIES if spec.startswith(family) and spec != family]
    return max(matches, key=len, default=None)


def _choices() -> str:
    families = [f"any {family}<name>" for family in sorted(_FAMILIES)]
    return ", ".join(
        [*available(), *families, "or an import path module:Class (e.g. mygames:ConnectThree)"]
    )


def _entry_points() -> list[importlib.metadata.EntryPoint]:
    """The installed packages' game registrations (tests replace this function)."""
    return list(importlib.metadata.entry_points(group=_ENTRY_POINT_GROUP))


def _load_entry_points() -> None:
    """Run each ``jaxzero.games`` entry point's function, once per process."""
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    for entry_point in _entry_points():
        try:
            entry_point.load()()
        except Exception as error:  # a broken package must not take the other games down
            message = str(error).splitlines()[0] if str(error) else ""
            warnings.warn(
                f"the {_ENTRY_POINT_GROUP} entry point {entry_point.name!r} "
                f"({entry_point.value}) failed, its games are not registered: "
                f"{type(error).__name__}: {message}",
                stacklevel=3,
            )


def module_name(obj: Any) -> str:
    """The name ``obj``'s module (a class's or function's) is imported by; for
    ``__main__``, the script's own, so that another process can import it."""
    if obj.__module__ != "__main__":
        return obj.__module__
    main = sys.modules["__main__"]
    spec = getattr(main, "__spec__", None)
    if spec is not None and spec.name != "__main__":  # python -m package.module
        return str(spec.name)
    file = getattr(main, "__file__", None)
    return os.path.splitext(os.path.basename(file))[0] if file else "__main__"


def _rebuilds(env: Env, build: Callable[[], Any]) -> bool:
    """Whether ``build()`` gives an env of ``env``'s class with its settings."""
    try:
        rebuilt = build()
    except Exception:  # not buildable this way: the next way is tried
        return False
    return type(rebuilt) is type(env) and _settings(rebuilt) == _settings(env)


def _settings(env: Env) -> dict[str, Any]:
    plain = (bool, int, float, str, type(None))

    def is_plain(value: Any) -> bool:
        if isinstance(value, tuple):
            return all(is_plain(v) for v in value)
        return isinstance(value, plain)

    return {k: v for k, v in vars(env).items() if not k.startswith("_") and is_plain(v)}
