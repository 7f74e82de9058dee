"""Write docs/games/*.md: one page per built-in game and per family of pgx games.

    python tools/game_pages.py            # write the pages
    python tools/game_pages.py --check    # exit 1 naming each page that differs

What lives in code is read from it: each game's players, actions, observation shape,
length, chance outcomes, hidden information and symmetries from ``envs.make``; its
presets' settings (where they differ from the defaults) from ``jaxzero.core.presets``;
a shipped agent's strength from the ``## Strength`` section of its MODEL_CARD.md. What
only a person can say (what each plane means, the action layout, the rewards) is the
prose of each game's page, declared with the rest of the game in its kit
(``GameKit.page``, :mod:`jaxzero.games`). ``tests/package/test_docs.py`` checks that the committed
pages are what this script writes, so a page edited by hand, or a game whose shapes
changed, fails it.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import envs
from jaxzero.core import config as config_lib
from jaxzero.core.games import GamePage, game_kits
from jaxzero.core.presets import presets

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "games"
AGENTS = ROOT / "jaxzero" / "agents"
STAMP = (
    "<!-- Written by tools/game_pages.py from the code; edit the game's kit (jaxzero/games/) "
    "or the script, not this page, then run `python tools/game_pages.py`. -->"
)


def game_pages() -> tuple[GamePage, ...]:
    """Every game's page, in the order the games registered their kits."""
    return tuple(kit.page for kit in game_kits().values() if kit.page is not None)


def facts_table(ids: tuple[str, ...]) -> str:
    """The games' numbers as their envs state them."""
    rows = [
        "| id | players | actions | observation | max_steps | chance outcomes | hidden "
        "information | symmetries | rules version |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for game_id in ids:
        env = envs.make(game_id)
        shape = f"{env.observation_shape}"
        rows.append(
            f"| `{game_id}` | {env.num_players} | {env.num_actions:,} | {shape} | "
            f"{env.max_steps:,} | {env.num_chance_outcomes} | "
            f"{'yes' if env.has_hidden_information else 'no'} | "
            f"{len(env.symmetries.action_index)} | {env.version} |"
        )
    return "\n".join(rows)


def presets_section(page: GamePage) -> str:
    """Each preset that trains one of the page's games, where it differs from the defaults."""
    defaults = config_lib.flatten(config_lib.config_to_dict(config_lib.Config()), sep=".")
    parts = []
    for name, preset in presets().items():
        if preset.game not in page.ids:
            continue
        values = config_lib.flatten(config_lib.config_to_dict(preset), sep=".")
        changed = {k: v for k, v in values.items() if v != defaults.get(k) and k != "game"}
        rows = "\n".join(f"| `{key}` | `{value}` |" for key, value in changed.items())
        parts.append(
            f"`jaxzero train {name}` trains the preset `{name}`; where it differs from the "
            f"defaults:\n\n| key | value |\n|---|---|\n{rows}"
        )
    if not parts:
        return "No preset: `jaxzero train` sizes a config for it (`jaxzero.default_config`)."
    why = f"\n\nWhy each value: [Presets](../presets.md#{page.presets_anchor})."
    return "\n\n".join(parts) + (why if page.presets_anchor else "")


def card_strength(agent: str) -> str:
    """The ``## Strength`` section of a shipped agent's model card, headings one level down."""
    card = (AGENTS / agent / "MODEL_CARD.md").read_text()
    match = re.search(r"^## Strength\n(.*?)(?=^## |\Z)", card, re.MULTILINE | re.DOTALL)
    if match is None:
        raise SystemExit(f"error: {agent}'s MODEL_CARD.md has no '## Strength' section")
    body = re.sub(r"^(#+) ", r"#\1 ", match.group(1).strip(), flags=re.MULTILINE)
    return f"The shipped agent `{agent}` (`jaxzero/agents/{agent}`), from its model card:\n\n{body}"


def page_text(page: GamePage) -> str:
    """The whole page."""
    measured = [card_strength(agent) for agent in page.agents] + [page.strength]
    strength = "\n\n".join(part for part in measured if part) or "Not measured yet."
    sections = [
        f"# {page.title}\n\n{STAMP}\n\n{page.intro}",
        f"## The numbers\n\nAs `envs.make(id)` states them:\n\n{facts_table(page.ids)}",
        f"## Observation\n\n{page.observation}",
        f"## Actions\n\n{page.actions}",
        f"## Rewards\n\n{page.rewards}",
        f"## Chance and hidden information\n\n{page.chance}",
        f"## Presets\n\n{presets_section(page)}",
        f"## Strength\n\n{strength.strip()}",
    ]
    return "\n\n".join(sections) + "\n"


def index_text() -> str:
    """The Games section's first page: every page, and the games it covers."""
    rows = "\n".join(
        f"| [{p.title}]({p.slug}.md) | {', '.join(f'`{i}`' for i in p.ids)} |" for p in game_pages()
    )
    return (
        f"# Games\n\n{STAMP}\n\nOne page per built-in game and per family of pgx games: the "
        "observation, the actions, the rewards, chance and hidden information, the presets "
        "and the measured strength. The numbers and presets are read from the code. "
        "[The Env contract](../concepts/env-contract.md) says what every game keeps.\n\n"
        f"| page | ids |\n|---|---|\n{rows}\n"
    )


def pages() -> dict[str, str]:
    """Every page's file name and text."""
    return {"index.md": index_text(), **{f"{p.slug}.md": page_text(p) for p in game_pages()}}


def main(argv: list[str]) -> int:
    written = pages()
    if argv == ["--check"]:
        stale = [n for n, t in written.items() if not (OUT / n).is_file()
                 or (OUT / n).read_text() != t]  # fmt: skip
        for name in stale:
            print(f"error: docs/games/{name} is not what tools/game_pages.py writes; run it")
        return 1 if stale else 0
    OUT.mkdir(exist_ok=True)
    for name, text in written.items():
        (OUT / name).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
