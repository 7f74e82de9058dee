"""Write docs/games/*.md: one page per built-in game and per family of pgx games.

    python tools/game_pages.py            # write the pages
    python tools/game_pages.py --check    # exit 1 naming each page that differs

What lives in code is read from it: each game's players, actions, observation shape,
length, chance outcomes, hidden information and symmetries from ``envs.make``; its
presets' settings (where they differ from the defaults) from ``jaxzero.core.presets``;
a shipped agent's strength from the ``## Strength`` section of its MODEL_CARD.md. What
only a person can say (what each plane means, the action layout, the rewards) is the
prose in :data:`PAGES`. ``tests/test_docs.py`` checks that the committed pages are what
this script writes, so a page edited by hand, or a game whose shapes changed, fails it.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path

import envs
from envs.pgx import MINATAR
from jaxzero.core import config as config_lib
from jaxzero.core.presets import PRESETS

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "games"
AGENTS = ROOT / "jaxzero" / "agents"
STAMP = (
    "<!-- Written by tools/game_pages.py from the code; edit the script, not this page, "
    "then run `python tools/game_pages.py`. -->"
)


@dataclasses.dataclass(frozen=True)
class GamePage:
    """One page: the games it covers (registered ids) and what the code cannot say."""

    slug: str  # docs/games/<slug>.md
    title: str
    ids: tuple[str, ...]
    intro: str
    observation: str
    actions: str
    rewards: str
    chance: str  # chance and hidden information
    presets_anchor: str = ""  # its section of docs/presets.md; "" when it has no preset
    agents: tuple[str, ...] = ()  # shipped agents (jaxzero/agents/<name>)
    strength: str = ""  # measured strength where no agent ships


PGX_NOTE = (
    "pgx's rules, not copied: the bridge (`envs/pgx.py`, [pgx games](../pgx.md)) wraps "
    "them, and needs `pip install 'jaxzero[pgx]'`."
)

PAGES = (
    GamePage(
        slug="tic_tac_toe",
        title="Tic-tac-toe",
        ids=("tic_tac_toe", "pgx/tic_tac_toe"),
        intro=(
            "The correctness gate (`envs/tic_tac_toe.py`): small enough to solve, so every "
            "decision can be checked. `pgx/tic_tac_toe` is pgx's version through the bridge."
        ),
        observation=(
            "bool (3, 3, 2) from the mover's point of view: plane 0 the mover's marks, plane "
            "1 the opponent's. pgx's has the same layout."
        ),
        actions="9: the cells, row-major from the top-left (action 4 is the centre).",
        rewards="+1 to the player who completes a line of three, -1 to the other; a full board "
        "without a line is a draw (0, 0).",
        chance="None: deterministic, perfect information.",
        presets_anchor="tic_tac_toe",
        agents=("tic_tac_toe",),
    ),
    GamePage(
        slug="connect_four",
        title="Connect Four",
        ids=("connect_four", "pgx/connect_four"),
        intro=(
            "Connect Four on the standard 6 x 7 board (`envs/connect_four.py`, bitboards). "
            "`pgx/connect_four` is pgx's version through the bridge."
        ),
        observation=(
            "bool (6, 7, 2) from the mover's point of view, row 0 at the top: plane 0 the "
            "mover's discs, plane 1 the opponent's."
        ),
        actions="7: the columns, left to right; a full column is illegal.",
        rewards="+1 to the first player with four in a row (horizontal, vertical or diagonal), "
        "-1 to the other; a full board without one is a draw (0, 0).",
        chance="None: deterministic, perfect information.",
        presets_anchor="connect_four",
        agents=("connect_four",),
    ),
    GamePage(
        slug="go",
        title="Go (5x5 to 19x19)",
        ids=("go", "go_6x6", "go_9x9"),
        intro=(
            "Go with area scoring and positional superko (`envs/go.py`); "
            '`envs.make("go", size=N)` builds any size from 5 to 19 (`go` is 9x9). '
            "pgx's Go has [a page of its own](pgx_go.md)."
        ),
        observation=(
            "bool (N, N, 2k + 1), AlphaGo Zero style, from the observing player's view: "
            "planes 2i and 2i + 1 are that player's and the opponent's stones i positions ago "
            "(i = 0 now; k = `history`, default 4, so 9 planes); the last plane is all ones "
            "when the player is Black."
        ),
        actions=(
            "N² + 1: the points row-major from the top-left, then pass (N²). Action r·N + c "
            'is GTP column `"ABCDEFGHJKLMNOPQRST"[c]`, row N - r (action 0 is A9 on 9x9). '
            "Suicide and a repeat of any earlier position (positional superko) are illegal."
        ),
        rewards=(
            "Two passes end the game, scored by area (stones plus surrounded empty points, "
            "komi to White: 7.5 above 7x7, 3.5 at 7x7 and below): +1 to the higher score, -1 "
            "to the other. A game reaching 2·N² actions is truncated with rewards 0."
        ),
        chance="None: deterministic, perfect information.",
        presets_anchor="go_6x6-and-go_9x9",
        agents=("go_6x6",),
    ),
    GamePage(
        slug="star_duel",
        title="Star Duel",
        ids=("star_duel", "star_duel_short"),
        intro=(
            "A two-player deck-building duel with the structure of Star Realms and cards of "
            "its own (`envs/star_duel.py`). A turn is many actions by one player, ended by "
            "`END_TURN`. `star_duel_short` starts at 10 authority and truncates at 20 turns."
        ),
        observation=(
            "float32 vector from the viewer's side (T = 19 card types): counts of the "
            "viewer's hand, deck, discard pile and bases, ships in play this turn, the other "
            "side's bases and discard pile (9 zones of T), the other's hand-plus-deck pool "
            "(never split: the viewer cannot tell them apart), the trade deck, the trade row "
            "slot by slot (5 one-hot vectors of T), then 10 scalars (both authorities over "
            "the starting one, trade, combat, the other's hand size, pending discards and "
            "scraps, discards owed, turn over the turn cap, whether the viewer moves) and the "
            "cards in play and waiting ally effects per faction."
        ),
        actions=(
            "123 (6T + 9), each legal only in its mode: play a card of type i (0..T-1); use "
            "its scrap ability (T..2T-1); buy trade-row slot j (2T..2T+4); buy an Explorer "
            "(2T+5); attack the player (2T+6); destroy a base of type i (2T+7..); scrap from "
            "hand, scrap from the discard pile, discard from hand (T each); scrap nothing "
            "more (6T+7); end the turn (6T+8). The full table is in `envs/star_duel.py`."
        ),
        rewards="+1 to the player who brings the other's authority to 0 or below, -1 to the "
        "other; a game that reaches the turn cap is truncated (0, 0).",
        chance=(
            "Both. Draws and the trade deck's refills come from the step's key (not "
            "enumerated: `num_chance_outcomes` is 0). The mover does not see the order of "
            "either deck nor the other's hand: `has_hidden_information` is True, and "
            "`resample_hidden` redeals them, so the search is determinised "
            "(`search.determinize`)."
        ),
        presets_anchor="star_duel_short",
        agents=("star_duel_short",),
    ),
    GamePage(
        slug="pgx_othello",
        title="pgx: Othello",
        ids=("pgx/othello",),
        intro=PGX_NOTE,
        observation="bool (8, 8, 2): plane 0 the mover's discs, plane 1 the opponent's.",
        actions="65: the 64 squares row-major, then pass (legal only when nothing else is).",
        rewards="+1 to the player with more discs at the end, -1 to the other; equal is 0.",
        chance="None. Symmetries: the 4 of the square that keep the four starting discs.",
        presets_anchor="pgx-board-games-pgxothello-pgxhex-pgxanimal_shogi",
        strength="30 minutes of `jaxzero train pgx/othello`: 100-0-0 against random and "
        "95-0-5 against greedy (most discs), 100 games each ([pgx games](../pgx.md)).",
    ),
    GamePage(
        slug="pgx_hex",
        title="pgx: Hex 11x11",
        ids=("pgx/hex",),
        intro=PGX_NOTE,
        observation=(
            "bool (11, 11, 4): the viewer's stones, the opponent's, a plane of ones when the "
            "viewer is the second player, and a plane of ones when the swap is legal "
            "([pgx's hex](https://sotets.uk/pgx/hex/))."
        ),
        actions="122: the 121 cells row-major, then swap (legal on the second move only).",
        rewards="+1 to the player who connects their two sides, -1 to the other (no draws).",
        chance="None. Symmetries: the half-turn (swap fixed).",
        presets_anchor="pgx-board-games-pgxothello-pgxhex-pgxanimal_shogi",
        strength="30 minutes of `jaxzero train pgx/hex` on a quiet machine: 99-0-1 against "
        "random, 0.990 [0.946, 0.998] ([pgx games](../pgx.md)).",
    ),
    GamePage(
        slug="pgx_go",
        title="pgx: Go 9x9 and 19x19",
        ids=("pgx/go_9x9", "pgx/go_19x19"),
        intro=PGX_NOTE + " jaxzero's own Go is [another page](go.md).",
        observation=(
            "bool (N, N, 17), AlphaGo Zero's: the mover's and the opponent's stones over the "
            "last 8 positions, and a colour plane ([pgx's go](https://sotets.uk/pgx/go/))."
        ),
        actions="N² + 1: the points row-major, then pass.",
        rewards="Area scoring with komi 7.5: +1 / -1. pgx masks simple ko only and scores a "
        "repeated position as a loss for the mover.",
        chance="None. Symmetries: the 8 of the square.",
        strength="Not trained yet: no preset (`jaxzero.default_config` sizes one).",
    ),
    GamePage(
        slug="pgx_chess",
        title="pgx: chess and Gardner chess",
        ids=("pgx/chess", "pgx/gardner_chess"),
        intro=PGX_NOTE,
        observation=(
            "bool (8, 8, 119) for chess, (5, 5, 115) for Gardner's 5x5 chess: AlphaZero's "
            "planes, pieces of both sides over the last 8 positions, repetitions, colour, "
            "move count, castling and the no-progress count "
            "([pgx's chess](https://sotets.uk/pgx/chess/))."
        ),
        actions="AlphaZero's move planes: from-square x 73 (queen moves, knight moves, "
        "under-promotions): 64 x 73 = 4,672 for chess, 25 x 49 = 1,225 for Gardner chess.",
        rewards="+1 / -1 for checkmate; draws (stalemate, repetition, the 50-move rule, "
        "insufficient material) 0.",
        chance="None. No symmetries declared (castling and pawns break the mirror).",
        strength="Not trained yet: no preset.",
    ),
    GamePage(
        slug="pgx_shogi",
        title="pgx: shogi and animal shogi",
        ids=("pgx/shogi", "pgx/animal_shogi"),
        intro=PGX_NOTE,
        observation=(
            "Board and hand planes from the mover's view: (9, 9, 119) for shogi, (4, 3, 194) "
            "for animal shogi, whose planes repeat the pieces and hands over the last 8 "
            "positions ([pgx's shogi](https://sotets.uk/pgx/shogi/), "
            "[animal shogi](https://sotets.uk/pgx/animal_shogi/))."
        ),
        actions="Move directions and drops per square: 81 x 27 = 2,187 for shogi, 12 x 11 = "
        "132 for animal shogi.",
        rewards="+1 / -1 at the end: in shogi checkmate; in animal shogi taking the lion, a "
        "lion reaching the far row (try) or a player left without a move, and a repeated "
        "position is a draw (0, 0). The bound in the table truncates either (0, 0).",
        chance="None. No symmetries declared.",
        presets_anchor="pgx-board-games-pgxothello-pgxhex-pgxanimal_shogi",
        strength="Animal shogi, 30 minutes of `jaxzero train pgx/animal_shogi`: 100-0-0 "
        "against random ([pgx games](../pgx.md)). Shogi: not trained yet.",
    ),
    GamePage(
        slug="pgx_backgammon",
        title="pgx: backgammon",
        ids=("pgx/backgammon",),
        intro=PGX_NOTE,
        observation=(
            "float32 (34,): the 28 checker counts (24 points, the bars and borne-off "
            "checkers; the mover's positive) and, for the mover, how many of each die face "
            "are left to play (6)."
        ),
        actions="156 = 26 x 6: 6 x source + die, the source 0 no move, 1 the bar, 2..25 "
        "the 24 points.",
        rewards="±1 for a plain win, ±2 a gammon, ±3 a backgammon: the preset's value head is "
        "categorical over ±3. A game truncated at the bridge's 1,000 actions is a draw.",
        chance=(
            "Dice. The roll at the end of each turn is enumerated: 36 outcomes (ordered "
            "pairs, 1/36 each), so `search.chance_nodes=true` can weigh them; by default "
            "the step key draws them. Perfect information."
        ),
        presets_anchor="pgxbackgammon",
        strength="30 minutes of `jaxzero train pgx/backgammon`: 100-0-0 against random "
        "([pgx games](../pgx.md)).",
    ),
    GamePage(
        slug="pgx_2048",
        title="pgx: 2048",
        ids=("pgx/2048",),
        intro=PGX_NOTE,
        observation="bool (4, 4, 31): the tile of each cell one-hot, plane k the tile 2^k "
        "(plane 0 empty).",
        actions="4: the four slides; a slide that moves nothing is illegal.",
        rewards="One player; each move pays its merges' sum, so the return is the score: the "
        "preset's value head is categorical up to 20,000, γ = 0.999. Truncated at the "
        "bridge's 1,000 actions, keeping the score.",
        chance=(
            "The spawn after each move is enumerated: 32 outcomes (an empty cell, times a 2 "
            "with probability 0.9 or a 4), for `search.chance_nodes=true`; by default the "
            "step key draws it. Perfect information."
        ),
        presets_anchor="pgx2048",
        strength="30 minutes of `jaxzero train pgx/2048`: mean score 8,536 [7,825, 9,247] "
        "over 200 games, random 1,085, greedy 2,000 ([pgx games](../pgx.md)).",
    ),
    GamePage(
        slug="pgx_minatar",
        title="pgx: MinAtar",
        ids=tuple(f"pgx/minatar-{g}" for g in MINATAR),
        intro=PGX_NOTE + " MinAtar comes from the separate `pgx-minatar` package (GPL-3.0): "
        "`pip install 'jaxzero[minatar]'`.",
        observation="bool (10, 10, C): one plane per kind of object (paddle, ball, bricks, "
        "trails...), C depending on the game.",
        actions="The game's minimal action set (3 to 6: no-op, left, right, fire...).",
        rewards="One player; the game's points as they come. Truncated at the bridge's 1,000 "
        "actions (freeway also ends itself at 2,500), keeping the score.",
        chance="Sticky actions and spawns come from the step key; not enumerated. Perfect "
        "information.",
        presets_anchor="pgxminatar-",
        strength="Breakout, 15 minutes: mean score 43.2 [39.6, 46.8] (random and greedy "
        "0.4); space invaders, 2,500 iterations: 135.5 [129.4, 141.5] (random 4.0) "
        "([pgx games](../pgx.md)).",
    ),
)


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
    for name, preset in PRESETS.items():
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
        f"| [{p.title}]({p.slug}.md) | {', '.join(f'`{i}`' for i in p.ids)} |" for p in PAGES
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
    return {"index.md": index_text(), **{f"{p.slug}.md": page_text(p) for p in PAGES}}


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
