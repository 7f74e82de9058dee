"""A TrainState as orbax stores it, and read back.

Typed PRNG keys (``jax.random.key``) are stored as their raw key data and re-wrapped on
restore, and a zero-size array as one zero, so any TrainState that JAX can hold can be
saved. The carried search trees are not saved (``UNSAVED_SELFPLAY_FIELDS``). A
checkpoint written by an older jaxzero, before a field was added to the state, still
restores when the field's value is known for it (``ADDED_SELFPLAY_FIELDS``,
``ADDED_FIELDS``); any other difference of layout or shape is named by
:func:`layout_difference` and :func:`shape_difference`, for the caller to refuse.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import orbax.checkpoint as ocp

from jaxzero.core import mcts

STATE_ITEM = "state"  # the whole TrainState; a history checkpoint drops it
AGENT_ITEM = "agent"  # what plays, saved beside it at multiples of keep_every
AGENT_FIELDS = ("best_params", "iteration")


# Self-play fields a checkpoint may lack, each restored as zeros when missing.
# value_return (the return of each recorded position so far): a checkpoint without it was
# written by a jaxzero whose games paid only their outcome, on their last move, so a game
# in progress had returned nothing yet: zeros are exact.
ADDED_SELFPLAY_FIELDS = ("value_return",)

# Top-level fields a checkpoint may lack, likewise restored as zeros. diverged_at (a
# population's members that diverged, 0: none): a jaxzero without it stopped the whole
# population at the first divergence and never saved that state, so zeros are exact.
ADDED_FIELDS = ("diverged_at",)

# Self-play fields never saved: the carried search trees of tree reuse are a cache of the
# last searches (B x (2S + 1) env states, more than the rest of a Go run's self-play), so
# a resumed run's games start their next searches from empty trees, as after a new game.
UNSAVED_SELFPLAY_FIELDS = ("tree",)


def saved_part(state: Any) -> Any:
    """What of a training state a checkpoint holds: all but ``UNSAVED_SELFPLAY_FIELDS``."""
    if not hasattr(state, "selfplay"):
        return state
    return state.replace(selfplay=_without_fields(state.selfplay, set(UNSAVED_SELFPLAY_FIELDS)))


def _empty_trees_like(abstract: Any, beside: Any) -> Any:
    """Empty carried trees shaped like ``abstract`` (None stays None: no tree reuse),
    placed as ``beside``, a restored self-play array."""
    if abstract is None:
        return None

    def zeros(like: Any) -> Any:
        if _is_key(like):
            return jax.random.wrap_key_data(jnp.zeros(jax.random.key_data(like).shape, jnp.uint32))
        return jnp.zeros(like.shape, like.dtype)

    trees = jax.tree.map(zeros, abstract)
    trees = mcts.cleared(trees, jnp.ones(trees.node_visits.shape[:1], bool))
    return jax.tree.map(lambda x: _placed_as(x, beside), trees)


def _zeros_like(like: Any, beside: Any) -> Any:
    return _placed_as(jnp.zeros(like.shape, like.dtype), beside)


def _placed_as(x: Any, beside: Any) -> Any:
    """``x`` on the sharding of ``beside``, a restored array whose leading axes ``x``
    shares (the trainer's data mesh, a population's members): a field made rather than
    restored sits where the restored ones sit, or the first iteration after a resume
    compiles a second program for the other placement."""
    return jax.device_put(x, beside.sharding) if hasattr(beside, "sharding") else x


def _without_fields(node: Any, names: set[str]) -> Any:
    """The dataclass pytree ``node`` without the fields ``names``: what an older jaxzero
    stored (a dataclass made for it, registered as a pytree)."""
    kept = [f.name for f in dataclasses.fields(node) if f.name not in names]
    older = dataclasses.make_dataclass(type(node).__name__, [(n, Any) for n in kept], frozen=True)
    jax.tree_util.register_dataclass(older)
    return older(**{n: getattr(node, n) for n in kept})


# orbax logs this WARNING whenever a CheckpointManager opens with ``read_only=True``,
# the option an agent's load asks for on purpose: a notice, not a problem.
_READ_ONLY_NOTICE = "Given directory is read only"

# ... and these when a step it lists is gone before it reads the step's metadata (the
# retention of a run still training): the step is not listed, nothing is wrong.
_GONE_NOTICE = ("Metadata file does not exist", "Failed to read Metadata file")


class _WithoutReadOnlyNotice(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith((_READ_ONLY_NOTICE, *_GONE_NOTICE))


@contextlib.contextmanager
def quiet_orbax_notices() -> Iterator[None]:
    """Drop orbax's two notices above (absl's logger) inside this block, nothing else."""
    logger, notice = logging.getLogger("absl"), _WithoutReadOnlyNotice()
    logger.addFilter(notice)
    try:
        yield
    finally:
        logger.removeFilter(notice)


def has_agent(state: Any) -> bool:
    """Whether ``state`` (a TrainState) holds what an agent plays with."""
    return all(hasattr(state, name) for name in AGENT_FIELDS)


def _is_key(x: Any) -> bool:
    return hasattr(x, "dtype") and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)


def _is_empty(x: Any) -> bool:  # a zero-size array, which orbax refuses to write
    return hasattr(x, "shape") and math.prod(x.shape) == 0


def to_storable(tree: Any) -> Any:
    """Keys as their raw data; a zero-size array (a pgx game's unused slots, MinAtar
    asterix's) as one zero of its dtype, since orbax refuses to write zero-size arrays."""

    def storable(x: Any) -> Any:
        if _is_key(x):
            return jax.random.key_data(x)
        return jnp.zeros((1,), x.dtype) if _is_empty(x) else x

    return jax.tree.map(storable, tree)


def _storable_target(abstract: Any) -> Any:
    def target(x: Any) -> Any:
        if _is_key(x):
            return jax.eval_shape(jax.random.key_data, x)
        if not _is_empty(x):
            return x
        return jax.ShapeDtypeStruct((1,), x.dtype, sharding=_replicated(x))

    return jax.tree.map(target, abstract)


def _replicated(x: Any) -> Any:
    """A sharding for one element in place of ``x``: replicated over x's mesh, if any."""
    sharding = getattr(x, "sharding", None)
    if isinstance(sharding, jax.sharding.NamedSharding):
        return jax.sharding.NamedSharding(sharding.mesh, jax.sharding.PartitionSpec())
    return sharding


def restore_target(abstract: Any) -> Any:
    """What orbax restores into: shapes and dtypes of ``abstract``, keys as raw data."""
    return _storable_target(jax.tree.map(ocp.utils.to_shape_dtype_struct, abstract))


def from_storable(tree: Any, abstract: Any) -> Any:
    def restore(x: Any, like: Any) -> Any:
        if _is_key(like):
            return jax.random.wrap_key_data(x)  # the default key implementation
        if _is_empty(like):  # nothing was stored: the empty array, placed as ``like``
            sharding = getattr(like, "sharding", None) or x.sharding
            return jax.device_put(jnp.zeros(like.shape, like.dtype), sharding)
        return x

    return jax.tree.map(restore, tree, abstract)


def saved_tree(item_folder: Path) -> Any:
    """The metadata tree (shapes, dtypes) orbax stored in ``item_folder`` (a step's
    ``state`` or ``agent``, an absolute path), None when unreadable."""
    try:
        return ocp.PyTreeCheckpointHandler().metadata(item_folder).tree
    except Exception:  # unreadable metadata: the restore itself reports it
        return None


def layout_difference(saved: Any, abstract_state: Any) -> str:
    """'' if the ``saved`` metadata tree (None: unknown) stores the fields of
    ``abstract_state`` (a dataclass pytree, and each dataclass field of it), else which
    fields are missing or extra."""
    if saved is None:
        return ""
    problems: list[str] = []

    def compare(prefix: str, target: Any, stored: Any) -> None:
        if not dataclasses.is_dataclass(target) or not hasattr(stored, "keys"):
            return
        names = [f.name for f in dataclasses.fields(target)]
        missing = sorted(set(names) - set(stored.keys()))
        extra = sorted(set(stored.keys()) - set(names))
        problems.extend(f"missing {prefix}{n}" for n in missing)
        problems.extend(f"unknown {prefix}{n}" for n in extra)
        for name in set(names) & set(stored.keys()):
            compare(f"{prefix}{name}.", getattr(target, name), stored[name])

    compare("", abstract_state, saved)
    return ", ".join(problems)


def shape_difference(saved: Any, wanted: dict[str, Any]) -> str:
    """'' if the ``saved`` metadata tree (None: unknown) stores every array of ``wanted``
    with its shape, else the first that differs (``params.Dense_0.kernel: [16, 9] saved,
    [32, 9] here``)."""
    if saved is None:
        return ""
    stored = {
        jax.tree_util.keystr(path, simple=True, separator="."): leaf
        for path, leaf in jax.tree_util.tree_leaves_with_path(
            {k: saved[k] for k in wanted if k in saved}
        )
    }
    for path, leaf in jax.tree_util.tree_leaves_with_path(restore_target(wanted)):
        name = jax.tree_util.keystr(path, simple=True, separator=".")
        there = stored.get(name)
        if there is None:
            return f"{name} not saved"
        if tuple(there.shape) != tuple(leaf.shape):
            return f"{name}: {list(there.shape)} saved, {list(leaf.shape)} here"
    return ""


def stored_layout(saved: Any, difference: str) -> tuple[Any, str]:
    """(the layout to read a checkpoint into, the difference left) given ``saved``, what
    a checkpoint of this jaxzero holds (:func:`saved_part`), and the checkpoint's
    :func:`layout_difference` from it: an older layout whose only difference is fields
    added since (``ADDED_SELFPLAY_FIELDS``, ``ADDED_FIELDS``) is read as it is, with no
    difference left; any other is left for the caller to refuse."""
    problems = set(difference.split(", ")) - {""}
    added = {n for n in ADDED_SELFPLAY_FIELDS if f"missing selfplay.{n}" in problems}
    added_top = {n for n in ADDED_FIELDS if f"missing {n}" in problems}
    older = {f"missing selfplay.{n}" for n in added} | {f"missing {n}" for n in added_top}
    if not problems or problems != older:
        return saved, difference
    stored = saved
    if added:
        stored = stored.replace(selfplay=_without_fields(saved.selfplay, added))
    if added_top:
        stored = _without_fields(stored, added_top)
    return stored, ""


def completed(state: Any, abstract_state: Any) -> Any:
    """``state``, restored in a :func:`stored_layout`, as a state of ``abstract_state``'s
    layout: the carried trees empty, the fields an older layout lacks zeros."""
    tops = {f.name: getattr(state, f.name) for f in dataclasses.fields(state)}
    for name in ADDED_FIELDS:  # placed as the iteration count, one per run or member
        if name not in tops and hasattr(abstract_state, name):
            tops[name] = _zeros_like(getattr(abstract_state, name), tops["iteration"])
    old = tops["selfplay"]
    fields = {f.name: getattr(old, f.name) for f in dataclasses.fields(old)}
    games = old.length  # [B], a population's [M, B]: the axes every self-play field starts with
    for name in ADDED_SELFPLAY_FIELDS:
        if name not in fields and hasattr(abstract_state.selfplay, name):
            fields[name] = _zeros_like(getattr(abstract_state.selfplay, name), games)
    fields["tree"] = _empty_trees_like(abstract_state.selfplay.tree, games)
    tops["selfplay"] = type(abstract_state.selfplay)(**fields)
    return type(abstract_state)(**tops)
