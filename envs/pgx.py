"""The pgx bridge: any perfect-information pgx game of one or two players as an :class:`Env`.

    env = envs.make("pgx/othello")          # or envs.from_pgx(pgx.make("othello"))

pgx is an optional dependency (``pip install 'jaxzero[pgx]'``). The rules are pgx's, not
copied: the bridge's state holds pgx's state, and a step is pgx's ``step``. pgx's
conventions are ours (a finished game absorbs with zero rewards, an illegal action loses
for the mover, a finished game's legal mask is all ones), so the bridge only adds:

* ``max_steps``: pgx never truncates, while every Env ends by ``max_steps``. For games
  that pgx itself ends (``_MAX_STEPS``: go at 2·size², chess and shogi at 512, animal
  shogi and gardner chess at 256; tic-tac-toe, Connect Four, othello and hex by their
  board) the bound is never reached first; backgammon, 2048 and MinAtar have no bound
  (freeway ends itself at 2,500), and are truncated at 1,000 actions unless ``max_steps``
  says otherwise (a backgammon game truncated is a draw; a 2048 or MinAtar game keeps the
  score it made: random 2048 play ends by about 150 moves, a 2048 tile takes about 1,000).
* ``symmetries``: the 8 of the square for go and the 4 of them that keep othello's
  starting discs (pass fixed), the half-turn for hex (swap fixed), identity for the
  others: a wrong group is worse than none.
  ``envs.testing.check_symmetries`` checks each against pgx's rules.
* ``step_count``: pgx's ``_step_count``; integer observations become float32.
* chance, enumerated (``num_chance_outcomes``, :mod:`envs.core`) for the two pgx games
  with chance: 2048's spawn (32 outcomes: the cell, and a 2 with probability 0.9 or a 4)
  and backgammon's roll at the end of a turn (36 outcomes: the two dice in pgx's order,
  1/36 each). Its ``step_outcome`` is pgx's own ``step`` with the game's ``_step``
  replaced by the same rules, pgx's functions, with the event given instead of drawn;
  ``tests/envs/test_pgx_bridge.py`` checks it against pgx's ``step`` key by key.

Refused, with the reason: games with hidden information (a search over the true state
would see the opponent's cards, and a determinised search needs ``resample_hidden``, which
pgx does not provide) and games of more than two players. Single-player games (2048,
MinAtar) pay scores, not ±1: train them with a categorical value head
(``network.value_head=categorical``, ``jaxzero.core.values``).

The games are registered by jaxzero's entry point in the group ``jaxzero.games``
(:mod:`envs.registry`): :func:`register` adds ``pgx/<id>`` for each id of :data:`GAMES`
and the family ``pgx/``, so that any other pgx id is built, or refused with the reason.

MinAtar's five games (``pgx/minatar-breakout``...) live in the separate ``pgx-minatar``
package, which pgx's ``make`` imports. It is GPL-3.0 (MinAtar's licence), so it is an
extra of its own (``pip install 'jaxzero[minatar]'``), never pulled in by ``jaxzero[pgx]``;
without it the error says so. Its randomness (sticky actions, spawns) is the step key.
"""

from __future__ import annotations

import copy
import functools
from importlib import metadata
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from envs import registry, symmetry
from envs.core import Env, State, state_dataclass

Array = jax.Array

# MinAtar's games, "minatar-<name>" in pgx (the pgx-minatar package)
MINATAR = ("asterix", "breakout", "freeway", "seaquest", "space_invaders")
# The pgx games the bridge builds: the step bound, pgx's or the bridge's.
_MAX_STEPS = {
    "tic_tac_toe": 9,
    "connect_four": 42,
    "othello": 121,  # 60 discs and at most 61 passes (two in a row end the game)
    "hex": 122,  # 121 cells and one swap
    "go_9x9": 162,
    "go_19x19": 722,
    "animal_shogi": 256,
    "gardner_chess": 256,
    "chess": 512,
    "shogi": 512,
    "backgammon": 1000,  # pgx has no bound: the bridge's cap
    "2048": 1000,  # pgx has no bound: the bridge's cap
    # MinAtar (the pgx-minatar package): no bound but freeway's own 2,500-step timer
    **{f"minatar-{game}": 1000 for game in MINATAR},  # the bridge's cap
}
GAMES = tuple(_MAX_STEPS)  # the pgx ids the bridge builds (registered as pgx/<id>)
_HIDDEN = ("kuhn_poker", "leduc_holdem", "sparrow_mahjong", "bridge_bidding")


