"""The Env contract (pgx-compatible), its optional capabilities and the State base.

Everything here is unbatched: one game, one state. Callers batch with ``jax.vmap``.

A game subclasses :class:`Env` and implements three pure functions:

* ``_init(key) -> State``            the initial position;
* ``_step(state, action, key) -> State`` the rules for a *legal* action in a live game:
  the new board, ``current_player``, ``legal_action_mask``, ``rewards``, ``terminated``
  and ``observation``;
* ``_observe(state, player) -> Array`` the observation from ``player``'s point of view.

:meth:`Env.step` wraps ``_step`` with the conventions every game shares (pgx's):

* a finished game (terminated or truncated) absorbs: stepping it returns the same state
  with zero rewards;
* an illegal action ends the game as a loss for the mover (-1) and a win for the other
  player (+1), so a batch never needs a host-side legality check;
* the game is truncated once ``step_count`` reaches ``max_steps`` without a result;
* the legal mask of a finished game is all ones (never empty: normalising a policy over
  it cannot divide by zero).

Chance, enumerated (optional). A game whose step draws a chance event from its key (a dice
roll, a spawned tile) may list the events, so that a search can weigh them by their
probabilities (explicit chance nodes, ``SearchConfig.chance_nodes``). Such a game sets
``num_chance_outcomes`` C > 0 and implements

* ``_chance_probs(state, action) -> float32 [C]`` the distribution of the move's chance
  event (one-hot at 0 for a move without one);
* ``_step_outcome(state, action, outcome) -> State`` the move with its event fixed,

so that ``step(state, action, key)`` is distributed as ``step_outcome(state, action, o)``
with ``o ~ chance_probs(state, action)``; ``envs.testing.check_chance`` checks it.

Capabilities. What a game may offer beyond the three functions is declared on :class:`Env`
with a default that is right for a game without it, so callers read the declaration and
never probe with ``hasattr``; ``envs.testing.check_env`` checks every capability a game
declares:

==============================  ===========================  ===================================
capability                      declared by                  default
==============================  ===========================  ===================================
chance, enumerated (above)      ``num_chance_outcomes > 0``  0: ``chance_probs`` raises TypeError
hidden information              ``has_hidden_information``   False: ``resample_hidden`` returns
                                                             the state itself
symmetries                      ``symmetries``               the trivial group (identity only)
text notation                   ``action_to_text``,          action numbers; ``render`` shows
                                ``text_to_action``,          whose move it is and the legal
                                ``render``                   moves
a picture (:mod:`envs.pictures`) ``grid`` (a grid game's      ``render``'s text as SVG
                                board) or ``to_svg``
==============================  ===========================  ===================================

Hidden information (optional). A game in which the mover does not see everything (the
other player's cards) sets ``has_hidden_information = True`` and overrides

* ``resample_hidden(state, key) -> State`` a state the mover cannot tell from ``state``,
  drawn with ``key``: the same observation (``observation`` and ``observe(., mover)``),
  mover, legal mask, rewards, ended flags and step count, the hidden part redealt,

which a determinised search calls on its roots (``SearchConfig.determinize``). For a game
of perfect information the only such state is ``state`` itself, so the default returns it;
callers decide whether to determinise by ``env.has_hidden_information``.

The registry is :mod:`envs.registry`: ``make`` of a registered id, a family's id
(``pgx/<name>``) or a ``"module:Class"`` path; ``game_spec``, the string back; and the
games of installed packages, registered through the entry-point group ``jaxzero.games``.
Nothing here knows of any game.
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Sequence
from typing import Any, Generic, TypeVar, dataclass_transform

import jax
import jax.numpy as jnp
import numpy as np

from envs import pictures, symmetry
from envs.pictures import Grid
from envs.symmetry import Symmetries

Array = jax.Array
S = TypeVar("S", bound="State")
T = TypeVar("T")


@dataclass_transform(frozen_default=True)
def state_dataclass(cls: type[T]) -> type[T]:
    """Make ``cls`` a frozen dataclass registered as a JAX pytree (all fields are data)."""
    cls = dataclasses.dataclass(frozen=True)(cls)
    return jax.tree_util.register_dataclass(cls)


@state_dataclass
class State:
    """Fields every game state has. Games subclass it with ``@state_dataclass``."""

    current_player: Array  # int32 []      player to move, 0 .. num_players - 1
    observation: Array  # [*observation_shape] from current_player's point of view
    legal_action_mask: Array  # bool [A]
    rewards: Array  # float32 [P]   reward of the last step, per player (P = num_players)
    terminated: Array  # bool []
    truncated: Array  # bool []
    step_count: Array  # int32 []      actions taken so far

    def replace(self: S, **changes: Any) -> S:
        return dataclasses.replace(self, **changes)

    def _repr_svg_(self) -> str | None:
        """Jupyter's picture of a state (or a batch): its game's ``picture``, the game
        being the last one made that started states of this type and shape (None, a
        plain repr, when there is none)."""
        env = _drawing_env(self)
        return None if env is None else env.picture(self).svg


class Env(abc.ABC, Generic[S]):
    """A game of one or two players with a fixed action space, its states of type ``S``.

    A game subclasses it, sets the attributes below (as class attributes or in
    ``__init__``) and implements the methods below; the capabilities (see the module
    docstring) have defaults that are right for a game without them, and
    ``envs.check_env(env)`` checks all of it. Shapes: A is ``num_actions``, P
    ``num_players``, C ``num_chance_outcomes``; everything is unbatched.

    Attributes:
        id (str): the game's id, as ``envs.make`` takes it (``"connect_four"``). Required.
        num_actions (int): A, the size of the fixed action space; an action is an int32 in
            ``0 .. A - 1`` and ``State.legal_action_mask`` is bool [A]. Required.
        observation_shape (tuple[int, ...]): the shape of ``State.observation`` and of
            ``_observe``'s result, boards as (H, W, C) planes. Required.
        max_steps (int): the most actions a game lasts; ``step`` truncates it there
            (``State.truncated``) if it has not ended. Required.
        num_players (int): P, 1 or 2 (default 2); ``State.rewards`` is float32 [P].
        version (int | str): the rules' version, recorded with what is trained on them;
            bump it when the rules change (default 1; pgx games: pgx's own).
        num_chance_outcomes (int): C > 0 when the game enumerates its chance events and
            implements ``_chance_probs`` and ``_step_outcome`` (default 0: none).
        has_hidden_information (bool): True when the mover does not see everything and the
            game overrides ``resample_hidden`` (default False).
        turns_alternate (bool): two players: the turn passes at every move (default True);
            False where a player may move twice running, which a learned model refuses.
        symmetries (Symmetries): the symmetry group, identity first, as index tables over the
            observation's positions and the actions (``envs.symmetry``; default the
            trivial group).

    Methods:
        _init: ``_init(key) -> S``, required: the initial state for the PRNG ``key``
            (games without random set-ups ignore it): ``current_player`` int32 [],
            ``observation`` [*observation_shape], ``legal_action_mask`` bool [A],
            ``rewards`` float32 [P] (zeros), ``terminated`` and ``truncated`` bool []
            (False), ``step_count`` int32 [] (0).
        _step: ``_step(state, action, key) -> S``, required: the rules for a legal
            ``action`` (int32 []) in a live game: the new board, ``current_player``,
            ``legal_action_mask`` [A], ``rewards`` [P] of this step, ``terminated`` and
            ``observation``. ``step`` handles illegal actions, finished games,
            ``step_count`` and truncation.
        _observe: ``_observe(state, player) -> Array``, required: the observation
            [*observation_shape] of ``state`` from ``player``'s (int32 []) point of view.
        _chance_probs: ``_chance_probs(state, action) -> Array``, with
            ``num_chance_outcomes`` C > 0: float32 [C], the distribution of the move's
            chance event (one-hot at 0 for a move without one).
        _step_outcome: ``_step_outcome(state, action, outcome) -> S``, with
            ``num_chance_outcomes`` C > 0: ``_step`` with the chance event ``outcome``
            (int32 [], < C) fixed.
        resample_hidden: ``resample_hidden(state, key) -> S``, with
            ``has_hidden_information``: a state the mover cannot tell from ``state``, its
            hidden part redealt with ``key`` (default: ``state`` itself).
        action_to_text: ``action_to_text(action) -> str``, optional: an action in the
            game's notation (default: its index).
        text_to_action: ``text_to_action(text) -> int``, optional: the inverse, ValueError
            with a one-line reason when malformed (default: an action index).
        render: ``render(state) -> str``, optional: a picture of one state (default: whose
            move it is and the legal moves).
        grid: ``grid(state) -> envs.pictures.Grid | None``, optional: a grid game's board
            (who holds each cell, how pieces look), which ``to_svg`` draws (default None).
        to_svg: ``to_svg(state) -> str``, optional: one state as an SVG document (default:
            ``grid``'s drawing, else ``render``'s text; ``picture`` shows it, or a batch).
    """

    id: str
    # The rules' version, recorded with what is trained on them: bump it when the rules
    # change, so that a run of the old rules is told apart (pgx games: pgx's own).
    version: int | str = 1
    num_players: int = 2
    num_actions: int
    observation_shape: tuple[int, ...]
    max_steps: int
    num_chance_outcomes: int = 0  # C > 0: the game enumerates its chance events (see above)
    has_hidden_information: bool = False  # True: resample_hidden redeals what the mover can't see
    # Two players: the turn passes at every move. False where a player may move twice running
    # (star_duel's turns, backgammon's dice): a learned model, which cannot see whose turn
    # it is, refuses such a game.
    turns_alternate: bool = True

    @property
    def symmetries(self) -> Symmetries:
        """The game's symmetry group (:mod:`envs.symmetry`), identity first; a subclass sets
        its own as an attribute. Default: the trivial group, the observation one position."""
        group = self.__dict__.get("symmetries")
        return group if group is not None else symmetry.identity(1, self.num_actions)

    @symmetries.setter
    def symmetries(self, group: Symmetries) -> None:
        self.__dict__["symmetries"] = group

    def init(self, key: Array) -> S:
        """The initial state. ``key`` seeds games with random set-ups (e.g. shuffles)."""
        state = self._init(key)
        drawn = (type(state), tuple(self.observation_shape))
        _STARTED.pop(drawn, None)
        _STARTED[drawn] = self  # the last game to start such states draws them
        return state

    def step(self, state: S, action: Array, key: Array | None = None) -> S:
        """Play ``action`` for ``state.current_player``; see the module docstring for rules."""
        if key is None:
            key = jax.random.key(0)
        action = jnp.asarray(action, jnp.int32)
        return self._settle(state, action, self._step(state, action, key))

    def chance_probs(self, state: S, action: Array) -> Array:
        """float32 [C]: the distribution of ``action``'s chance event in ``state`` (one-hot
        at 0 where nothing is left to chance: a finished game, an illegal move)."""
        if self.num_chance_outcomes == 0:
            raise TypeError(f"{self.id} does not enumerate its chance events")
        action = jnp.asarray(action, jnp.int32)
        certain = jnp.zeros(self.num_chance_outcomes, jnp.float32).at[0].set(1.0)
        settled = state.terminated | state.truncated | ~state.legal_action_mask[action]
        return jnp.where(settled, certain, self._chance_probs(state, action))

    def step_outcome(self, state: S, action: Array, outcome: Array) -> S:
        """:meth:`step` with the chance event ``outcome`` (< C) instead of a key's draw."""
        action = jnp.asarray(action, jnp.int32)
        outcome = jnp.asarray(outcome, jnp.int32)
        return self._settle(state, action, self._step_outcome(state, action, outcome))

    def _settle(self, state: S, action: Array, nxt: S) -> S:
        """The conventions of the module docstring applied to ``nxt = _step(state, action)``."""
        mover = state.current_player
        illegal = ~state.legal_action_mask[action]
        step_count = state.step_count + 1
        players = jnp.arange(self.num_players)
        loss_for_mover = jnp.where(players == mover, -1.0, 1.0).astype(jnp.float32)
        rewards = jnp.where(illegal, loss_for_mover, nxt.rewards)
        terminated = nxt.terminated | illegal
        truncated = ~terminated & (step_count >= self.max_steps)
        legal = nxt.legal_action_mask | terminated | truncated
        nxt = nxt.replace(
            rewards=rewards,
            terminated=terminated,
            truncated=truncated,
            legal_action_mask=legal,
            step_count=step_count,
        )

        done = state.terminated | state.truncated
        absorbed = state.replace(rewards=jnp.zeros_like(state.rewards))
        return jax.tree.map(lambda a, b: jnp.where(done, a, b), absorbed, nxt)

    def resample_hidden(self, state: S, key: Array) -> S:
        """A state the mover cannot tell from ``state``, its hidden part drawn with ``key``
        (see the module docstring). Default, for perfect information: ``state`` itself."""
        del key
        return state

    def observe(self, state: S, player: Array) -> Array:
        """The observation of ``state`` from ``player``'s point of view."""
        return self._observe(state, jnp.asarray(player, jnp.int32))

    def action_to_text(self, action: int) -> str:
        """An action in the game's own notation (default: its index)."""
        return str(int(action))

    def text_to_action(self, text: str) -> int:
        """Parse the game's notation; ValueError with a one-line reason when malformed.

        Only the notation is checked here; whether the move is legal depends on the state.
        """
        try:
            action = int(text.strip())
        except ValueError:
            raise ValueError(f"{text.strip()!r} is not an action number") from None
        if not 0 <= action < self.num_actions:
            raise ValueError(f"action {action} is outside 0..{self.num_actions - 1}")
        return action

    def render(self, state: S) -> str:
        """A human-readable picture of one (unbatched) state; a game without a picture of
        its own shows whose move it is and the legal moves (what ``jaxzero play`` needs)."""
        legal = [self.action_to_text(int(a)) for a in np.flatnonzero(state.legal_action_mask)]
        return (
            f"{self.id}, ply {int(state.step_count)}: player {int(state.current_player)} to "
            f"move; legal: {' '.join(legal)}"
        )

    def grid(self, state: S) -> Grid | None:
        """A grid game's board as its picture draws it (None: not a grid game)."""
        return None

    def to_svg(self, state: S) -> str:
        """One (unbatched) state as an SVG document: the game's ``grid`` drawn, or its
        text picture (``render``)."""
        grid = self.grid(state)
        under = caption(self, state)
        if grid is not None:
            return pictures.grid_svg(grid, under)
        return pictures.text_svg(self.render(state), under)

    def picture(self, state: S, limit: int = 16) -> pictures.Picture:
        """``state`` as a picture Jupyter displays; a batch (a leading axis) as a grid of
        its first ``limit`` states."""
        if np.ndim(state.step_count) == 0:
            return pictures.Picture(self.to_svg(state))
        count = min(int(np.shape(state.step_count)[0]), limit)
        one = lambda i: jax.tree.map(lambda x: x[i], state)  # noqa: E731
        return pictures.Picture(pictures.tile([self.to_svg(one(i)) for i in range(count)]))

    @abc.abstractmethod
    def _init(self, key: Array) -> S: ...

    @abc.abstractmethod
    def _step(self, state: S, action: Array, key: Array) -> S: ...

    @abc.abstractmethod
    def _observe(self, state: S, player: Array) -> Array: ...

    def _chance_probs(self, state: S, action: Array) -> Array:
        raise TypeError(f"{self.id} does not enumerate its chance events")

    def _step_outcome(self, state: S, action: Array, outcome: Array) -> S:
        raise TypeError(f"{self.id} does not enumerate its chance events")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(id={self.id!r})"


# (state type, observation shape) -> the last game that started such states: who draws them
_STARTED: dict[tuple[type, tuple[int, ...]], Env] = {}


def _drawing_env(state: State) -> Env | None:
    """The game that draws ``state`` (one state, or a batch along its leading axes)."""
    shape = tuple(np.shape(state.observation))
    for (kind, observed), env in reversed(_STARTED.items()):
        if kind is type(state) and shape[len(shape) - len(observed) :] == observed:
            return env
    return None


def caption(env: Env, state: State, names: Sequence[str] = ()) -> str:
    """Under a picture: the ply, and whose move it is or that the game is over; the
    mover by ``names[player]`` where given (``Red to move``), else ``player N``."""
    ply = f"{env.id}, ply {int(state.step_count)}"
    if bool(state.truncated):
        return f"{ply}: over (truncated)"
    if bool(state.terminated):
        return f"{ply}: game over"
    mover = int(state.current_player)
    return f"{ply}: {names[mover] if mover < len(names) else f'player {mover}'} to move"
