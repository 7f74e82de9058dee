"""Pinned presets: one Config per game, named after the game it trains.

Like a named policy version: change a preset and you change what ``jaxzero train GAME``
means. Each preset is declared with the rest of its game (its kit,
:mod:`jaxzero.core.games`; the built-in games' in :mod:`jaxzero.games`), with a line of
why beside each value; docs/presets.md gives each preset's values with the measurements
(figures and commands) that chose them.

    config = get_preset("connect_four")       # config.game == "connect_four"
"""

from __future__ import annotations

from typing import Any

from jaxzero.core.config import Config
from jaxzero.core.games import game_kits


def presets() -> dict[str, Config]:
    """Every preset by name (the game it trains), in the order the games registered."""
    return {game: kit.preset for game, kit in game_kits().items() if kit.preset is not None}


def __getattr__(name: str) -> Any:
    if name == "PRESETS":  # read from the games' kits when asked, not when imported
        return presets()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def get_preset(name: str) -> Config:
    """The pinned Config that trains the game ``name``.

    Args:
        name: a preset's name (a game with a preset), e.g. ``"connect_four"`` or
            ``"pgx/2048"``.

    Returns:
        The preset :class:`~jaxzero.core.config.Config` (frozen; ``config.game`` is the
        game it trains).

    Raises:
        ValueError: no preset ``name``, in one line naming the presets there are.
    """
    known = presets()
    if name not in known:
        raise ValueError(f"no preset {name!r}; choose one of: {', '.join(sorted(known))}")
    return known[name]