def register() -> None:
    """Register ``pgx/<id>`` for each of :data:`GAMES` and the family ``pgx/`` (any other
    pgx id): the entry point ``pgx`` of the group ``jaxzero.games``."""
    for game_id in GAMES:
        registry.register(f"pgx/{game_id}", make_pgx, game_id=game_id)
    registry.register("pgx/", make_pgx)


def refusal(game_id: str) -> str | None:
    """Why the bridge does not build ``game_id`` (a pgx id), or None if it does."""
    if game_id in _HIDDEN:
        return (
            f"pgx/{game_id} has hidden information: a search over the true state would see "
            "the opponent's cards, and jaxzero's determinised search needs resample_hidden, "
            "which pgx does not provide"
        )
    return None


def _2048_slide(inner, action: Array) -> tuple[Array, Array]:
    """pgx 2048's move before its spawn: the board int32 [4, 4] and the merges' reward."""
    from pgx import play2048

    turns = lambda board, sign: jax.lax.switch(  # noqa: E731
        action, [lambda b=board, k=k: jnp.rot90(b, sign * k) for k in range(4)]
    )
    board, reward = jax.vmap(play2048._slide_and_merge)(turns(inner._board.reshape(4, 4), 1))
    return turns(board, -1), reward.sum()


def _2048_probs(inner, action: Array) -> Array:
    """float32 [32]: outcome 2c + t spawns the tile 2^(t+1) on the empty cell c."""
    empty = (_2048_slide(inner, action)[0].ravel() == 0).astype(jnp.float32)  # [16]
    cells = empty / jnp.maximum(empty.sum(), 1.0)
    return jnp.stack([0.9 * cells, 0.1 * cells], axis=-1).reshape(32)


