"""The games' pages (docs/games/*.md) are what tools/game_pages.py writes from the code:
a page edited by hand, or a game whose numbers changed, fails here until the script runs."""

from __future__ import annotations

import dataclasses

import game_pages
import pytest

import envs.tic_tac_toe
from jaxzero.core import games
from jaxzero.core.games import game_kit

NAMES = ["index.md", *(f"{page.slug}.md" for page in game_pages.game_pages())]


def _written(name: str) -> str:
    if name == "index.md":
        return game_pages.index_text()
    return game_pages.page_text(next(p for p in game_pages.game_pages() if f"{p.slug}.md" == name))


@pytest.mark.parametrize("name", NAMES)
def test_each_committed_page_is_what_the_script_writes(name):
    committed = game_pages.OUT / name
    assert committed.is_file(), f"docs/games/{name} is missing: run python tools/game_pages.py"
    assert committed.read_text() == _written(name), (
        f"docs/games/{name} differs from what tools/game_pages.py writes: edit the script "
        "(not the page) and run it"
    )


def test_no_page_in_docs_games_is_left_over():
    assert sorted(p.name for p in game_pages.OUT.glob("*.md")) == sorted(NAMES)


def test_a_changed_shape_or_preset_changes_the_page(monkeypatch):
    page = game_pages.game_pages()[0]
    before = game_pages.page_text(page)
    monkeypatch.setattr(envs.tic_tac_toe.TicTacToe, "observation_shape", (3, 3, 3))
    assert "| (3, 3, 3) |" in game_pages.page_text(page)
    monkeypatch.undo()
    kit = game_kit("tic_tac_toe")
    assert kit.preset is not None
    changed = dataclasses.replace(kit, preset=dataclasses.replace(kit.preset, seed=7))
    monkeypatch.setattr(games, "_KITS", games.game_kits() | {"tic_tac_toe": changed})
    assert game_pages.page_text(page) != before and "| `seed` | `7` |" in game_pages.page_text(page)


def test_the_check_names_a_stale_page(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(game_pages, "OUT", tmp_path)
    assert game_pages.main([]) == 0
    (tmp_path / "go.md").write_text((tmp_path / "go.md").read_text() + "edited by hand\n")
    assert game_pages.main(["--check"]) == 1
    assert capsys.readouterr().out.strip() == (
        "error: docs/games/go.md is not what tools/game_pages.py writes; run it"
    )
