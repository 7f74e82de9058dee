"""jaxzero: AlphaZero machinery over the `envs` API.

    import jaxzero
    agent = jaxzero.load_agent("runs/connect_four")
    trainer = jaxzero.make_trainer(jaxzero.get_preset("tic_tac_toe"))

Names are imported on first use, so ``import jaxzero`` (and the CLI's start-up) stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Agent": "jaxzero.agent",
    "load_agent": "jaxzero.agent",
    "Config": "jaxzero.config",
    "get_preset": "jaxzero.config",
    "apply_overrides": "jaxzero.config",
    "make_trainer": "jaxzero.loop",
    "TrainState": "jaxzero.loop",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'jaxzero' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
