"""A game in one place: a toy game registered by one call (its module: tests/toy_game.py)
gets its preset, its opponents in ``jaxzero eval``, its page and its picture, with no edit
to jaxzero; the built-in games' kits hold every preset, player and page once."""

from __future__ import annotations

import jax
import pytest
import toy_game

import envs
from envs.pictures import check_svg
from jaxzero.cli.games import game_config
from jaxzero.core import games
from jaxzero.core.presets import get_preset, presets
from jaxzero.measure.opponents import make_opponent
from jaxzero.measure.round_robin import RoundRobinError, parse_opponents


@pytest.fixture
def registered(monkeypatch):
    """The toy game registered by its one call, for one test (both registries restored)."""
    monkeypatch.setattr(games, "_KITS", games.game_kits())
    monkeypatch.setattr(envs.registry, "_REGISTRY", dict(envs.registry._REGISTRY))
    with pytest.raises(RoundRobinError, match="unknown opponent 'leave_three'"):
        parse_opponents("leave_three")
    games.register_game(toy_game.KIT)
    return envs.make("stone_row")


def test_a_game_registered_in_one_call_trains_its_preset(registered):
    assert get_preset("stone_row") is toy_game.PRESET
    assert game_config("stone_row") is toy_game.PRESET  # what `jaxzero train stone_row` trains
    assert isinstance(registered, toy_game.StoneRow)


def test_its_players_are_opponents_by_name(registered):
    assert parse_opponents("leave_three,greedy") == ("random", "leave_three", "greedy")
    states = jax.vmap(registered.position)(jax.numpy.array([5, 4, 2]))
    for name in ("leave_three", "greedy"):  # greedy: the heuristic its kit names
        actions = make_opponent(name, registered)(None, states, jax.random.key(0))
        assert actions.tolist() == [1, 0, 1]  # leave 3, 3 and 0 stones


def test_its_page_and_picture(registered):
    import game_pages

    written = game_pages.pages()
    assert "stone_row.md" in written and "[Stone row](stone_row.md)" in written["index.md"]
    page = written["stone_row.md"]
    assert "A row of five stones" in page and "| `stone_row` | 2 | 2 | (6,) | 5 |" in page
    assert "`jaxzero train stone_row` trains the preset `stone_row`" in page
    assert "| `search.num_simulations` | `8` |" in page
    svg = registered.to_svg(registered.init(jax.random.key(0)))
    check_svg(svg)
    assert svg.count("<circle") == 5  # a stone a cell


def test_the_built_in_kits_hold_each_preset_once():
    kits = games.game_kits()
    assert presets() == {g: k.preset for g, k in kits.items() if k.preset is not None}
    assert all(name == preset.game for name, preset in presets().items())
    slugs = [kit.page.slug for kit in kits.values() if kit.page is not None]
    assert len(slugs) == len(set(slugs)) == 12


def test_a_kit_trains_only_its_own_game():
    with pytest.raises(ValueError, match="the preset of 'go_6x6' trains 'go_9x9'"):
        games.GameKit("go_6x6", preset=get_preset("go_9x9"))


def test_a_built_in_game_that_fails_to_load_fails_every_lookup(monkeypatch):
    """Not a half-filled registry after the first failure: each lookup raises again."""
    monkeypatch.setattr(games, "_KITS", {})
    monkeypatch.setattr(games, "_loaded", False)
    monkeypatch.setattr(games, "BUILT_IN", "jaxzero.no_such_games")
    for _ in range(2):
        with pytest.raises(ModuleNotFoundError, match="no_such_games"):
            games.game_kit("tic_tac_toe")
