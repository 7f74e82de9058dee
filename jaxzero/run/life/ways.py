"""How a population's members run on this machine: over its cores, in the way measured fastest.

A population is one compiled program, but how its P members run inside it is open: split
over D devices (each member whole on one, no collective), and on each device its members
either vmapped together or one at a time (``lax.map``), or groups in between
(``members_at_once``). Which is fastest depends on the machine and the shapes, not on the
backend's name (docs/populations.md measures it):

* On a CPU, XLA runs one program's operations on one core at a time, so P runs one after
  another, or P members one after another in one program, leave the other cores idle.
  :func:`use_host_cores` makes each core a device of its own (XLA's
  ``--xla_force_host_platform_device_count``, before JAX starts its backends), so that the
  members split over the cores and run at once. Single runs keep their one device.
* :func:`choose` times each candidate way on the population at hand (compiled, then
  called until it has a steady time), picks the fastest and keeps the answer in a small
  JSON file per user, keyed by the machine (device kind and count, jax's version) and
  everything that shapes the program; the next population of the same shapes reads it.

``jaxzero train --seeds N`` does both; ``--members-at-once K`` (or
``$JAXZERO_MEMBERS_AT_ONCE``) sets the way instead of measuring it (over
``num_devices``' devices, or the most that split the members).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import jax
from jax._src import xla_bridge

from jaxzero.core.config import Config, apply_overrides, config_to_dict
from jaxzero.core.population import Population, make_population
from jaxzero.run.folder.reads import SMALL, read_json

HOST_DEVICES_VAR = "JAXZERO_HOST_DEVICES"  # cores as CPU devices: a count, or 1 (off)
AT_ONCE_VAR = "JAXZERO_MEMBERS_AT_ONCE"  # a way set by hand: members vmapped together
DEVICES_FLAG = "--xla_force_host_platform_device_count"  # XLA's: CPU devices


def use_host_cores(count: int | None = None) -> int:
    """Make each of this machine's cores a JAX CPU device, if JAX has not started yet.

    Args:
        count: the devices; None: ``$JAXZERO_HOST_DEVICES``, else the cores this process
            may run on.

    Returns:
        The CPU devices the process will have (1 when nothing was changed: JAX's
        backends already started, or ``XLA_FLAGS`` already sets the count, whose own
        count is then returned).
    """
    flags = os.environ.get("XLA_FLAGS", "")
    if DEVICES_FLAG in flags:
        return int(flags.split(f"{DEVICES_FLAG}=")[1].split()[0])
    if xla_bridge.backends_are_initialized():  # too late for this process
        return 1
    if count is None:
        count = int(os.environ.get(HOST_DEVICES_VAR) or len(os.sched_getaffinity(0)))
    if count > 1:
        os.environ["XLA_FLAGS"] = f"{flags} {DEVICES_FLAG}={count}".strip()
    return max(count, 1)


@dataclasses.dataclass(frozen=True)
class Way:
    """How the members run: over ``devices`` devices, ``at_once`` of a device's members
    vmapped together (1: one at a time)."""

    devices: int
    at_once: int

    def __str__(self) -> str:
        members = "one at a time" if self.at_once == 1 else f"{self.at_once} at once"
        return f"members {members} on {self.devices} device{'s' * (self.devices > 1)}"


def candidates(members: int, num_devices: int = 0) -> list[Way]:
    """The ways to run ``members``: over 1 device and over the most devices that split
    them (``num_devices`` when set), each one at a time and all of a device's at once."""
    most = num_devices or math.gcd(members, jax.device_count())
    ways = []
    for devices in dict.fromkeys([most, 1] if not num_devices else [most]):
        for at_once in dict.fromkeys([1, members // devices]):
            ways.append(Way(devices, at_once))
    return ways


def choose(
    config: Config,
    *,
    seeds: Sequence[int],
    hyper: Mapping[str, Sequence[float] | float] | None = None,
    at_once: int | None = None,
    build: Callable[..., Population] = make_population,
    cache: Path | None = None,
    log: Callable[[str], None] = lambda line: None,
) -> Way:
    """The fastest way to run this population here: read from ``cache``, else measured.

    Each candidate (:func:`candidates`) is built by ``build(config, seeds=, hyper=,
    members_at_once=, devices=)`` for one self-play move and the updates
    that go with it per iteration (the same per-move work, a shorter call), compiled and
    timed. ``at_once`` or ``$JAXZERO_MEMBERS_AT_ONCE`` skips the measurement.

    Args:
        config: the population's shared config.
        seeds: its members' seeds (their count is P).
        hyper: its hyperparameters on the axis.
        at_once: the members vmapped together on each device, set by hand (0: all of
            them): nothing is measured; None: ``$JAXZERO_MEMBERS_AT_ONCE``, else measured.
        build: ``make_population`` or one with the game, network and search bound.
        cache: the JSON file of earlier answers; None: :func:`default_cache`.
        log: called with a line saying what was measured or read.

    Returns:
        The :class:`Way` to pass on to ``make_population`` (``devices=way.devices``,
        ``members_at_once=way.at_once``).
    """
    members = len(seeds)
    if at_once is None and os.environ.get(AT_ONCE_VAR):
        at_once = int(os.environ[AT_ONCE_VAR])
    if at_once is not None:
        devices = config.num_devices or math.gcd(members, jax.device_count())
        way = Way(devices, at_once or members // devices)
        log(f"{way} (as set, not measured)")
        return way
    ways = candidates(members, config.num_devices)
    if len(ways) == 1:
        return ways[0]
    cache = cache or default_cache()
    key = _key(config, members, hyper)
    known = _known(_read(cache).get(key))
    if known in ways:
        log(f"{known} (measured before, {cache})")
        return known
    probe = _probe(config)
    times = {}
    for way in ways:
        population = build(
            probe, seeds=seeds, hyper=hyper, members_at_once=way.at_once, devices=way.devices,
        )  # fmt: skip
        times[way] = _seconds_per_call(population)
    best = min(times, key=times.__getitem__)
    found = ", ".join(f"{way}: {seconds * 1e3:,.1f} ms" for way, seconds in times.items())
    log(f"{best} (measured a move of each way: {found})")
    _write(cache, key, {"devices": best.devices, "at_once": best.at_once, "measured": found})
    return best


def default_cache() -> Path:
    """``$XDG_CACHE_HOME/jaxzero/population_ways.json`` (``~/.cache/...``)."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "jaxzero" / "population_ways.json"


def _probe(config: Config) -> Config:
    """``config`` cut to one self-play move and its share of the updates per iteration:
    each way's per-move work is the iteration's, in a call T times shorter."""
    moves = config.selfplay.moves_per_iteration
    updates = max(1, round(config.optim.updates_per_iteration / moves))
    return apply_overrides(
        config, {"selfplay.moves_per_iteration": 1, "optim.updates_per_iteration": updates}
    )


def _seconds_per_call(population: Population, calls: int = 3) -> float:
    """The median seconds of ``calls`` iterations after a compiling one."""
    state = jax.block_until_ready(population.iteration(population.init())[0])
    times = []
    for _ in range(calls):
        begin = time.perf_counter()
        state = jax.block_until_ready(population.iteration(state)[0])
        times.append(time.perf_counter() - begin)
    return statistics.median(times)


def _key(config: Config, members: int, hyper: Mapping[str, Any] | None) -> str:
    """What shapes the program and where it runs, as a short hash."""
    shape = config_to_dict(apply_overrides(config, {"seed": 0}))
    device = jax.devices()[0]
    what = {
        "config": shape,
        "members": members,
        "traced": sorted(hyper or {}),
        "device": [device.platform, device.device_kind, jax.device_count()],
        "jax": jax.__version__,
    }
    return hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()[:24]


def _read(cache: Path) -> dict[str, Any]:
    """The cache's entries; {} for a file that is not jaxzero's JSON object (a FIFO, a
    device or a huge file is refused unread): a broken cache is no cache, measured again
    and rewritten."""
    try:
        data = read_json(cache, cache.parent, SMALL)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _known(entry: Any) -> Way | None:
    """The way an entry of the cache names, or None for one jaxzero did not write."""
    try:
        devices, at_once = entry["devices"], entry["at_once"]
    except (TypeError, KeyError, IndexError):
        return None
    if not all(type(n) is int for n in (devices, at_once)):  # no bool, float or text
        return None
    return Way(devices, at_once)


def _write(cache: Path, key: str, value: dict[str, Any]) -> None:
    """Add ``key`` to the cache file; a cache that cannot be written is no cache."""
    data = _read(cache) | {key: value}
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        partial = cache.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(json.dumps(data, indent=1))
        partial.replace(cache)
    except OSError:
        pass
