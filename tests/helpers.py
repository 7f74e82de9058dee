"""Helpers the test files share (conftest.py puts this folder on ``sys.path``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp

from jaxzero.core.config import Config, config_to_dict
from jaxzero.core.loop import Trainer
from jaxzero.run.life.checkpoint import Checkpointer
from jaxzero.run.life.driver import prepare_run_dir


def error_line(result: Any) -> str:
    """The one line a refused ``jaxzero`` command ends with (a ``CliRunner`` result): it
    exits 2, prints no traceback, and its last non-blank line starts ``error: ``."""
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output, result.output
    line = [line for line in result.output.splitlines() if line.strip()][-1]
    assert line.startswith("error: "), result.output
    return line


def checkpointed_run(
    run: Path,
    config: Config,
    trainer: Trainer,
    steps: Iterable[int],
    edit: Callable[[int, Any], Any] | None = None,
    **checkpointer_options: Any,
) -> Path:
    """A run folder of ``config`` with a checkpoint at each of ``steps``: the untrained
    state ``trainer.init(key(step))`` at iteration ``step`` (``edit(step, state)`` changes
    it first); ``checkpointer_options`` go to the ``Checkpointer`` (``keep_every=2``)."""
    prepare_run_dir(run, config, resume=False, force=False)
    with Checkpointer(run, **checkpointer_options) as checkpointer:
        for step in steps:
            state = trainer.init(jax.random.key(step)).replace(iteration=jnp.int32(step))
            if edit is not None:
                state = edit(step, state)
            checkpointer.save(step, state, config_to_dict(config))
    return run


def restored_state(run: Path, trainer: Trainer, step: int | None = None) -> Any:
    """The training state of ``run``'s checkpoint ``step`` (the newest when None)."""
    abstract = jax.eval_shape(trainer.init, jax.random.key(0))
    with Checkpointer(run) as checkpointer:
        return checkpointer.restore(abstract, step)[0]
