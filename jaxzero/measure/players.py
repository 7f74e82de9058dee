"""Players: one type for everything that chooses moves in a match or a command.

A player is ``player(params, states [G], key) -> actions int32 [G]``: pure and jit-safe,
over a batch of env states. Networks take their variables as ``params``; fixed opponents
(:mod:`jaxzero.measure.opponents`) take ``None``. Two players:

* :class:`SearchPlayer` — noise-free search (PUCT or Gumbel) and its greedy choice: the
  agent at full strength, as the gate, the periodic evaluation, ``eval``, ``play``,
  ``gtp`` and ``Agent.act`` play it;
* :class:`RawPolicyPlayer` — the network alone: argmax of its legal logits.

A search player whose config has ``reuse_tree`` also plays with a memory: its carried
search trees (:meth:`SearchPlayer.empty_trees`, :meth:`~SearchPlayer.act` grows them,
:meth:`~SearchPlayer.carry` follows every move played, its own and the opponent's), which
the match engine, ``play`` and ``gtp`` keep between moves; called as a plain player it
searches from a fresh tree.

Players are frozen dataclasses that compare by what they compute, so a match of a
search player against itself can share one batched search between two networks
(:func:`jaxzero.measure.match.make_match`). ``player.jitted`` is the player compiled
for a direct call; the player object owns it.

    player = evaluation_player(config, env, apply_fn, policy)   # evaluation strength
    actions = player.jitted(params, states, key)        # int32 [G]
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any, Protocol

import jax
import jax.numpy as jnp

from envs.core import Env, State
from jaxzero.core import mcts, networks, search
from jaxzero.core.config import Config, check_evaluation_simulations
from jaxzero.core.memory import check_search_memory
from jaxzero.core.networks import ApplyFn
from jaxzero.core.policies import SearchPolicy
from jaxzero.core.search import SearchOptions

Array = jax.Array

__all__ = ["Player", "RawPolicyPlayer", "SearchPlayer", "evaluation_network", "evaluation_player"]


class Player(Protocol):
    """Anything that chooses moves in a match or a command: pure and jit-safe."""

    def __call__(self, params: Any, states: State, key: Array, /) -> Array:
        """Moves for a batch of positions.

        Args:
            params: the network's variables; fixed opponents take None.
            states: G env states.
            key: a PRNG key.

        Returns:
            int32 [G]: a legal action per state.
        """
        ...


class _Jitted:
    __call__: Callable[[Any, State, Array], Array]  # the player itself (subclasses define it)

    @functools.cached_property
    def jitted(self) -> Callable[[Any, State, Array], Array]:
        """This player as one compiled function (compiled on its first call, kept here)."""
        return jax.jit(self.__call__)


@dataclasses.dataclass(frozen=True)
class SearchPlayer(_Jitted):
    """Noise-free search with ``num_simulations`` simulations of ``policy``, then its
    greedy choice (``policy.greedy_action``).

    A :class:`Player`; with ``options.reuse_tree`` it also keeps
    carried trees through :meth:`empty_trees`, :meth:`act` and :meth:`carry`.

    Attributes:
        env: the game searched.
        apply_fn: the network the search evaluates (``evaluation_network``).
        policy: the search policy (:mod:`jaxzero.core.policies`).
        num_simulations: simulations per move, >= 1.
        options: how the env is searched (determinisation, chance nodes, tree reuse).

    Raises:
        ValueError: ``num_simulations`` < 1, or beyond what a tree of the game may hold.
    """

    env: Env
    apply_fn: ApplyFn  # the network the search evaluates (evaluation_network)
    policy: SearchPolicy
    num_simulations: int
    options: SearchOptions = SearchOptions()

    def __post_init__(self) -> None:
        if self.num_simulations < 1:
            raise ValueError(f"simulations must be >= 1, got {self.num_simulations}")
        check_evaluation_simulations(self.num_simulations, "simulations")  # before any tree
        check_search_memory(self.env, self.num_simulations, "simulations")

    def __call__(self, params: Any, states: State, key: Array) -> Array:
        """The greedy move of a fresh noise-free search from each state.

        Args:
            params: the network's variables.
            states: G env states.
            key: a PRNG key.

        Returns:
            int32 [G]: a legal action per state.
        """
        return self.policy.greedy_action(self.search(params, states, key))

    def search(self, params: Any, states: State, key: Array):
        """The noise-free search itself, from a fresh tree.

        Args:
            params: the network's variables.
            states: G env states.
            key: a PRNG key.

        Returns:
            mctx's PolicyOutput over the G states: ``action`` [G], ``action_weights``
            float32 [G, A], ``search_tree``.
        """
        return search.run_search(
            params,
            states,
            key,
            self.env,
            self.apply_fn,
            self.policy,
            options=self.options,
            num_simulations=self.num_simulations,
            noise=False,
        )

    @functools.cached_property
    def jitted_search(self) -> Callable[[Any, State, Array], Any]:
        """:meth:`search` as one compiled function (compiled on its first call, kept here:
        an analysis of one position after another compiles once)."""
        return jax.jit(self.search)

    def replace(self, **changes: Any) -> SearchPlayer:
        return dataclasses.replace(self, **changes)

    @property
    def reuses_tree(self) -> bool:
        """Whether this player keeps its search trees between moves (``reuse_tree``)."""
        return self.options.reuse_tree

    def empty_trees(self, states: State, params: Any = None) -> mcts.Tree:
        """Empty carried trees for ``states`` [G] (a new game's memory). Given ``params``,
        they are placed as :meth:`act`'s grown trees will be (on the parameters' devices),
        so that a caller's compiled ``act`` sees one input type from the first move on.

        Args:
            states: G env states (their batch size and the env's actions size the trees).
            params: the network's variables, to place the trees alike; None: not placed.

        Returns:
            G empty trees (``jaxzero.core.mcts.Tree``, leading axis [G]), each with room
            for a search of ``num_simulations``.
        """
        trees = search.empty_trees(states, self.num_simulations, self.env.num_actions)
        if params is None:
            return trees
        return jax.device_put(trees, jax.tree.leaves(params)[0].sharding)

    def act(self, params: Any, states: State, trees: Any, key: Array) -> tuple[Array, Any]:
        """The greedy move from a search grown from the carried ``trees`` [G] (used where
        their root is the position), and the grown trees.

        Args:
            params: the network's variables.
            states: G env states.
            trees: G carried trees (:meth:`empty_trees`, or :meth:`carry` after a move).
            key: a PRNG key.

        Returns:
            ``(actions int32 [G], trees [G])``: a legal action per state and the grown
            trees (without the search's noise), to :meth:`carry` after the move.
        """
        output = search.run_search(
            params, states, key, self.env, self.apply_fn, self.policy, options=self.options,
            num_simulations=self.num_simulations, noise=False, tree=trees,
        )  # fmt: skip
        tree = output.search_tree.replace(extra_data=None)  # a search's noise stays with it
        return self.policy.greedy_action(output), tree

    def carry(self, trees: Any, actions: Array) -> Any:
        """The trees [G] after ``actions`` [G] are played from their roots.

        Args:
            trees: G carried trees, as :meth:`act` returned them.
            actions: int32 [G], the move played in each game (by either side).

        Returns:
            G trees: each the played child's subtree, cut to leave room for the next
            search of ``num_simulations``.
        """
        return search.carry_tree(trees, actions, self.num_simulations)

    @functools.cached_property
    def jitted_act(self) -> Callable[[Any, State, Any, Array], tuple[Array, Any]]:
        """:meth:`act` compiled, for a caller that keeps the trees between moves."""
        return jax.jit(self.act)

    @functools.cached_property
    def jitted_carry(self) -> Callable[[Any, Array], Any]:
        """:meth:`carry` compiled."""
        return jax.jit(self.carry)


@dataclasses.dataclass(frozen=True)
class RawPolicyPlayer(_Jitted):
    """The network's own choice: argmax of the legal logits (the first of ties).

    Attributes:
        apply_fn: the network (:class:`~jaxzero.core.networks.ApplyFn`).
    """

    apply_fn: ApplyFn

    def __call__(self, params: Any, states: State, key: Array) -> Array:
        """The argmax of each state's legal logits, no search.

        Args:
            params: the network's variables.
            states: G env states.
            key: unused (the choice is deterministic).

        Returns:
            int32 [G]: a legal action per state.
        """
        del key
        logits, _ = self.apply_fn(params, states.observation)
        masked = search.mask_logits(logits, states.legal_action_mask)
        return jnp.argmax(masked, axis=-1).astype(jnp.int32)


def evaluation_network(apply_fn: ApplyFn, env: Env, average_symmetries: bool) -> ApplyFn:
    """The network as evaluating searches use it: averaged over ``env.symmetries`` when
    ``average_symmetries`` is on (networks.symmetry_averaged), else ``apply_fn`` itself."""
    if average_symmetries:
        return networks.symmetry_averaged(apply_fn, env.symmetries)
    return apply_fn


def evaluation_player(
    config: Config,
    env: Env,
    apply_fn: ApplyFn,
    policy: SearchPolicy,
    options: SearchOptions | None = None,
) -> SearchPlayer:
    """The agent of ``config`` at evaluation strength.

    Args:
        config: the run's config: ``config.evaluation``'s simulations and symmetry
            averaging, ``config.search``'s treatment of the env.
        env: the game.
        apply_fn: the raw network.
        policy: the search policy (a trainer's ``search``).
        options: how the search treats the game (a trainer's ``options``); None:
            ``config.search``'s with the rules. A learned model's run must pass them:
            they hold the model (``options.model``).

    Returns:
        A :class:`SearchPlayer`.

    Raises:
        ValueError: ``config.model`` is learned and ``options`` hold no model.
    """
    evaluation = config.evaluation
    network = evaluation_network(apply_fn, env, evaluation.average_symmetries)
    if options is None:
        options = SearchOptions.of(config.search)
    if config.model.learned and options.model is None:
        raise ValueError(
            "model.kind=learned: pass the options that hold the model (trainer.options)"
        )
    return SearchPlayer(env, network, policy, evaluation.simulations, options)
