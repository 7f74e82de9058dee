"""config.json, the config of a run directory or an agent folder, as written on disk.

Today's layout is :func:`jaxzero.core.config.config_to_dict`'s. Runs written before the
``evaluation`` and ``gate`` sections existed kept those settings in an ``arena`` section
and in ``search``; :func:`read_config_dict` reads them in today's layout, so old run
directories keep loading.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jaxzero.core.config import Config, config_from_dict, flatten, unflatten
from jaxzero.run.folder.reads import read_json

# The older layout's dotted keys -> today's. arena.simulations (0: "the evaluation count")
# is folded in by _upgrade.
_RENAMED = {
    "search.eval_simulations": "evaluation.simulations",
    "search.average_symmetries": "evaluation.average_symmetries",
    "arena.opening_plies": "evaluation.opening_plies",
    "arena.eval_every": "evaluation.every",
    "arena.eval_games": "evaluation.games",
    "arena.enabled": "gate.enabled",
    "arena.every": "gate.every",
    "arena.num_games": "gate.num_games",
    "arena.threshold": "gate.threshold",
    "train.num_devices": "num_devices",
}


# The sections' defaults that changed on 2026-12-07, when they became what
# jaxzero.default_config gives, and their values before. config.json records every key, so
# a file lacks one only if it was written before the key existed: its run used the value
# of that time, which it keeps.
_DEFAULTS_BEFORE = {
    "network.value_channels": 1, "network.value_hidden": 0, "search.num_simulations": 32,
    "selfplay.batch_size": 256, "replay.capacity": 100_000, "replay.min_size": 1_000,
    "optim.learning_rate": 1e-3, "optim.schedule": "constant", "optim.warmup_steps": 0,
    "optim.decay_steps": 10_000, "evaluation.simulations": 64, "evaluation.every": 100,
    "evaluation.games": 100, "train.log_every": 10, "train.checkpoint_every": 100,
    "train.keep_every": 100,
}  # fmt: skip


def read_config_dict(data: Any) -> Config:
    """The Config of a config.json's contents, in either layout.

    Args:
        data: the parsed JSON.

    Returns:
        The Config.

    Raises:
        ValueError: naming the unknown key or the bad value.
    """
    if not isinstance(data, dict):
        raise ValueError(f"config: expected a mapping, got {data!r}")
    return config_from_dict(_with_defaults_before(_upgrade(data)))


def read_config_file(path: Path) -> Config:
    """The Config in the file ``path``, a config.json read as :mod:`jaxzero.run.folder.reads`
    reads a folder's files (OSError; ValueError as they, json and the config raise)."""
    return read_config_dict(read_json(path, path.parent))


def _upgrade(data: dict[str, Any]) -> dict[str, Any]:
    """A config dict of the older layout (``arena`` section, ``search.eval_simulations``...)
    in today's; today's layout is returned as it is."""
    flat = flatten(data, sep=".")
    if not any(key in flat for key in (*_RENAMED, "arena.simulations")):
        return data
    arena_simulations = flat.pop("arena.simulations", 0)
    new = {_RENAMED.get(key, key): value for key, value in flat.items()}
    if arena_simulations:  # the gate's and evaluation's count; the two are one count now
        new["evaluation.simulations"] = arena_simulations
    return unflatten(new, sep=".")


def _with_defaults_before(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with each key of :data:`_DEFAULTS_BEFORE` it lacks set to its old value (a
    section that is no mapping is left for the config to refuse)."""
    data = dict(data)
    for key, value in _DEFAULTS_BEFORE.items():
        name, field = key.split(".")
        section = data.get(name, {})
        if isinstance(section, dict) and field not in section:
            data[name] = {**section, field: value}
    return data
