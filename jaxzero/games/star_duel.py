"""Star Duel (``envs.star_duel``): its heuristic player, the short game's preset, its page."""

from __future__ import annotations

from typing import cast

from envs import star_duel
from envs.core import Env
from jaxzero.core.config import (
    Config,
    EvaluationConfig,
    NetworkConfig,
    OptimConfig,
    ReplayConfig,
    SearchConfig,
    TrainConfig,
)
from jaxzero.core.games import GameKit, GamePage
from jaxzero.measure.opponents import batched, require_game
from jaxzero.measure.players import Player

# The short game (docs/presets.md, "star_duel_short"). Hidden cards: the search is
# determinised. Plain AlphaZero (γ = 1).
SHORT_PRESET = Config(
    game="star_duel_short",
    network=NetworkConfig(kind="mlp"),
    search=SearchConfig(max_num_considered_actions=8),
    replay=ReplayConfig(capacity=100_000, min_size=2_048, augment=False),
    optim=OptimConfig(learning_rate=1e-3),
    evaluation=EvaluationConfig(simulations=64, every=0, games=100),
    train=TrainConfig(iterations=3_000, log_every=10, checkpoint_every=100, keep_every=100),
)


def greedy_player(env: Env) -> Player:
    """Star Duel's heuristic (:func:`envs.star_duel.greedy_action`): play every card, buy
    the most expensive affordable card, destroy bases (outposts first), attack the player,
    end the turn."""
    require_game(env, star_duel.StarDuel.id, "star_duel_greedy")
    # Star Duel's own states, as require_game checked.
    return batched(
        lambda state, key: star_duel.greedy_action(cast("star_duel.StarDuelState", state), key)
    )


PAGE = GamePage(
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
)

_OPPONENTS = {"star_duel_greedy": greedy_player}
KITS = (
    GameKit("star_duel", opponents=_OPPONENTS, heuristic="star_duel_greedy"),
    GameKit(
        "star_duel_short",
        preset=SHORT_PRESET,
        opponents=_OPPONENTS,
        heuristic="star_duel_greedy",
        page=PAGE,
    ),
)
