"""pgx's games through the bridge (``envs.pgx``): their presets, othello's greedy player,
2048's score line, their pages. The rules are pgx's; none is copied here."""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from envs.core import Env, State
from envs.pgx import MINATAR
from jaxzero.core.config import (
    Config,
    EvaluationConfig,
    NetworkConfig,
    OptimConfig,
    ReplayConfig,
    SearchConfig,
    SelfPlayConfig,
    TrainConfig,
)
from jaxzero.core.games import GameKit, GamePage
from jaxzero.measure.opponents import greedy_by, require_game
from jaxzero.measure.players import Player


# pgx's board games, sized as connect_four's preset, not tuned per game. No periodic
# evaluation for hex and animal shogi (evaluate_every 0): one-ply's look-ahead (A x A steps
# a move) costs a large share of the training time at 122 and 132 actions.
def _board(game: str, batch_size: int, evaluate_every: int) -> Config:
    return Config(
        game=game,
        network=NetworkConfig(kind="resnet"),
        selfplay=SelfPlayConfig(batch_size=batch_size, temperature_moves=8),
        replay=ReplayConfig(capacity=100_000, min_size=2_048),
        optim=OptimConfig(updates_per_iteration=batch_size * 16 * 2 // 256),
        evaluation=EvaluationConfig(every=evaluate_every),
        train=TrainConfig(iterations=5_000, keep_every=100),
    )


# Backgammon's outcomes are ±1, ±2 (gammon) and ±3 (backgammon): a categorical value head
# over [-3, 3]. No periodic evaluation: one-ply's look-ahead would cost more than training.
BACKGAMMON = Config(
    game="pgx/backgammon",
    network=NetworkConfig(kind="mlp", value_head="categorical", value_bins=31, value_max=3.0),
    selfplay=SelfPlayConfig(batch_size=128),
    replay=ReplayConfig(capacity=100_000, min_size=2_048, augment=False),
    optim=OptimConfig(learning_rate=1e-3, updates_per_iteration=16),
    evaluation=EvaluationConfig(simulations=16, every=0),
    train=TrainConfig(iterations=5_000, keep_every=100),
)

# 2048 pays its merges as it goes: the value is the discounted score to come (Stochastic
# MuZero's γ), thousands, so a categorical head over h's range. An MLP: the board is 4 x 4.
G2048 = Config(
    game="pgx/2048",
    network=NetworkConfig(
        kind="mlp", hidden_size=256, value_head="categorical", value_bins=201, value_max=20_000.0
    ),
    search=SearchConfig(max_num_considered_actions=4),
    selfplay=SelfPlayConfig(moves_per_iteration=32, discount=0.999),
    replay=ReplayConfig(capacity=100_000, min_size=2_048, augment=False),
    optim=OptimConfig(learning_rate=1e-3, updates_per_iteration=16),
    evaluation=EvaluationConfig(simulations=16, every=100, games=32),
    train=TrainConfig(iterations=5_000, keep_every=100),
)


# MinAtar's five games (the pgx-minatar package): 2048's recipe, with the DQN baselines'
# horizon (γ = 0.99) so that values stay within the head's range. Not tuned per game.
def _minatar(game: str) -> Config:
    return dataclasses.replace(
        G2048,
        game=f"pgx/minatar-{game}",
        network=dataclasses.replace(G2048.network, value_max=300.0),
        search=dataclasses.replace(G2048.search, max_num_considered_actions=6),
        selfplay=dataclasses.replace(G2048.selfplay, discount=0.99),
    )


def othello_greedy(env: Env) -> Player:
    """Othello (``pgx/othello``): the move that leaves the mover the most discs (the most
    flipped), ties at random."""
    require_game(env, "pgx/othello", "othello_greedy")

    def value(state: State, after: State) -> jax.Array:  # float [A] the mover's discs after
        planes = jax.vmap(env.observe, in_axes=(0, None))(after, state.current_player)
        return planes[..., 0].reshape(env.num_actions, -1).sum(-1).astype(jnp.float32)

    return greedy_by(env, value)


def largest_tiles(result: Any) -> str:
    """2048: how often each largest tile was reached, from the final observations (plane
    k set: the tile 2^k), e.g. "largest tile 256: 12%, 512: 61%, 1024: 27%"."""
    exponents = np.asarray(result.final.observation).argmax(-1).reshape(result.games, -1)
    tiles, counts = np.unique(2 ** exponents.max(-1), return_counts=True)
    shares = ", ".join(f"{t}: {c / result.games:.0%}" for t, c in zip(tiles, counts, strict=True))
    return f"largest tile {shares}"


NOTE = (
    "pgx's rules, not copied: the bridge (`envs/pgx.py`, [pgx games](../pgx.md)) wraps "
    "them, and needs `pip install 'jaxzero[pgx]'`."
)
BOARDS_ANCHOR = "pgx-board-games-pgxothello-pgxhex-pgxanimal_shogi"

OTHELLO_PAGE = GamePage(
    slug="pgx_othello",
    title="pgx: Othello",
    ids=("pgx/othello",),
    intro=NOTE,
    observation="bool (8, 8, 2): plane 0 the mover's discs, plane 1 the opponent's.",
    actions="65: the 64 squares row-major, then pass (legal only when nothing else is).",
    rewards="+1 to the player with more discs at the end, -1 to the other; equal is 0.",
    chance="None. Symmetries: the 4 of the square that keep the four starting discs.",
    presets_anchor=BOARDS_ANCHOR,
    strength="30 minutes of `jaxzero train pgx/othello`: 100-0-0 against random and "
    "95-0-5 against greedy (most discs), 100 games each ([pgx games](../pgx.md)).",
)
HEX_PAGE = GamePage(
    slug="pgx_hex",
    title="pgx: Hex 11x11",
    ids=("pgx/hex",),
    intro=NOTE,
    observation=(
        "bool (11, 11, 4): the viewer's stones, the opponent's, a plane of ones when the "
        "viewer is the second player, and a plane of ones when the swap is legal "
        "([pgx's hex](https://sotets.uk/pgx/hex/))."
    ),
    actions="122: the 121 cells row-major, then swap (legal on the second move only).",
    rewards="+1 to the player who connects their two sides, -1 to the other (no draws).",
    chance="None. Symmetries: the half-turn (swap fixed).",
    presets_anchor=BOARDS_ANCHOR,
    strength="30 minutes of `jaxzero train pgx/hex` on a quiet machine: 99-0-1 against "
    "random, 0.990 [0.946, 0.998] ([pgx games](../pgx.md)).",
)
GO_PAGE = GamePage(
    slug="pgx_go",
    title="pgx: Go 9x9 and 19x19",
    ids=("pgx/go_9x9", "pgx/go_19x19"),
    intro=NOTE + " jaxzero's own Go is [another page](go.md).",
    observation=(
        "bool (N, N, 17), AlphaGo Zero's: the mover's and the opponent's stones over the "
        "last 8 positions, and a colour plane ([pgx's go](https://sotets.uk/pgx/go/))."
    ),
    actions="N² + 1: the points row-major, then pass.",
    rewards="Area scoring with komi 7.5: +1 / -1. pgx masks simple ko only and scores a "
    "repeated position as a loss for the mover.",
    chance="None. Symmetries: the 8 of the square.",
    strength="Not trained yet: no preset (`jaxzero.default_config` sizes one).",
)
CHESS_PAGE = GamePage(
    slug="pgx_chess",
    title="pgx: chess and Gardner chess",
    ids=("pgx/chess", "pgx/gardner_chess"),
    intro=NOTE,
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
)
SHOGI_PAGE = GamePage(
    slug="pgx_shogi",
    title="pgx: shogi and animal shogi",
    ids=("pgx/shogi", "pgx/animal_shogi"),
    intro=NOTE,
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
    presets_anchor=BOARDS_ANCHOR,
    strength="Animal shogi, 30 minutes of `jaxzero train pgx/animal_shogi`: 100-0-0 "
    "against random ([pgx games](../pgx.md)). Shogi: not trained yet.",
)
BACKGAMMON_PAGE = GamePage(
    slug="pgx_backgammon",
    title="pgx: backgammon",
    ids=("pgx/backgammon",),
    intro=NOTE,
    observation=(
        "float32 (34,): the 28 checker counts (24 points, the bars and borne-off "
        "checkers; the mover's positive) and, for the mover, how many of each die face "
        "are left to play (6)."
    ),
    actions="156 = 26 x 6: 6 x source + die, the source 0 no move, 1 the bar, 2..25 the 24 points.",
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
)
G2048_PAGE = GamePage(
    slug="pgx_2048",
    title="pgx: 2048",
    ids=("pgx/2048",),
    intro=NOTE,
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
)
MINATAR_PAGE = GamePage(
    slug="pgx_minatar",
    title="pgx: MinAtar",
    ids=tuple(f"pgx/minatar-{g}" for g in MINATAR),
    intro=NOTE + " MinAtar comes from the separate `pgx-minatar` package (GPL-3.0): "
    "`pip install 'jaxzero[minatar]'`.",
    observation="bool (10, 10, C): one plane per kind of object (paddle, ball, bricks, "
    "trails...), C depending on the game.",
    actions="The game's minimal action set (3 to 6: no-op, left, right, fire...).",
    rewards="One player; the game's points as they come. Truncated at the bridge's 1,000 "
    "actions (freeway also ends itself at 2,500), keeping the score.",
    chance="Sticky actions and spawns come from the step key; not enumerated. Perfect information.",
    presets_anchor="pgxminatar-",
    strength="Breakout, 15 minutes: mean score 43.2 [39.6, 46.8] (random and greedy "
    "0.4); space invaders, 2,500 iterations: 135.5 [129.4, 141.5] (random 4.0) "
    "([pgx games](../pgx.md)).",
)

KITS = (
    GameKit(
        "pgx/othello",
        preset=_board("pgx/othello", batch_size=128, evaluate_every=50),
        opponents={"othello_greedy": othello_greedy},
        heuristic="othello_greedy",
        page=OTHELLO_PAGE,
    ),
    GameKit("pgx/hex", preset=_board("pgx/hex", batch_size=64, evaluate_every=0), page=HEX_PAGE),
    GameKit("pgx/go_9x9", page=GO_PAGE),
    GameKit("pgx/chess", page=CHESS_PAGE),
    GameKit(
        "pgx/animal_shogi",
        preset=_board("pgx/animal_shogi", batch_size=128, evaluate_every=0),
        page=SHOGI_PAGE,
    ),
    GameKit("pgx/backgammon", preset=BACKGAMMON, page=BACKGAMMON_PAGE),
    GameKit(
        "pgx/2048",
        preset=G2048,
        heuristic="largest_reward",
        score_summary=largest_tiles,
        page=G2048_PAGE,
    ),
    *(
        GameKit(f"pgx/minatar-{game}", preset=_minatar(game), page=MINATAR_PAGE if i == 0 else None)
        for i, game in enumerate(MINATAR)
    ),
)
