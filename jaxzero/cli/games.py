"""Which game a command means: a preset, a registered game or ``module:Class``, checked
before anything is loaded, and where its run lives (``runs/GAME``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from jaxzero.cli.app import UsageError

if TYPE_CHECKING:
    from jaxzero.core.config import Config


def check_game(name: str) -> str:
    """``name`` itself if it names a game (a registered id, a family's ``pgx/ID``, or
    ``module:Class``); UsageError saying why not otherwise."""
    import envs
    from jaxzero.core.presets import PRESETS

    if name in envs.available():
        return name
    try:
        envs.make(name)
    except (ValueError, ImportError, TypeError) as error:
        if "/" in name or ":" in name:  # a family's or an import path's own reason
            raise UsageError(str(error)) from None
        raise UsageError(
            f"unknown game {name!r}; choose a preset ({', '.join(sorted(PRESETS))}), a "
            f"game ({', '.join(envs.available())}), or your own Env as module:Class"
        ) from None
    return name


def game_config(game: str) -> Config:
    """The config a new run of ``game`` starts from: its preset, else
    ``jaxzero.default_config`` of the game (UsageError for an unknown game)."""
    from jaxzero.core import presets
    from jaxzero.core.defaults import starting_config

    if game not in presets.presets():
        check_game(game)
    return starting_config(game)


def run_name(game: str) -> str:
    """The folder under runs/ of a game's run: its id (a ``module:Class`` game's env id)."""
    if ":" not in game:
        return game
    import envs

    try:
        return envs.make(game).id
    except (ValueError, ImportError, TypeError) as error:
        raise UsageError(str(error)) from None
