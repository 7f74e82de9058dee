"""A game's parts beyond its rules, registered together: one :class:`GameKit` per env id.

    register_game(GameKit("connect_four", preset=Config(game="connect_four", ...),
                          opponents={"connect_four_solver": solver_player},
                          perfect="connect_four_solver", positions=load_positions,
                          page=GamePage(...)))
    game_kit("connect_four").preset        # what `jaxzero train connect_four` trains

Everything jaxzero knows of a game besides its rules (``envs``) reads its kit: the presets
(:mod:`jaxzero.core.presets`), the opponents "greedy" and "perfect" and the game's own
players (:mod:`jaxzero.measure.opponents`), its solved positions
(:mod:`jaxzero.measure.games`), the score line of a single-player game, and its page in
the docs (tools/game_pages.py). A game's shipped agent (``jaxzero/agents/GAME``) and data
files are its assets, found by its id.

Each built-in game declares its kits in one module of :mod:`jaxzero.games`, which this
registry imports by name on the first lookup (as ``envs`` imports a game's module on its
first ``make``): those modules build on ``jaxzero.measure``, a floor above this one. A
user's game registers its kit, rules included, with one :func:`register_game` call in its
own module (or in its package's ``jaxzero.games`` entry point).
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Mapping
from typing import Any

import envs
from jaxzero.core.config import Config

BUILT_IN = "jaxzero.games"  # the package whose modules declare the built-in games' kits


@dataclasses.dataclass(frozen=True)
class GamePage:
    """A game's page in the docs (``docs/games/<slug>.md``, written by tools/game_pages.py):
    what only a person can say. The numbers, presets and strength are read from the code."""

    slug: str  # docs/games/<slug>.md
    title: str
    ids: tuple[str, ...]  # the env ids the page covers
    intro: str
    observation: str
    actions: str
    rewards: str
    chance: str  # chance and hidden information
    presets_anchor: str = ""  # its section of docs/presets.md; "" when it has no preset
    agents: tuple[str, ...] = ()  # shipped agents (jaxzero/agents/<name>)
    strength: str = ""  # measured strength where no agent ships


@dataclasses.dataclass(frozen=True)
class GameKit:
    """What the game with env id ``game`` brings beyond its rules; every part optional.

    Attributes:
        game: the env id (``envs.make(game).id``).
        env: the game's rules (an ``envs.Env`` subclass, a function returning one, or
            ``"module:Class"``), which :func:`register_game` registers as ``game`` in
            ``envs``; None: ``envs`` knows the game already (the built-in games).
        preset: the pinned Config that ``jaxzero train GAME`` trains (``preset.game ==
            game``); None: the game trains ``jaxzero.default_config`` of its env.
        opponents: the game's own players, by opponent name: ``(env, **settings) ->
            Player`` factories (:func:`jaxzero.register_opponent`'s), which
            ``make_opponent`` and ``jaxzero eval --opponents`` find by that name.
        heuristic: the opponent name of its heuristic player ("greedy").
        perfect: the opponent name of its perfect player ("perfect").
        positions: loads its solved position set (a ``jaxzero.measure.games.PositionSet``).
        opening_plies: random plies that vary the openings of a study's matches.
        score_summary: single-player games: a one-line summary of a ``SoloResult``.
        page: its page in the docs, when it has one of its own.
    """

    game: str
    env: Callable[..., envs.Env] | str | None = None
    preset: Config | None = None
    opponents: Mapping[str, Callable[..., Any]] = dataclasses.field(default_factory=dict)
    heuristic: str | None = None
    perfect: str | None = None
    positions: Callable[[], Any] | None = None
    opening_plies: int = 2
    score_summary: Callable[[Any], str] | None = None
    page: GamePage | None = None

    def __post_init__(self) -> None:
        if self.preset is not None and self.preset.game != self.game:
            raise ValueError(
                f"the preset of {self.game!r} trains {self.preset.game!r}: a kit's preset "
                "trains its own game"
            )


_KITS: dict[str, GameKit] = {}
_loaded = False


def register_game(kit: GameKit) -> None:
    """Register ``kit`` as its game's (a second kit of the same id replaces the first), and
    its rules as the env id ``kit.game`` when the kit names them (``kit.env``).

    A user's game registers in this one call, from its own module: ``jaxzero train GAME``
    then trains its preset, ``jaxzero eval --opponents`` finds its players, and
    ``envs.make(GAME)`` builds it.

    Args:
        kit: the game's :class:`GameKit`.
    """
    _load()
    if kit.env is not None:
        envs.register(kit.game, kit.env)
    _KITS[kit.game] = kit


def game_kits() -> dict[str, GameKit]:
    """Every registered kit by env id, the built-in games' first, in registration order."""
    _load()
    return dict(_KITS)


def game_kit(game: str) -> GameKit:
    """The kit of the env id ``game``; an empty one (no preset, no players) if it has none."""
    return game_kits().get(game) or GameKit(game)


def _load() -> None:
    """Import the built-in games' modules, and run the installed packages' game entry
    points (which may register kits), once per process."""
    global _loaded
    if _loaded:
        return
    _loaded = True  # first: the modules imported below register through register_game
    try:
        importlib.import_module(BUILT_IN)
    except BaseException:
        _loaded = False  # the next lookup tries again, and fails as loudly
        raise
    envs.available()  # the jaxzero.games entry points: packages register kits there too
