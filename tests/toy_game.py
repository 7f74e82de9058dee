"""A toy game in one module: its rules, its preset, its own player, its page and its
picture, all registered by one ``jaxzero.register_game(KIT)`` call, with no edit to
jaxzero (tests/games/test_game_kit.py).

Take-away on a board: a row of ``PILE`` stones, a move takes 1 or 2 from the left, and
whoever takes the last stone wins.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import envs
from envs.pictures import Grid
from jaxzero.core.config import Config, SearchConfig, TrainConfig
from jaxzero.core.games import GameKit, GamePage
from jaxzero.measure.opponents import batched, require_game, sample_legal

PILE, MOST = 5, 2


@envs.state_dataclass
class RowState(envs.State):
    stones: jax.Array  # int32 []  stones left in the row


class StoneRow(envs.Env[RowState]):
    """Action a takes a + 1 stones; the observation is the row, one-hot."""

    id = "stone_row"
    num_actions = MOST
    observation_shape = (PILE + 1,)
    max_steps = PILE

    def _init(self, key: jax.Array) -> RowState:
        return self.position(jnp.int32(PILE))

    def _step(self, state: RowState, action: jax.Array, key: jax.Array) -> RowState:
        stones = state.stones - (action + 1)
        mover = state.current_player
        won = jnp.where(jnp.arange(2) == mover, 1.0, -1.0)
        after = self.position(stones, player=1 - mover)
        return after.replace(rewards=jnp.where(stones == 0, won, 0.0))

    def _observe(self, state: RowState, player: jax.Array) -> jax.Array:
        return jax.nn.one_hot(state.stones, PILE + 1)

    def position(self, stones: jax.Array, player: int | jax.Array = 0) -> RowState:
        stones = jnp.asarray(stones, jnp.int32)
        return RowState(
            current_player=jnp.asarray(player, jnp.int32),
            observation=jax.nn.one_hot(stones, PILE + 1),
            legal_action_mask=jnp.arange(MOST) < stones,
            rewards=jnp.zeros(2, jnp.float32),
            terminated=stones <= 0,
            truncated=jnp.bool_(False),
            step_count=jnp.int32(0),
            stones=stones,
        )

    def grid(self, state: RowState) -> Grid:
        """The row: a stone (player 0's piece) in each of the first ``stones`` cells."""
        cells = (np.arange(PILE) < int(state.stones)).astype(np.int64)[None, :]
        return Grid(cells, style="stones")


def leave_three(env: envs.Env) -> object:
    """The row's perfect heuristic: leave a multiple of three stones when it can."""
    require_game(env, "stone_row", "leave_three")

    def act(state: RowState, key: jax.Array) -> jax.Array:
        take = state.stones % 3  # 1 or 2 wins; 0: every move loses, any will do
        winning = jnp.arange(MOST) == take - 1
        legal = state.legal_action_mask
        return sample_legal(key, jnp.where((winning & legal).any(), winning & legal, legal))

    return batched(act)


PRESET = Config(
    game="stone_row",
    search=SearchConfig(num_simulations=8),
    train=TrainConfig(iterations=50),
)
PAGE = GamePage(
    slug="stone_row",
    title="Stone row",
    ids=("stone_row",),
    intro="A row of five stones; a move takes one or two from the left.",
    observation="float32 (6,): the stones left, one-hot.",
    actions="2: take one stone, take two.",
    rewards="+1 to the player who takes the last stone, -1 to the other.",
    chance="None: deterministic, perfect information.",
)
KIT = GameKit(
    "stone_row",
    env=StoneRow,
    preset=PRESET,
    opponents={"leave_three": leave_three},
    heuristic="leave_three",
    page=PAGE,
)
