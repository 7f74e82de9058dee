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

    player = evaluation_player(config, env, apply_fn)   # config.evaluation's strength
    actions = player.jitted(params, states, key)        # int32 [G]
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from envs.core import Env, State
from jaxzero.core import networks, search
from jaxzero.core.config import Config, SearchConfig
from jaxzero.core.networks import ApplyFn
from jaxzero.measure.opponents import Player

Array = jax.Array

__all__ = ["Player", "RawPolicyPlayer", "SearchPlayer", "evaluation_network", "evaluation_player"]


class _Jitted:
    @functools.cached_property
    def jitted(self) -> Callable[[Any, State, Array], Array]:
        """This player as one compiled function (compiled on its first call, kept here)."""
        return jax.jit(self.__call__)


@dataclasses.dataclass(frozen=True)
class SearchPlayer(_Jitted):
    """Noise-free search with ``num_simulations`` simulations of ``config.kind``, then
    its greedy choice (:func:`jaxzero.core.search.greedy_action`)."""

    env: Env
    apply_fn: ApplyFn  # the network the search evaluates (evaluation_network)
    config: SearchConfig
    num_simulations: int

    def __post_init__(self) -> None:
        if self.num_simulations < 1:
            raise ValueError(f"simulations must be >= 1, got {self.num_simulations}")

    def __call__(self, params: Any, states: State, key: Array) -> Array:
        return search.greedy_action(self.search(params, states, key), self.config.kind)

    def search(self, params: Any, states: State, key: Array):
        """The noise-free search itself: mctx's PolicyOutput over ``states`` [G]."""
        return search.run_search(
            params,
            states,
            key,
            self.config,
            self.env,
            self.apply_fn,
            num_simulations=self.num_simulations,
            noise=False,
        )

    def replace(self, **changes: Any) -> SearchPlayer:
        return dataclasses.replace(self, **changes)

    @property
    def reuses_tree(self) -> bool:
        """Whether this player keeps its search trees between moves (``reuse_tree``)."""
        return self.config.reuse_tree

    def empty_trees(self, states: State, params: Any = None) -> search.mcts.Tree:
        """Empty carried trees for ``states`` [G] (a new game's memory). Given ``params``,
        they are placed as :meth:`act`'s grown trees will be (on the parameters' devices),
        so that a caller's compiled ``act`` sees one input type from the first move on."""
        trees = search.empty_trees(states, self.num_simulations, self.env.num_actions)
        if params is None:
            return trees
        return jax.device_put(trees, jax.tree.leaves(params)[0].sharding)

    def act(self, params: Any, states: State, trees: Any, key: Array) -> tuple[Array, Any]:
        """The greedy move from a search grown from the carried ``trees`` [G] (used where
        their root is the position), and the grown trees."""
        output = search.run_search(
            params, states, key, self.config, self.env, self.apply_fn,
            num_simulations=self.num_simulations, noise=False, tree=trees,
        )  # fmt: skip
        tree = output.search_tree.replace(extra_data=None)  # a search's noise stays with it
        return search.greedy_action(output, self.config.kind), tree

    def carry(self, trees: Any, actions: Array) -> Any:
        """The trees [G] after ``actions`` [G] are played from their roots."""
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
    """The network's own choice: argmax of the legal logits (the first of ties)."""

    apply_fn: ApplyFn

    def __call__(self, params: Any, states: State, key: Array) -> Array:
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


def evaluation_player(config: Config, env: Env, apply_fn: ApplyFn) -> SearchPlayer:
    """The agent of ``config`` at evaluation strength: ``config.search``'s kind,
    ``config.evaluation``'s simulations, its symmetry averaging on or off."""
    evaluation = config.evaluation
    network = evaluation_network(apply_fn, env, evaluation.average_symmetries)
    return SearchPlayer(env, network, config.search, evaluation.simulations)
