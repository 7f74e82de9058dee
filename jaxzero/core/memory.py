"""What a run needs in memory, checked before anything is allocated.

A size beyond the machine (``replay.capacity=10000000000``) must fail in one line naming
the setting, not hang in the allocator. The estimate is the training state's size, read
from ``jax.eval_shape`` (nothing allocated), plus the search trees, whose nodes each hold
an env state: B games x N nodes x (state + A children's statistics), for self-play's and
for the evaluating matches' (``evaluation.simulations``, which ``eval``, ``play``,
``analyze`` and ``gtp`` check with :func:`check_search_memory`).

    needs = memory_needs(trainer)       # {"replay.capacity": bytes, ...}
    check_memory(trainer)               # ValueError naming the largest part
"""

from __future__ import annotations

import math

import jax
import numpy as np

from envs.core import Env
from jaxzero.core.loop import Trainer
from jaxzero.core.search import tree_capacity

# Per child edge: index, prior logit, visits, reward, discount, value; per node: visits,
# raw value, value, parent, action from parent (4 bytes each, mctx.Tree's fields).
_EDGE_FIELDS, _NODE_FIELDS = 6, 5
EVALUATION_TREES = "evaluation search trees"


def _bytes(tree) -> int:
    leaves = jax.tree.leaves(tree)
    return sum(math.prod(x.shape) * np.dtype(x.dtype).itemsize for x in leaves)


def memory_needs(trainer: Trainer) -> dict[str, int]:
    """Bytes the run holds at once, by the setting that sizes each part.

    Args:
        trainer: a built trainer (nothing of it is run or allocated).

    Returns:
        ``{"replay.capacity": the replay buffer, "selfplay.batch_size": the games and their
        partial trajectories, "search trees": the self-play search trees (B games x
        search.num_simulations nodes), "network": parameters and optimiser state (all
        copies), and when the run plays matches, "evaluation search trees": their games'
        trees (evaluation.games or gate.num_games x evaluation.simulations nodes)}``.
    """
    config, env = trainer.config, trainer.env
    state = jax.eval_shape(trainer.init, jax.random.key(0))
    reuse = config.search.reuse_tree
    trees = config.selfplay.batch_size * tree_bytes(env, config.search.num_simulations, reuse)
    needs = {
        "replay.capacity": _bytes(state.replay),
        "selfplay.batch_size": _bytes(state.selfplay),
        "search trees": trees,
        "network": _bytes((state.params, state.best_params, state.opt_state)),
    }
    games = max(
        config.evaluation.games if config.evaluation.every > 0 else 0,
        config.gate.num_games if config.gate.enabled else 0,
    )
    if games:  # the periodic matches and the gate's: each of their games grows a tree
        needs[EVALUATION_TREES] = games * tree_bytes(env, config.evaluation.simulations, reuse)
    return needs


def tree_bytes(env: Env, simulations: int, reuse: bool = False) -> int:
    """Bytes of one game's search tree of ``simulations`` over ``env`` (each node holds an
    env state and its children's statistics); nothing allocated."""
    nodes = tree_capacity(simulations) if reuse else simulations + 1
    env_state = _bytes(jax.eval_shape(env.init, jax.random.key(0)))
    return nodes * (env_state + 4 * (_EDGE_FIELDS * env.num_actions + _NODE_FIELDS))


def check_search_memory(
    env: Env, simulations: int, setting: str, games: int = 1, available: int | None = None
) -> None:
    """ValueError, naming ``setting``, when ``games`` search trees of ``simulations`` over
    ``env`` (an evaluating search: ``eval``, ``play``, ``analyze``, ``gtp``) cannot fit in
    memory; no check when the memory free cannot be told."""
    available = available_memory() if available is None else available
    need = games * tree_bytes(env, simulations)
    if available is not None and need > available:
        trees = "its search tree" if games == 1 else f"the search trees of {games} games"
        raise ValueError(
            f"{setting}={simulations} needs about {_gb(need)} of memory for {trees}, and "
            f"{_gb(available)} is free: lower {setting}"
        )


def available_memory() -> int | None:
    """Bytes free for a run: the accelerators' free memory, or on a CPU the host's
    available memory (Linux's MemAvailable); None when it cannot be told."""
    devices = jax.local_devices()
    stats = [device.memory_stats() for device in devices]
    if all(s and "bytes_limit" in s for s in stats):
        return sum(s["bytes_limit"] - s.get("bytes_in_use", 0) for s in stats)
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def check_memory(trainer: Trainer, available: int | None = None, members: int = 1) -> None:
    """ValueError, naming the setting to lower, when the run cannot fit in memory.

    Args:
        trainer: a built trainer (one member's, for a population).
        available: bytes free; default :func:`available_memory` (no check when unknown).
        members: P, for a population of P runs of ``trainer`` (each holds all of it).

    Raises:
        ValueError: one line with the estimate, the memory free and the largest part.
    """
    available = available_memory() if available is None else available
    needs = {name: size * members for name, size in memory_needs(trainer).items()}
    # self-play's trees and the evaluating matches' are never held at once
    total = sum(needs.values()) - min(needs["search trees"], needs.get(EVALUATION_TREES, 0))
    if available is None or total <= available:
        return
    largest = max(needs, key=lambda name: needs[name])
    what = "the run" if members == 1 else f"the population of {members} members"
    fewer = "" if members == 1 else ", or train fewer members"
    raise ValueError(
        f"{what} needs about {_gb(total)} of memory, {_gb(needs[largest])} of it for "
        f"{largest}, and {_gb(available)} is free: lower {_settings(trainer, largest)}{fewer}"
    )


def _settings(trainer: Trainer, part: str) -> str:
    """The settings that size ``part``, with their values."""
    keys = {
        "search trees": ("selfplay.batch_size", "search.num_simulations"),
        "network": ("network.channels", "network.hidden_size"),
        EVALUATION_TREES: ("evaluation.simulations", "evaluation.games"),
    }.get(part, (part,))
    values = [getattr(getattr(trainer.config, k.split(".")[0]), k.split(".")[1]) for k in keys]
    return " or ".join(f"{key} (now {value})" for key, value in zip(keys, values, strict=True))


def _gb(size: float) -> str:
    return f"{size / 1e9:.1f} GB" if size >= 1e8 else f"{size / 1e6:.1f} MB"
