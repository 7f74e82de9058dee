"""The built-in games' kits (:class:`jaxzero.core.games.GameKit`): one module per game (a
folder where the game has a solver), each declaring in ``KITS`` everything jaxzero knows
of its game beyond the rules in ``envs``: its presets, its own players, its solver, its
solved positions and its page in the docs.

A new built-in game is one module or folder here, named in ``GAMES``, plus its assets (a
shipped agent in ``jaxzero/agents/GAME``, data in ``jaxzero/data``). :mod:`jaxzero.core.games`
imports this package on its first lookup.
"""

from jaxzero.core.games import register_game
from jaxzero.games import connect_four, go, pgx, star_duel, tic_tac_toe

GAMES = (tic_tac_toe, connect_four, go, star_duel, pgx)  # their kits' order: presets, pages

for _game in GAMES:
    for _kit in _game.KITS:
        register_game(_kit)
