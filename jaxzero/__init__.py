"""jaxzero: AlphaZero machinery over the `envs` API.

    import jaxzero
    agent = jaxzero.load_agent("connect_four")        # the agent shipped in the package
    agent = jaxzero.load_agent("runs/connect_four")   # or one you trained
    trainer = jaxzero.make_trainer(jaxzero.get_preset("tic_tac_toe"))

Names are imported on first use, so ``import jaxzero`` (and the CLI's start-up) stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    # configs (jaxzero.core)
    "Config": "jaxzero.core.config",
    "apply_overrides": "jaxzero.core.config",
    "get_preset": "jaxzero.core.presets",
    # the compiled iteration
    "make_trainer": "jaxzero.core.loop",
    "Trainer": "jaxzero.core.loop",
    "TrainState": "jaxzero.core.loop",
    # measuring (jaxzero.measure)
    "SearchPlayer": "jaxzero.measure.players",
    "RawPolicyPlayer": "jaxzero.measure.players",
    "make_opponent": "jaxzero.measure.opponents",
    "make_match": "jaxzero.measure.match",
    "play_match": "jaxzero.measure.match",
    "MatchResult": "jaxzero.measure.match",
    "optimal_move_share": "jaxzero.measure.positions",
    # running (jaxzero.run)
    "train": "jaxzero.run.driver",
    "Agent": "jaxzero.run.agent",
    "load_agent": "jaxzero.run.agent",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'jaxzero' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
