"""Many training runs as one compiled program: a population axis P on the whole state.

    population = make_population(config, seeds=[0, 1, 2, 3],
                                 hyper={"optim.learning_rate": [1e-3, 1e-3, 3e-3, 3e-3]})
    state = population.init()                              # a TrainState, every leaf [P, ...]
    state, metrics, moves = population.iteration(state)    # metrics [P] each; one jax.jit

Member k is the run ``make_trainer(population.members[k]).init(jax.random.key(seeds[k]))``
starts: the same initial state, and, iteration for iteration, the same games and updates
(up to float rounding), so a population is a faster way to run P seeds, not another
algorithm. The iteration is :func:`jaxzero.core.loop.make_step` vmapped over the members.

What may differ between members is what does not change the compiled program's shapes or
code: the numbers in :data:`TRACED` (learning rate, weight decay, clipping, the value loss
weight, root noise, PUCT's constants, Gumbel's scale, temperature, discount). They enter
the iteration as traced float32 [P] values instead of the constants a single run folds in.
Everything else (batch sizes, simulations, the network, the search kind, replay capacity)
sizes arrays or picks code, so one program cannot hold two values of it: putting one on
the axis is refused, naming it.

With several devices the members are split over them (P a multiple of the device count),
each device training its own members with no collective at all.

A member fails alone: an iteration that leaves its losses, gradient norms, parameters or
optimizer state NaN or infinite is discarded, its state kept as it was (the last finite
one), and its ``diverged_at`` set to that iteration (:class:`PopulationState`); from then
on it is frozen, inside the same compiled iteration, while the others train on. Its
metric ``finite`` is 1.0 while it trains, 0.0 from that iteration on.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from envs.core import Env, state_dataclass
from jaxzero.core import learner, sharding
from jaxzero.core.config import Config, apply_overrides, traced_keys, valid_keys, with_traced
from jaxzero.core.loop import (
    FINITE,
    Metrics,
    Trainer,
    TrainState,
    make_init,
    make_step,
    make_trainer,
)
from jaxzero.core.policies import SearchPolicy, with_settings

Array = jax.Array

TRACED = traced_keys()
"""The settings members of a population may differ in (dotted config keys): each is a
number the iteration only computes with, so it enters as a traced value; the sections
declare them (``OptimConfig.traced``, ...). Any other key fixes a shape or the code and
is refused on the population axis."""


@state_dataclass
class PopulationState(TrainState):
    """A population's TrainState (every leaf [P, ...]) and which members diverged.

    Attributes:
        diverged_at: int32 [P]: 0 while member k trains; else the iteration whose result
            was not finite, discarded: the member's state is the one before it, frozen.
    """

    diverged_at: Array  # int32 [P]  0: training; else the iteration it diverged at

    @classmethod
    def of(cls, state: TrainState, diverged_at: Array) -> PopulationState:
        return cls(**_fields(state), diverged_at=diverged_at)

    def train_state(self) -> TrainState:
        """The TrainState without the divergence flags (a single run's layout)."""
        return TrainState(**_fields(self))


def _fields(state: TrainState) -> dict[str, Any]:
    return {f.name: getattr(state, f.name) for f in dataclasses.fields(TrainState)}


@dataclasses.dataclass(frozen=True)
class Population:
    """What :func:`make_population` builds: P training runs stepped as one program.

    Attributes:
        config: the settings every member shares (``seed`` and the hyperparameters on
            the axis aside).
        members: member k's own config (its seed and hyperparameters): the config of the
            single run it equals.
        seeds: member k's seed; its initial key is ``jax.random.key(seeds[k])``.
        hyper: the settings on the axis, each with its P values.
        trainer: one member's :class:`~jaxzero.core.loop.Trainer` (env, network, search,
            ``apply_fn``), on one device: what evaluating and loading a member use.
        values: the traced settings as float32 [P] arrays (the ``step``'s second input).
        init_fn: jitted ``keys -> PopulationState`` (keys uint32 [P, 2], every leaf
            [P, ...]).
        step: jitted ``(state, values) -> (state, metrics, moves)``: the iteration of
            every member (a diverged one frozen); metrics [P] each, moves [P, T, B].
    """

    config: Config
    members: tuple[Config, ...]
    seeds: tuple[int, ...]
    hyper: dict[str, tuple[float, ...]]
    trainer: Trainer
    values: dict[str, Array]
    init_fn: Callable[[Array], PopulationState]
    step: Callable[
        [PopulationState, dict[str, Array]], tuple[PopulationState, Metrics, dict[str, Array]]
    ]

    @property
    def size(self) -> int:
        """P, the number of members."""
        return len(self.seeds)

    def init(self) -> PopulationState:
        """The members' initial states, stacked.

        Returns:
            A PopulationState whose leaves are [P, ...]: member k's slice is
            ``make_trainer(members[k]).init(jax.random.key(seeds[k]))``, none diverged.
        """
        keys = jnp.stack([jax.random.key_data(jax.random.key(s)) for s in self.seeds])
        return self.init_fn(keys)

    def iteration(
        self, state: PopulationState
    ) -> tuple[PopulationState, Metrics, dict[str, Array]]:
        """One iteration of every member, one compiled call.

        Args:
            state: the population's state (leaves [P, ...]).

        Returns:
            ``(state, metrics, moves)``: the next state (a member whose iteration was not
            finite kept as it was, and marked), each metric [P] (member k's value at k),
            and the self-play moves [P, T, B] each.
        """
        return self.step(state, self.values)


def member(state: Any, k: int) -> Any:
    """Member ``k``'s slice of a population's state or metrics.

    Args:
        state: any pytree whose leaves have the population axis first ([P, ...]).
        k: the member.

    Returns:
        The same pytree with leaves ``x[k]``: member k's TrainState, as a single run's,
        on the default device.
    """
    home = jax.devices()[0]
    return jax.tree.map(lambda x: _row(x, k, home), state)


def _row(x: Any, k: int, home: jax.Device) -> Any:
    """``x[k]``, of an array split over devices read from the device that holds it.

    Indexing such an array (``x[k]``, ``jax.jit(lambda x: x[k])``) compiles a program
    over all its devices with a cross-device all-reduce, outside the compiled step; XLA
    CPU's rendezvous of the host's cores as devices then deadlocks now and again and
    aborts the process. The row of one device's shard compiles a single-device program,
    and moves to ``home``, each member whole on one device whatever held it.
    """
    if not isinstance(x, jax.Array) or len(x.sharding.device_set) == 1:
        return x[k]
    k = range(x.shape[0])[k]  # a negative k from the end; IndexError past it
    for shard in x.addressable_shards:
        start, stop, _ = shard.index[0].indices(x.shape[0])
        if start <= k < stop:
            return jax.device_put(shard.data[k - start], home)
    return x[k]  # held by another process: its devices take part


def make_population(
    config: Config,
    *,
    seeds: Sequence[int],
    hyper: Mapping[str, Sequence[float] | float] | None = None,
    env: Env | None = None,
    network: nn.Module | None = None,
    search: SearchPolicy | None = None,
    donate: bool = False,
    members_at_once: int = 0,
    devices: int = 0,
) -> Population:
    """Build P = ``len(seeds)`` runs of ``config`` as one vmapped, jitted iteration.

    Args:
        config: the settings the members share (its ``seed`` is replaced by each
            member's); ``config.num_devices`` devices split the members (0: as many of
            JAX's devices as divide P evenly, each member whole on one of them).
        seeds: member k starts from ``jax.random.key(seeds[k])``, each in
            ``[0, 2**32)`` (``Config.seed``'s range: the key keeps 32 bits, so seeds
            2**32 apart would be one key); a grid's points share the seeds.
        hyper: settings of :data:`TRACED` (dotted keys) to their P values, or one value
            for every member.
        env: the game, as :func:`~jaxzero.core.loop.make_trainer` takes it.
        network: the network module, likewise.
        search: the search policy, likewise.
        donate: let XLA reuse the input state's buffers.
        members_at_once: how many members of a device one step of the program vmaps
            together; the groups then run one after another inside the same compiled
            iteration (``lax.map``); 1: one member at a time, no vmap. 0: all of a
            device's members at once. Which is fastest depends on the machine and the
            shapes: ``jaxzero.run.life.ways.choose`` measures it (the command line does).
        devices: how many devices split the members; 0: ``config.num_devices``.

    Returns:
        A :class:`Population`.

    Raises:
        ValueError: one line naming a setting that cannot differ between members (it
            fixes a shape or the code), a value list of the wrong length, a value a
            member's config refuses, or members that do not split over the devices.
    """
    seeds = tuple(int(s) for s in seeds)
    if not seeds:
        raise ValueError("a population needs at least one seed")
    if config.gate.enabled:
        raise ValueError(
            "the arena gate plays each run's own matches and cannot run for a population: "
            "set gate.enabled=false"
        )
    if config.search.reuse_tree:  # a checkpoint restores carried trees as one run's
        raise ValueError(
            "search.reuse_tree is not available to a population yet (its carried trees are "
            "restored per run): set search.reuse_tree=false"
        )
    hyper = _hyper_lists(hyper or {}, len(seeds))
    trainer = make_trainer(
        dataclasses.replace(config, num_devices=1), env=env, network=network, search=search
    )
    _check_search_fields(trainer.search, hyper)
    config = dataclasses.replace(trainer.config, num_devices=config.num_devices)
    members = tuple(
        apply_overrides(config, {"seed": seed} | {key: values[k] for key, values in hyper.items()})
        for k, seed in enumerate(seeds)
    )
    values = {key: jnp.asarray([_get(m, key) for m in members], jnp.float32) for key in hyper}
    mesh = sharding.make_mesh(devices or config.num_devices or _devices_for(len(seeds)))
    if len(seeds) % mesh.size:
        raise ValueError(
            f"a population of {len(seeds)} members cannot be split over {mesh.size} devices: "
            f"make it a multiple of {mesh.size}, or set num_devices=1"
        )
    step = _in_groups(trainer, len(seeds) // mesh.size, members_at_once)
    split = NamedSharding(mesh, P(sharding.DATA_AXIS))
    if mesh.size > 1:  # each device its own members: no collective at all
        step = jax.shard_map(
            step, mesh=mesh, in_specs=P(sharding.DATA_AXIS), out_specs=P(sharding.DATA_AXIS),
            check_vma=False,
        )  # fmt: skip
    return Population(
        config=config,
        members=members,
        seeds=seeds,
        hyper={key: tuple(float(_get(m, key)) for m in members) for key in hyper},
        trainer=trainer,
        values=jax.device_put(values, split),
        init_fn=jax.jit(jax.vmap(_member_init(trainer)), out_shardings=split),
        step=jax.jit(step, out_shardings=split, donate_argnums=(0,) if donate else ()),
    )


def _devices_for(members: int) -> int:
    """The most of this process's devices that split ``members`` evenly (0: every device,
    as a job of several processes must use)."""
    return math.gcd(members, jax.device_count()) if jax.process_count() == 1 else 0


def _member_init(trainer: Trainer) -> Callable[[Array], PopulationState]:
    """One member's ``init`` unjitted (the population's own jit places its members)."""
    init = make_init(trainer.config, trainer.env, trainer.network, trainer.optimizer)
    return lambda key: PopulationState.of(init(key), jnp.int32(0))


def _member_step(trainer: Trainer, member_axis: str | None) -> Callable:
    """``(state, values) -> (state, metrics, moves)`` of one member: make_step built on
    the shared config and search with the member's traced ``values`` in place of theirs
    (``{"optim.learning_rate": float32 [], ...}``), inside the vmap over ``member_axis``
    (or None: members one at a time)."""

    def one(state: PopulationState, values: dict[str, Array]):
        config = with_traced(trainer.config, values)
        optimizer = learner.make_optimizer(config.optim)  # its state's layout is init's
        search = with_settings(trainer.search, _search_values(values))
        step = make_step(
            config, trainer.env, trainer.apply_fn, optimizer, search,
            options=trainer.options, member_axis=member_axis,
        )  # fmt: skip
        return _unless_diverged(step, state)

    return one


def _unless_diverged(step: Callable, state: PopulationState):
    """``step`` of one member, its result kept only while the member stays finite: a
    diverged member's state stays its last finite one (a select, no host round trip),
    so that one member's fault never reaches the others' program or checkpoints."""
    before = state.train_state()
    after, metrics, moves = step(before)
    training = state.diverged_at == 0
    kept = training & (metrics[FINITE] > 0)
    after = jax.tree.map(lambda new, old: jnp.where(kept, new, old), after, before)
    diverged_at = jnp.where(training & ~kept, before.iteration + 1, state.diverged_at)
    metrics = metrics | {FINITE: kept.astype(jnp.float32)}
    return PopulationState.of(after, diverged_at.astype(jnp.int32)), metrics, moves


def _in_groups(trainer: Trainer, local: int, at_once: int) -> Callable:
    """One member's step over ``local`` members: ``at_once`` of them vmapped together
    (the members axis named, and passed to the search, so that their search loops end
    together), the groups one after another (``lax.map``) in the same program; one at a
    time, no vmap at all."""
    at_once = math.gcd(at_once, local) if at_once > 0 else local  # groups of equal size
    if at_once == 1:
        one = _member_step(trainer, None)
        return lambda state, values: jax.lax.map(lambda member: one(*member), (state, values))
    step = jax.vmap(_member_step(trainer, sharding.MEMBER_AXIS), axis_name=sharding.MEMBER_AXIS)
    if at_once == local:
        return step

    def grouped(state: TrainState, values: dict[str, Array]):
        fold = lambda x: x.reshape(local // at_once, at_once, *x.shape[1:])  # noqa: E731
        out = jax.lax.map(lambda group: step(*group), jax.tree.map(fold, (state, values)))
        return jax.tree.map(lambda x: x.reshape(local, *x.shape[2:]), out)

    return grouped


def _hyper_lists(hyper: Mapping[str, Any], size: int) -> dict[str, list[Any]]:
    """Every key of ``hyper`` checked to be traced, its values as a list of ``size``."""
    lists = {}
    for key, values in hyper.items():
        check_hyperparameter(key)
        values = list(values) if isinstance(values, list | tuple | np.ndarray) else [values]
        if len(values) == 1:
            values = values * size
        if len(values) != size:
            raise ValueError(
                f"{key} has {len(values)} values for a population of {size} members: give "
                f"{size}, or one for all"
            )
        lists[key] = values
    return lists


def check_hyperparameter(key: str) -> None:
    """ValueError, in one line, unless members of a population may differ in ``key``
    (one of :data:`TRACED`); it names what fixes a shape or the code."""
    if key in TRACED:
        return
    if key not in valid_keys() or key == "seed":
        hint = "the seeds are the population's" if key == "seed" else f"valid: {', '.join(TRACED)}"
        raise ValueError(f"{key!r} cannot be a population's hyperparameter; {hint}")
    raise ValueError(
        f"{key} fixes an array's shape or the compiled code, so the members of one "
        f"population cannot differ in it: run one population per value (settings "
        f"that may differ: {', '.join(TRACED)})"
    )


def _get(config: Config, key: str) -> Any:
    section, name = key.split(".")
    return getattr(getattr(config, section), name)


def _search_values(values: Mapping[str, Array]) -> dict[str, Array]:
    """The search policy's fields among ``values``: ``{"pb_c_init": ...}``."""
    return {key.split(".")[1]: v for key, v in values.items() if key.startswith("search.")}


def _check_search_fields(search: SearchPolicy, hyper: Mapping[str, Any]) -> None:
    """ValueError when a ``search.*`` setting on the axis is not one the policy has."""
    for key in hyper:
        if key.startswith("search."):
            try:
                with_settings(search, {key.partition(".")[2]: 0.0})
            except ValueError:
                raise ValueError(
                    f"{key} is not a setting of the {type(search).__name__} search the "
                    "population runs, so its members could not differ in it: drop it"
                ) from None
