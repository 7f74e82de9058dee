"""Search policies as values: the rule a search grows its tree by and reads its move from.

mctx's style: the thing itself is the argument. A policy is a frozen dataclass that runs
one batched search over a root and a recurrent function; :class:`PuctSearch` (AlphaZero)
and :class:`GumbelSearch` (Gumbel MuZero) are the two built in, and each takes a user's
selection function of mctx's unbatched signature, so a PUCT variant is a short function in
the user's own file::

    def ucb1(rng_key, tree, node_index, depth):      # mctx's signature, one tree
        ...                                          # -> action int32 []

    trainer = jaxzero.make_trainer(config, search=jaxzero.PuctSearch(interior_selection=ucb1))

A config names its policy with ``search.kind``: a name in the registry
(:func:`register_search`; "puct" and "gumbel" are built in, installed packages add theirs
through the entry-point group ``jaxzero.searches``) or an import path
``"module:factory"`` of a function ``factory(SearchConfig) -> SearchPolicy``. A policy
writes itself back into a config (:meth:`SearchPolicy.to_config`), user functions as
their import paths, so that a run records how it searched and ``load_agent`` rebuilds it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from importlib import metadata
from typing import Any, ClassVar, Protocol

import jax
import jax.numpy as jnp
import mctx

from jaxzero.core import mcts
from jaxzero.core.config import SearchConfig
from jaxzero.core.imports import import_path, is_import_path, load

Array = jax.Array
# mctx's unbatched selection: (rng_key, tree, node_index, depth) -> action int32 []
Selection = Callable[[Array, mctx.Tree, Array, Array], Array]
# mctx's Q transform: (tree, node_index) -> float32 [A], the Q the selection reads
QTransform = Callable[[mctx.Tree, Array], Array]
ENTRY_POINTS = "jaxzero.searches"


class SearchPolicy(Protocol):
    """What a search policy is to jaxzero: run a batched search, choose its greedy move,
    and say how a config records it."""

    def __call__(
        self,
        params: Any,
        key: Array,
        root: mctx.RootFnOutput,
        recurrent_fn: mctx.RecurrentFn,
        *,
        num_simulations: int,
        invalid_actions: Array,
        noise: bool = True,
        tree: mcts.Tree | None = None,
        chance_outcomes: int = 0,
        member_axis: str | None = None,
    ) -> mctx.PolicyOutput:
        """Search B roots.

        Args:
            params: the network's variables, passed to ``recurrent_fn``.
            key: a PRNG key.
            root: mctx's root output for B positions (prior logits [B, A], value [B]).
            recurrent_fn: mctx's recurrent function over the env.
            num_simulations: simulations of this search.
            invalid_actions: bool [B, A], True where the action is illegal.
            noise: root noise on (self-play) or off (evaluation).
            tree: a carried tree to grow (tree reuse), or None for a fresh one.
            chance_outcomes: C > 0 for a tree with explicit chance nodes.
            member_axis: the vmapped population axis the search runs under, if any
                (pass it to ``jaxzero.core.mcts``' searches: the members' loops end
                together instead of selecting between whole trees at every step).

        Returns:
            mctx's PolicyOutput: ``action`` [B], ``action_weights`` [B, A] (the policy
            target), ``search_tree``.
        """
        ...

    def greedy_action(self, output: mctx.PolicyOutput) -> Array:
        """The search's deterministic choice.

        Args:
            output: what :meth:`__call__` returned for B roots.

        Returns:
            int32 [B]: the chosen action per root.
        """
        ...

    def to_config(self, config: SearchConfig) -> SearchConfig:
        """``config`` with this policy's kind, settings and functions recorded.

        Args:
            config: the search section to record into (its other fields kept).

        Returns:
            A new ``SearchConfig`` whose ``kind`` and settings rebuild this policy
            (user functions as import paths).
        """
        ...


def _recorded(fn: Callable | None) -> str:
    return "" if fn is None else import_path(fn)


def _loaded(path: str, key: str) -> Any:
    return load(path, f"search.{key}") if path else None


@dataclasses.dataclass(frozen=True)
class PuctSearch:
    """AlphaZero's search: ``mctx.muzero_policy`` with Dirichlet root noise; the policy
    target is the visit distribution and the greedy move the most visited (first of ties).

    Its simulations are the caller's (``search.num_simulations`` in self-play, an
    evaluating player's own), passed to each search as mctx passes them.

    Attributes:
        dirichlet_alpha: concentration of the root noise.
        dirichlet_fraction: weight of the root noise in the prior (0 when evaluating).
        pb_c_init: PUCT's exploration constant c_init.
        pb_c_base: PUCT's c_base.
        q_bound: 0 reads Q by mctx's parent-and-siblings min-max; q > 0 on [-q, q].
        qtransform: mctx's Q transform ``(tree, node) -> [A]``, replacing ``q_bound``'s.
        interior_selection: mctx's ``(rng_key, tree, node_index, depth) -> action``;
            None: ``mctx.muzero_action_selection`` with the constants above.
        root_selection: the same at the root; None: ``interior_selection``.
    """

    dirichlet_alpha: float = 0.3
    dirichlet_fraction: float = 0.25
    pb_c_init: float = 1.25
    pb_c_base: float = 19652.0
    q_bound: float = 0.0
    qtransform: QTransform | None = None
    interior_selection: Selection | None = None
    root_selection: Selection | None = None
    kind: ClassVar[str] = "puct"
    policy_name: ClassVar[str] = "visit share"  # what its action_weights are, in a table

    def __call__(
        self,
        params: Any,
        key: Array,
        root: mctx.RootFnOutput,
        recurrent_fn: mctx.RecurrentFn,
        *,
        num_simulations: int,
        invalid_actions: Array,
        noise: bool = True,
        tree: mcts.Tree | None = None,
        chance_outcomes: int = 0,
        member_axis: str | None = None,
    ) -> mctx.PolicyOutput:
        """Search B roots by PUCT (see :meth:`SearchPolicy.__call__`).

        Args:
            params: the network's variables, passed to ``recurrent_fn``.
            key: a PRNG key.
            root: mctx's root output for B positions (prior logits [B, A], value [B]).
            recurrent_fn: mctx's recurrent function over the env.
            num_simulations: simulations of this search.
            invalid_actions: bool [B, A], True where the action is illegal.
            noise: Dirichlet noise on the root prior at ``dirichlet_fraction`` (self-play),
                or none (evaluation).
            tree: a carried tree to grow (tree reuse), or None for a fresh one.
            chance_outcomes: C > 0 for a tree with explicit chance nodes.
            member_axis: the vmapped population axis the search runs under, if any
                (pass it to ``jaxzero.core.mcts``' searches: the members' loops end
                together instead of selecting between whole trees at every step).

        Returns:
            mctx's PolicyOutput: ``action`` [B] sampled from the visit distribution,
            ``action_weights`` float32 [B, A] the visit distribution (the policy target),
            ``search_tree``.
        """
        return mcts.puct_policy(
            params,
            key,
            root,
            recurrent_fn,
            num_simulations,
            invalid_actions=invalid_actions,
            dirichlet_fraction=self.dirichlet_fraction if noise else 0.0,
            dirichlet_alpha=self.dirichlet_alpha,
            pb_c_init=self.pb_c_init,
            pb_c_base=self.pb_c_base,
            q_bound=self.q_bound,
            qtransform=self.qtransform,
            root_selection=self.root_selection,
            interior_selection=self.interior_selection,
            tree=tree,
            chance_outcomes=chance_outcomes,
            member_axis=member_axis,
        )

    def greedy_action(self, output: mctx.PolicyOutput) -> Array:
        """argmax N(a) at the root (the first of ties).

        Args:
            output: what :meth:`__call__` returned for B roots.

        Returns:
            int32 [B]: the most visited root action of each search.
        """
        tree = output.search_tree
        visits = tree.children_visits[:, tree.ROOT_INDEX]  # [B, A]
        return jnp.argmax(visits, axis=-1).astype(jnp.int32)

    @classmethod
    def from_config(cls, config: SearchConfig) -> PuctSearch:
        """The policy a config records (its functions imported from their paths).

        Args:
            config: the search section; its PUCT settings and function paths are read.

        Returns:
            A :class:`PuctSearch`.

        Raises:
            ValueError: a function path (``qtransform``, ``interior_selection``,
                ``root_selection``) that cannot be imported, in one line.
        """
        return cls(
            dirichlet_alpha=config.dirichlet_alpha,
            dirichlet_fraction=config.dirichlet_fraction,
            pb_c_init=config.pb_c_init,
            pb_c_base=config.pb_c_base,
            q_bound=config.q_bound,
            qtransform=_loaded(config.qtransform, "qtransform"),
            interior_selection=_loaded(config.interior_selection, "interior_selection"),
            root_selection=_loaded(config.root_selection, "root_selection"),
        )

    def to_config(self, config: SearchConfig) -> SearchConfig:
        """``config`` with kind "puct" and this policy's settings and functions.

        Args:
            config: the search section to record into (its other fields kept).

        Returns:
            A new ``SearchConfig``; the functions as import paths, "" where None.
        """
        return dataclasses.replace(
            config,
            kind=self.kind,
            dirichlet_alpha=self.dirichlet_alpha,
            dirichlet_fraction=self.dirichlet_fraction,
            pb_c_init=self.pb_c_init,
            pb_c_base=self.pb_c_base,
            q_bound=self.q_bound,
            qtransform=_recorded(self.qtransform),
            interior_selection=_recorded(self.interior_selection),
            root_selection=_recorded(self.root_selection),
        )

    def replace(self, **changes: Any) -> PuctSearch:
        return dataclasses.replace(self, **changes)


@dataclasses.dataclass(frozen=True)
class GumbelSearch:
    """Gumbel MuZero's search: ``mctx.gumbel_muzero_policy`` (Gumbel top-k at the root,
    sequential halving, completed Q). The policy target is the improved policy
    softmax(logits + σ(completed Q)); the greedy move the survivor of the halving.

    Its simulations are the caller's, passed to each search as mctx passes them.

    Attributes:
        max_num_considered_actions: k of the Gumbel top-k at the root.
        gumbel_scale: scale of the root's Gumbel noise (0 when evaluating).
        qtransform: mctx's Q transform; None: ``mctx.qtransform_completed_by_mix_value``.
        interior_selection: mctx's ``(rng_key, tree, node_index, depth) -> action`` below
            the root; None: ``mctx.gumbel_muzero_interior_action_selection``.
    """

    max_num_considered_actions: int = 16
    gumbel_scale: float = 1.0
    qtransform: QTransform | None = None
    interior_selection: Selection | None = None
    kind: ClassVar[str] = "gumbel"
    policy_name: ClassVar[str] = "improved policy"  # what its action_weights are, in a table

    def __call__(
        self,
        params: Any,
        key: Array,
        root: mctx.RootFnOutput,
        recurrent_fn: mctx.RecurrentFn,
        *,
        num_simulations: int,
        invalid_actions: Array,
        noise: bool = True,
        tree: mcts.Tree | None = None,
        chance_outcomes: int = 0,
        member_axis: str | None = None,
    ) -> mctx.PolicyOutput:
        """Search B roots by Gumbel MuZero (see :meth:`SearchPolicy.__call__`).

        Args:
            params: the network's variables, passed to ``recurrent_fn``.
            key: a PRNG key.
            root: mctx's root output for B positions (prior logits [B, A], value [B]).
            recurrent_fn: mctx's recurrent function over the env.
            num_simulations: simulations of this search.
            invalid_actions: bool [B, A], True where the action is illegal.
            noise: Gumbel root noise at ``gumbel_scale`` (self-play), or none (evaluation).
            tree: a carried tree to grow (tree reuse), or None for a fresh one.
            chance_outcomes: C > 0 for a tree with explicit chance nodes.
            member_axis: the vmapped population axis the search runs under, if any
                (pass it to ``jaxzero.core.mcts``' searches: the members' loops end
                together instead of selecting between whole trees at every step).

        Returns:
            mctx's PolicyOutput: ``action`` int32 [B] the survivor of sequential halving,
            ``action_weights`` float32 [B, A] the improved policy
            softmax(logits + σ(completed Q)) (the policy target), ``search_tree``.
        """
        return mcts.gumbel_policy(
            params,
            key,
            root,
            recurrent_fn,
            num_simulations,
            invalid_actions=invalid_actions,
            max_num_considered_actions=self.max_num_considered_actions,
            gumbel_scale=self.gumbel_scale if noise else 0.0,
            qtransform=self.qtransform or mctx.qtransform_completed_by_mix_value,
            interior_selection=self.interior_selection,
            tree=tree,
            chance_outcomes=chance_outcomes,
            member_axis=member_axis,
        )

    def greedy_action(self, output: mctx.PolicyOutput) -> Array:
        """mctx's ``action``: the survivor of sequential halving, which with the noise off
        is the best-evaluated considered action.

        Args:
            output: what :meth:`__call__` returned for B roots.

        Returns:
            int32 [B]: ``output.action``.
        """
        return output.action.astype(jnp.int32)

    @classmethod
    def from_config(cls, config: SearchConfig) -> GumbelSearch:
        """The policy a config records (its functions imported from their paths).

        Args:
            config: the search section; its Gumbel settings and function paths are read.

        Returns:
            A :class:`GumbelSearch`.

        Raises:
            ValueError: ``config.root_selection`` is set (Gumbel's root is sequential
                halving), or a function path cannot be imported, in one line.
        """
        if config.root_selection:
            raise ValueError(
                f"search.root_selection={config.root_selection}: Gumbel selects at the root by "
                "sequential halving; clear it, or use search.kind=puct"
            )
        return cls(
            max_num_considered_actions=config.max_num_considered_actions,
            gumbel_scale=config.gumbel_scale,
            qtransform=_loaded(config.qtransform, "qtransform"),
            interior_selection=_loaded(config.interior_selection, "interior_selection"),
        )

    def to_config(self, config: SearchConfig) -> SearchConfig:
        """``config`` with kind "gumbel" and this policy's settings and functions.

        Args:
            config: the search section to record into (its other fields kept).

        Returns:
            A new ``SearchConfig``; the functions as import paths, "" where None, and
            ``root_selection`` cleared.
        """
        return dataclasses.replace(
            config,
            kind=self.kind,
            max_num_considered_actions=self.max_num_considered_actions,
            gumbel_scale=self.gumbel_scale,
            qtransform=_recorded(self.qtransform),
            interior_selection=_recorded(self.interior_selection),
            root_selection="",
        )

    def replace(self, **changes: Any) -> GumbelSearch:
        return dataclasses.replace(self, **changes)


SearchFactory = Callable[[SearchConfig], SearchPolicy]
_SEARCHES: dict[str, SearchFactory] = {
    "gumbel": GumbelSearch.from_config,
    "puct": PuctSearch.from_config,
}


def register_search(name: str, factory: SearchFactory) -> None:
    """Make ``search.kind=name`` (configs, the CLI's ``--search``, ``Agent.act``) build
    ``factory(config.search)``.

    Args:
        name: the kind's name; not an import path (no ``:``).
        factory: ``SearchConfig -> SearchPolicy``.

    Raises:
        ValueError: ``name`` is empty or holds a ``:``.
    """
    if ":" in name or not name:
        raise ValueError(f"a search name is a plain word, got {name!r}")
    _SEARCHES[name] = factory


def _entry_points() -> dict[str, metadata.EntryPoint]:
    """Installed packages' searches (read on each call: a few per run, never in a loop)."""
    return {point.name: point for point in metadata.entry_points(group=ENTRY_POINTS)}


def search_kinds() -> list[str]:
    """The names ``search.kind`` accepts besides import paths (registered or installed)."""
    return sorted(set(_SEARCHES) | set(_entry_points()))


FUNCTION_FIELDS = ("qtransform", "interior_selection", "root_selection")  # import paths


def imports_code(config: SearchConfig) -> dict[str, str]:
    """``{"search.KEY": "module:attribute"}`` of each setting of ``config`` that
    :func:`make_search` imports: a kind that no registered name or installed entry point
    answers, and every function named by path."""
    found = {f"search.{key}": getattr(config, key) for key in FUNCTION_FIELDS}
    kind = config.kind
    if kind not in _SEARCHES and kind not in _entry_points() and is_import_path(kind):
        found["search.kind"] = kind
    return {key: path for key, path in found.items() if path}


def make_search(config: SearchConfig) -> SearchPolicy:
    """The policy ``config.kind`` names, built from ``config``.

    Args:
        config: the search section; ``kind`` is a registered name or ``module:factory``.

    Returns:
        A :class:`SearchPolicy`.

    Raises:
        ValueError: one line naming ``search.kind`` (or the function path that failed).
    """
    kind = config.kind
    if kind in _SEARCHES:
        factory = _SEARCHES[kind]
    elif kind in _entry_points():
        factory = _entry_points()[kind].load()
    elif is_import_path(kind):
        factory = load(kind, "search.kind")
    else:
        raise ValueError(
            f"search.kind: unknown search {kind!r}; choose {', '.join(search_kinds())}, or "
            "name a factory as module:function (jaxzero.register_search adds a name)"
        )
    policy = factory(config)
    if not callable(getattr(policy, "greedy_action", None)):
        raise ValueError(f"search.kind={kind} built {policy!r}, which is not a search policy")
    return policy


def with_settings(policy: SearchPolicy, settings: Mapping[str, Any]) -> SearchPolicy:
    """``policy`` with some of its numbers replaced: a population member's traced values
    (``{"pb_c_init": float32 []}``) inside its compiled iteration.

    Args:
        policy: a policy that is a dataclass (both built-in ones are).
        settings: field names of ``policy`` to their new values.

    Returns:
        A new policy of the same type (``policy`` itself when ``settings`` is empty).

    Raises:
        ValueError: a name that is no field of ``policy``'s dataclass.
    """
    if not settings:
        return policy
    names: set[str] = (
        {f.name for f in dataclasses.fields(policy)}
        if dataclasses.is_dataclass(policy) and not isinstance(policy, type)
        else set()
    )
    unknown = sorted(set(settings) - names)
    if unknown:
        raise ValueError(f"{type(policy).__name__} has no setting {', '.join(unknown)}")
    return dataclasses.replace(policy, **settings)  # type: ignore[type-var]  # a dataclass, checked


def with_kind(config: SearchConfig, kind: str) -> SearchConfig:
    """``config`` searching by ``kind`` instead: a new kind keeps the numeric settings and
    drops the previous kind's functions (a PUCT rule is no Gumbel rule)."""
    if kind == config.kind:
        return config
    return dataclasses.replace(
        config, kind=kind, qtransform="", interior_selection="", root_selection=""
    )
