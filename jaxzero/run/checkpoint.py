"""Checkpoints of a whole training run, with orbax.

A checkpoint is everything needed to continue exactly: the TrainState pytree (params,
optimiser state, replay buffer, in-progress games, RNG key, counters) and the config as
JSON. Orbax writes each step into a temporary directory and renames it when complete, so
a crash during a save leaves the previous checkpoints intact; an unfinished step is
never listed.

Typed PRNG keys (``jax.random.key``) are stored as their raw key data and re-wrapped on
restore, so any TrainState that JAX can hold can be saved.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import jax
import orbax.checkpoint as ocp

CHECKPOINT_DIR = "checkpoints"


class CheckpointError(RuntimeError):
    """A checkpoint is missing or unreadable; the message says what to do."""


def _is_key(x: Any) -> bool:
    return hasattr(x, "dtype") and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)


def _to_storable(tree: Any) -> Any:
    return jax.tree.map(lambda x: jax.random.key_data(x) if _is_key(x) else x, tree)


def _storable_target(abstract: Any) -> Any:
    def target(x: Any) -> Any:
        return jax.eval_shape(jax.random.key_data, x) if _is_key(x) else x

    return jax.tree.map(target, abstract)


def _restore_target(abstract: Any) -> Any:
    """What orbax restores into: shapes and dtypes of ``abstract``, keys as raw data."""
    return _storable_target(jax.tree.map(ocp.utils.to_shape_dtype_struct, abstract))


def _from_storable(tree: Any, abstract: Any) -> Any:
    def restore(x: Any, like: Any) -> Any:
        if _is_key(like):
            return jax.random.wrap_key_data(x)  # the default key implementation
        return x

    return jax.tree.map(restore, tree, abstract)


class Checkpointer:
    """Saves and restores TrainState snapshots under ``run_dir/checkpoints/<iteration>``."""

    def __init__(self, run_dir: str | Path, *, max_to_keep: int = 3, keep_every: int = 0):
        """Keep the newest ``max_to_keep`` checkpoints, and every one whose step is a
        multiple of ``keep_every`` (for Elo curves over a run's history; 0: none)."""
        self.directory = Path(run_dir).absolute() / CHECKPOINT_DIR
        options = ocp.CheckpointManagerOptions(
            max_to_keep=max_to_keep, keep_period=keep_every or None, create=True
        )
        self._manager = ocp.CheckpointManager(self.directory, options=options)

    def steps(self) -> list[int]:
        return list(self._manager.all_steps())

    def latest_step(self) -> int | None:
        return self._manager.latest_step()

    def save(self, step: int, state: Any, config: dict[str, Any]) -> None:
        """Write ``state`` and ``config`` as checkpoint ``step`` and wait until it is on disk."""
        self._manager.save(
            step,
            args=ocp.args.Composite(
                state=ocp.args.StandardSave(_to_storable(state)),
                config=ocp.args.JsonSave(config),
            ),
            force=True,
        )
        self._manager.wait_until_finished()

    def restore(self, abstract_state: Any, step: int | None = None) -> tuple[Any, dict[str, Any]]:
        """Read checkpoint ``step`` (default: the latest) shaped like ``abstract_state``."""
        step = self._check_step(step)
        difference = self._layout_difference(step, abstract_state)
        if difference:
            raise CheckpointError(
                f"checkpoint {step} in {self.directory} holds a training state of another "
                f"jaxzero version ({difference}), so it cannot be resumed; its network still "
                f"plays (jaxzero eval/play load it): start a new run in a new --out directory"
            )
        restored = self._restore(
            step,
            state=ocp.args.StandardRestore(_restore_target(abstract_state)),
            config=ocp.args.JsonRestore(),
        )
        return _from_storable(restored.state, abstract_state), restored.config

    def restore_fields(self, abstract_state: Any, fields: list[str], step: int | None = None):
        """Only the named top-level fields of checkpoint ``step``, as a dict shaped like
        those fields of ``abstract_state``: an agent needs its parameters, not the replay
        buffer, and reads them whatever else the saved state holds."""
        step = self._check_step(step)
        wanted = {name: getattr(abstract_state, name) for name in fields}
        target = _restore_target(wanted)
        restored = self._restore(
            step,
            state=ocp.args.PyTreeRestore(
                target,
                restore_args=ocp.checkpoint_utils.construct_restore_args(target),
                partial_restore=True,
            ),
        )
        return _from_storable(dict(restored.state), wanted)

    def _check_step(self, step: int | None) -> int:
        step = self.latest_step() if step is None else step
        if step is None:
            raise CheckpointError(f"no checkpoint in {self.directory}; start a new run instead")
        if step not in self.steps():
            raise CheckpointError(
                f"no checkpoint {step} in {self.directory}; available: {self.steps()}"
            )
        return step

    def _layout_difference(self, step: int, abstract_state: Any) -> str:
        """'' if checkpoint ``step`` stores the fields of ``abstract_state`` (a dataclass
        pytree, and each dataclass field of it), else which fields are missing or extra."""
        try:
            saved = ocp.PyTreeCheckpointer().metadata(self.directory / str(step) / "state")
            saved = saved.item_metadata
        except Exception:  # unreadable metadata: the restore itself reports it
            return ""
        problems = []

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

    def _restore(self, step: int, **items: Any) -> Any:
        try:
            return self._manager.restore(step, args=ocp.args.Composite(**items))
        except Exception as error:  # orbax raises many types for damaged files
            reason = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise CheckpointError(
                f"checkpoint {step} in {self.directory} is unreadable ({reason}); "
                f"delete that folder to resume from an earlier one"
            ) from error

    def close(self) -> None:
        self._manager.close()

    def __enter__(self) -> Checkpointer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
