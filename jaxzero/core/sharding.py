"""Data parallelism: the one compiled iteration over a 1-D device mesh, on one or many hosts.

The mesh has one axis, ``data``. Everything with a batch or capacity axis is split along
it; the networks and their optimiser state are replicated:

    TrainState field            sharding
    selfplay.*  [B, ...]        P("data")   each device plays B / n of the games
    replay.*    [C, ...]        P("data")   each device holds a ring of C / n slots
    replay.insert_index, size   P("data")   int32 [n], one per ring (scalars on one device)
    params, best_params,        P()         replicated
    opt_state, key, counters

On one device the iteration is ``jaxzero.core.loop.make_step`` jitted as it is. On n > 1
devices it runs under ``jax.shard_map`` (no per-device Python, no ``pmap``): each device
plays its own games and searches them with its own key (the loop's key folded with the
device's index), writes their positions into its own ring, and samples its N / n share
of each minibatch from it; the updates average their gradients over the mesh
(``pmean``), and the metric sums are added up (``psum``). Nothing inside self-play or the
search talks to another device, so self-play scales with the devices. n devices
therefore draw other random numbers than one device does; what they compute is exactly
what one device computes running the same per-device program over the n shards
(``jax.vmap`` with the axis name, ``tests/core/test_sharding.py``).

Global sizes stay global: ``selfplay.batch_size``, ``optim.minibatch_size`` and
``replay.capacity`` are totals, divided across the mesh, and must be multiples of its
size (:func:`check_divisible`).

Several hosts: call :func:`initialize` (coordinator address, process count and id from
arguments or the ``JAXZERO_*`` environment variables) in every process before anything
else touches JAX; ``jax.devices()`` then lists every host's devices and the mesh spans
them all. See docs/scaling.md for the launch recipe.
"""

from __future__ import annotations

import os
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

DATA_AXIS = "data"
# A population's members (jaxzero.core.population): the vmapped axis of its iteration.
MEMBER_AXIS = "members"

ENV_COORDINATOR = "JAXZERO_COORDINATOR"  # host:port of process 0's coordinator service
ENV_NUM_PROCESSES = "JAXZERO_NUM_PROCESSES"  # processes in the job (one per host)
ENV_PROCESS_ID = "JAXZERO_PROCESS_ID"  # this process's rank, 0 .. num_processes - 1


def initialize(
    coordinator: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
) -> bool:
    """Join a multi-process JAX job; True when this process is now part of one.

    Arguments left ``None`` are read from ``JAXZERO_COORDINATOR``, ``JAXZERO_NUM_PROCESSES``
    and ``JAXZERO_PROCESS_ID``. With no coordinator and one (or no) process count given,
    nothing happens (a single-process run). Must run before any other JAX call in the
    process; calling it again once initialised is a no-op.
    """
    if jax.distributed.is_initialized():
        return True
    env = os.environ
    coordinator = coordinator or env.get(ENV_COORDINATOR) or None
    if num_processes is None and env.get(ENV_NUM_PROCESSES):
        num_processes = int(env[ENV_NUM_PROCESSES])
    if process_id is None and env.get(ENV_PROCESS_ID):
        process_id = int(env[ENV_PROCESS_ID])
    if coordinator is None and (num_processes or 1) == 1:
        return False
    if coordinator is None or num_processes is None or process_id is None:
        raise ValueError(
            f"a multi-process run needs all of {ENV_COORDINATOR} (host:port of process 0), "
            f"{ENV_NUM_PROCESSES} and {ENV_PROCESS_ID}; got coordinator={coordinator!r}, "
            f"num_processes={num_processes!r}, process_id={process_id!r}"
        )
    if not 0 <= process_id < num_processes:
        raise ValueError(f"process id {process_id} is outside 0 .. {num_processes - 1}")
    jax.distributed.initialize(
        coordinator_address=coordinator, num_processes=num_processes, process_id=process_id
    )
    return True


def is_main_process() -> bool:
    """Process 0: the one that logs and writes the run directory's files."""
    return jax.process_index() == 0


def make_mesh(num_devices: int = 0) -> Mesh:
    """A 1-D mesh (axis ``data``) over the first ``num_devices`` devices (0 = all).

    Across several processes every device must be used (each process holds its share
    of the sharded arrays).
    """
    devices = jax.devices()
    n = len(devices) if num_devices == 0 else num_devices
    if not 1 <= n <= len(devices):
        raise ValueError(
            f"num_devices={num_devices}: JAX sees {len(devices)} device(s) "
            f"({devices[0].platform}); use 0 for all of them or a number up to {len(devices)}"
        )
    if jax.process_count() > 1 and n != len(devices):
        raise ValueError(
            f"num_devices={num_devices}: a {jax.process_count()}-process run uses every "
            f"device ({len(devices)}); set num_devices=0"
        )
    return Mesh(np.asarray(devices[:n]), (DATA_AXIS,))


def check_divisible(config: Any, num_devices: int) -> None:
    """Raise ValueError unless every global size of ``config`` splits evenly over the mesh."""
    sizes = {
        "selfplay.batch_size": config.selfplay.batch_size,
        "optim.minibatch_size": config.optim.minibatch_size,
        "replay.capacity": config.replay.capacity,
    }
    bad = {name: size for name, size in sizes.items() if size % num_devices}
    if bad:
        listed = ", ".join(f"{name}={size}" for name, size in bad.items())
        raise ValueError(
            f"batch sizes are global and divided over the {num_devices} devices of the data "
            f"mesh, so each must be a multiple of {num_devices}: {listed}; change them or "
            f"set num_devices"
        )


def replicated(mesh: Mesh) -> NamedSharding:
    return NamedSharding(mesh, P())


def data_sharded(mesh: Mesh) -> NamedSharding:
    """Split the leading axis over ``data``."""
    return NamedSharding(mesh, P(DATA_AXIS))


def state_shardings(abstract_state: Any, mesh: Mesh) -> Any:
    """The TrainState-shaped tree of shardings in the module docstring's table.

    ``abstract_state`` is a TrainState (of arrays or ``jax.ShapeDtypeStruct``s).
    """
    rep, data = replicated(mesh), data_sharded(mesh)

    def by_rank(x: Any) -> NamedSharding:
        return data if len(x.shape) else rep

    everything = jax.tree.map(lambda _: rep, abstract_state)
    return everything.replace(
        selfplay=jax.tree.map(by_rank, abstract_state.selfplay),
        replay=jax.tree.map(by_rank, abstract_state.replay),
    )


def specs(shardings: Any) -> Any:
    """The PartitionSpecs of a tree of NamedShardings (``shard_map``'s in/out specs)."""
    return jax.tree.map(lambda s: s.spec, shardings)


def most_over_members(x: jax.Array, member_axis: str | None) -> jax.Array:
    """``x``'s largest value over a population's members when traced inside the vmap over
    them (``member_axis``, e.g. :data:`MEMBER_AXIS`), else (None) ``x``.

    A ``while_loop`` whose condition differs between vmapped members becomes a loop that
    selects between its old and new carry, all of it, at every iteration (the search
    tree, in a backup). Conditioned on the value shared by all members, the loop runs
    to the slowest member and its body, which already masks the trees that are done,
    writes nothing more.

    Args:
        x: an integer or boolean array.
        member_axis: the population axis's name, or None outside a population's vmap.

    Returns:
        An array like ``x``: the maximum over the members (the same in each).
    """
    return x if member_axis is None else jax.lax.pmax(x, member_axis)