def _2048_step(inner, action: Array, outcome: Array):
    """pgx 2048's ``_step`` with the spawn given by ``outcome``."""
    from pgx import play2048

    board, reward = _2048_slide(inner, action)
    board = board.ravel().at[outcome // 2].set(1 + outcome % 2).reshape(4, 4)
    legal = play2048._legal_action_mask(board)
    return inner.replace(
        _board=board.ravel(),
        rewards=jnp.float32([reward]),
        legal_action_mask=legal,
        terminated=~legal.any(),
    )


def _backgammon_rolls(moved, action: Array) -> tuple[Array, Array]:
    """Whether pgx backgammon's move ends the game, and whether it rolls the dice."""
    from pgx import backgammon

    won = backgammon._is_all_off(moved._board)
    return won, ~won & (backgammon._is_turn_end(moved) | (action // 6 == 0))


def _backgammon_probs(inner, action: Array) -> Array:
    """float32 [36]: outcome 6i + j rolls the dice (i, j) in pgx's order, 1/36 each."""
    from pgx import backgammon

    _, rolls = _backgammon_rolls(backgammon._update_by_action(inner, action), action)
    certain = jnp.zeros(36, jnp.float32).at[0].set(1.0)
    return jnp.where(rolls, jnp.full(36, 1 / 36, jnp.float32), certain)


def _backgammon_step(inner, action: Array, outcome: Array):
    """pgx backgammon's ``_step`` with the next roll given by ``outcome``."""
    from pgx import backgammon

    moved = backgammon._update_by_action(inner, action)
    won, rolls = _backgammon_rolls(moved, action)
    dice = jnp.stack([outcome // 6, outcome % 6]).astype(jnp.int32)

    def turn():  # pgx's change of turn, its roll replaced by the dice given
        changed = backgammon._change_turn(moved, jax.random.key(0))
        return changed.replace(
            _dice=dice,
            _playable_dice=backgammon._set_playable_dice(dice),
            legal_action_mask=backgammon._legal_action_mask(changed._board, dice),
        )

    return jax.lax.cond(
        won,
        lambda: backgammon._winning_step(moved),
        lambda: jax.lax.cond(rolls, turn, lambda: moved),
    )


# pgx games whose chance events the bridge enumerates: (C, probs, step with the outcome).
_CHANCE = {
    "2048": (32, _2048_probs, _2048_step),
    "backgammon": (36, _backgammon_probs, _backgammon_step),
}


def _pgx():
    try:
        import pgx
    except ImportError:
        raise ImportError(
            "the pgx games need pgx, which is not installed: pip install 'jaxzero[pgx]'"
        ) from None
    return pgx


def make_pgx(game_id: str, max_steps: int | None = None, **kwargs: Any) -> PgxEnv:
    """``pgx.make(game_id, **kwargs)`` as an Env; ValueError saying why if refused."""
    reason = refusal(game_id)
    if reason is not None:
        raise ValueError(reason)
    pgx = _pgx()
    if game_id not in pgx.available_envs():
        raise ValueError(
            f"pgx has no game {game_id!r}; its games are: {', '.join(pgx.available_envs())}"
        )
    try:
        pgx_env = pgx.make(game_id, **kwargs)
    except ImportError:
        if not game_id.startswith("minatar-"):
            raise
        raise ImportError(
            f"pgx/{game_id} needs pgx-minatar (GPL-3.0, MinAtar's licence), which is not "
            "installed: pip install 'jaxzero[minatar]'"
        ) from None
    return from_pgx(pgx_env, max_steps=max_steps)


def from_pgx(pgx_env, max_steps: int | None = None) -> PgxEnv:
    """Wrap a pgx env (``pgx.make(...)``); ``max_steps`` overrides the table above."""
    game_id = str(pgx_env.id)
    reason = refusal(game_id)
    if reason is None and pgx_env.num_players not in (1, 2):
        reason = f"pgx/{game_id} has {pgx_env.num_players} players; jaxzero plays one or two"
    if reason is not None:
        raise ValueError(reason)
    if max_steps is None:
        if game_id not in _MAX_STEPS:
            raise ValueError(
                f"pgx/{game_id}: no known bound on its length; pass max_steps=N to truncate it"
            )
        max_steps = _MAX_STEPS[game_id]
    return PgxEnv(pgx_env, max_steps)


@state_dataclass
class PgxState(State):
    pgx: Any  # pgx's own state, its observation a 1-element stub (ours is the copy)


def _symmetries(game_id: str, observation_shape: tuple[int, ...], num_actions: int,
                initial_observation) -> symmetry.Symmetries:  # fmt: skip
    cells = int(np.prod(observation_shape[:2])) if len(observation_shape) == 3 else 0
    if game_id in ("othello", "go_9x9", "go_19x19"):
        n = observation_shape[0]
        group = symmetry.dihedral(n, extra_actions=num_actions - n * n)
        # Keep the elements that fix the starting position: all 8 for go; for othello the 4
        # that keep its four centre discs (a quarter-turn swaps their colours).
        start = np.asarray(initial_observation()).reshape(n * n, -1)
        keep = [s for s in range(8) if np.array_equal(start[group.observation_index[s]], start)]
        return symmetry.Symmetries(group.observation_index[keep], group.action_index[keep])
    if game_id == "hex":
        turn = np.arange(cells, dtype=np.int32)[::-1]  # row-major reversed: the half-turn
        extras = np.arange(cells, num_actions, dtype=np.int32)
        return symmetry.Symmetries(
            observation_index=np.stack([np.arange(cells, dtype=np.int32), turn]),
            action_index=np.stack([np.arange(num_actions), np.concatenate([turn, extras])]).astype(
                np.int32
            ),
        )
    positions = cells if cells else 1
    return symmetry.identity(positions, num_actions)


def _pgx_version(pgx_env: Any) -> str:
    """pgx's version of the game's rules ("v0"), else pgx's package version: pgx versions
    its envs, and an env it does not version changes only with pgx."""
    own = getattr(type(pgx_env), "version", None)  # pgx.Env declares it; a wrapped env may not
    return str(pgx_env.version) if own is not None else f"pgx {metadata.version('pgx')}"


class PgxEnv(Env[PgxState]):
    """A pgx game behind the Env contract (see the module docstring)."""

    def __init__(self, pgx_env, max_steps: int):
        self.pgx_env = pgx_env
        self.id = f"pgx/{pgx_env.id}"
        self.version = _pgx_version(pgx_env)
        # pgx's own num_actions and observation_shape each run init op by op (seconds for
        # chess or go 19x19); their shapes come as well from one trace of it.
        mask, observation = jax.eval_shape(functools.partial(_start, pgx_env), jax.random.key(0))
        self.num_actions = int(mask.shape[0])
        self.observation_shape = tuple(int(d) for d in observation.shape)
        self.max_steps = int(max_steps)
        self.num_players = int(pgx_env.num_players)
        # The starting position is computed only for the games whose group depends on it.
        start = lambda: jax.jit(pgx_env.init)(jax.random.key(0)).observation  # noqa: E731
        self.symmetries = _symmetries(
            str(pgx_env.id), self.observation_shape, self.num_actions, start
        )
        self._chance = _CHANCE.get(str(pgx_env.id))
        self.num_chance_outcomes = self._chance[0] if self._chance else 0
        self.turns_alternate = str(pgx_env.id) != "backgammon"  # a turn: a move a die

    def _wrap(self, inner) -> PgxState:
        inner = jax.tree.map(jnp.asarray, inner)  # some pgx defaults are Python numbers
        return PgxState(
            current_player=inner.current_player.astype(jnp.int32),
            observation=_float_unless_bool(inner.observation),
            legal_action_mask=inner.legal_action_mask,
            rewards=inner.rewards.astype(jnp.float32),
            terminated=inner.terminated,
            truncated=jnp.bool_(False),
            step_count=inner._step_count.astype(jnp.int32),
            # One element, not zero: orbax refuses to checkpoint a zero-size array.
            pgx=inner.replace(observation=jnp.zeros((1,), inner.observation.dtype)),
        )

    def _init(self, key: Array) -> PgxState:
        return self._wrap(self.pgx_env.init(key))

    def _step(self, state: PgxState, action: Array, key: Array) -> PgxState:
        return self._wrap(self.pgx_env.step(state.pgx, action, key))

    def _chance_probs(self, state: PgxState, action: Array) -> Array:
        if self._chance is None:
            return super()._chance_probs(state, action)
        return self._chance[1](state.pgx, action)

    def _step_outcome(self, state: PgxState, action: Array, outcome: Array) -> PgxState:
        if self._chance is None:
            return super()._step_outcome(state, action, outcome)
        # pgx's own step (its conventions: absorbing, illegal moves, the terminal mask, the
        # observation) around the game's rules with the event given: a copy of the env whose
        # _step ignores the key.
        fixed = copy.copy(self.pgx_env)
        fixed._step = lambda inner, a, key: self._chance[2](inner, a, outcome)
        return self._wrap(fixed.step(state.pgx, action, jax.random.key(0)))

    def to_svg(self, state: PgxState) -> str:
        """pgx's own drawing of the state (``pgx.State.to_svg``; the observation, which
        the bridge keeps beside pgx's state, put back for it)."""
        inner = jax.tree.map(jnp.asarray, state.pgx.replace(observation=state.observation))
        return str(inner.to_svg())  # (pgx's drawing code takes jax arrays, not numpy's)

    def render(self, state: PgxState) -> str:
        """The mover's stones X, the opponent's O (othello, hex, go: their first two
        observation planes), then who moves; 2048's tiles, then the step; other games
        only the last line."""
        lines = []
        game_id = str(self.pgx_env.id)
        planes = np.asarray(jax.device_get(state.observation))
        step = int(state.step_count)
        if game_id in ("othello", "hex", "go_9x9", "go_19x19"):
            board = np.where(planes[..., 0] > 0, "X", np.where(planes[..., 1] > 0, "O", "."))
            lines = [" ".join(row) for row in board]
        if game_id == "2048":  # plane k set: the tile 2^k (plane 0: empty)
            exponent = planes.argmax(-1)
            tiles = np.where(exponent > 0, 2**exponent, 0)
            lines = [" ".join(f"{t:>5}" if t else "    ." for t in row) for row in tiles]
            return "\n".join([*lines, f"step {step}"])
        player = int(state.current_player)
        return "\n".join([*lines, f"step {step}, player {player} to move (X)"])

    def _observe(self, state: PgxState, player: Array) -> Array:
        return _float_unless_bool(self.pgx_env._observe(state.pgx, player))


def _start(pgx_env, key: Array) -> tuple[Array, Array]:
    """The legal mask [A] and the mover's observation of pgx's starting position."""
    state = pgx_env.init(key)
    return state.legal_action_mask, pgx_env._observe(state, state.current_player)


def _float_unless_bool(observation: Array) -> Array:
    """Integer observations (backgammon's checker counts) as float32, as the contract asks."""
    if observation.dtype == jnp.bool_ or jnp.issubdtype(observation.dtype, jnp.floating):
        return observation
    return observation.astype(jnp.float32)
