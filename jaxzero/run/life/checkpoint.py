"""Checkpoints of a whole training run, with orbax: :class:`Checkpointer` saves and
restores them, and says in one line what to do when one is missing or damaged.

A checkpoint is everything needed to continue exactly: the TrainState pytree (params,
optimiser state, replay buffer, in-progress games, RNG key, counters) and the config as
JSON. Orbax writes each step into a temporary directory and renames it when complete, so
a crash during a save leaves the previous checkpoints intact; an unfinished step is
never listed. Saves are synchronous: a save that fails (a full disk, a read-only
folder) raises :class:`CheckpointError` at once, and training stops with the previous
checkpoint intact.

Every load checks the step's checksums (:mod:`jaxzero.run.folder.checksums`), so damaged bytes
are refused, naming the newest intact step to fall back to, instead of playing with NaNs.
Which steps a run keeps, and how a reader of a run still training keeps its step, is
:mod:`jaxzero.run.life.retention`; how a state is stored, and an older jaxzero's read back,
is :mod:`jaxzero.run.folder.stored_state`. ``load_agent``, ``eval`` and ``export`` read a
history checkpoint (its network only) or a whole one; a resume takes only a whole one.

A checkpoint folder's number is the iteration it holds; a restore checks it, so folders
renamed or swapped by hand are refused, naming both numbers. A read that fails because
its step went (the retention of a run still training) raises :class:`CheckpointRemoved`,
never "damaged". Parameters that are NaN or infinite (a diverged run, saved by an older
jaxzero) are refused on every restore, naming the earlier checkpoints.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import orbax.checkpoint as ocp

from jaxzero.core import sharding
from jaxzero.run.folder import nolink, stored_state
from jaxzero.run.folder.checksums import damaged_file, write_checksums
from jaxzero.run.folder.files import FileProblem, os_reason
from jaxzero.run.folder.layout import CHECKPOINT_DIR, CHECKSUMS
from jaxzero.run.folder.reads import odd_entry
from jaxzero.run.folder.stored_state import (
    ADDED_FIELDS,
    ADDED_SELFPLAY_FIELDS,
    AGENT_FIELDS,
    AGENT_ITEM,
    STATE_ITEM,
    UNSAVED_SELFPLAY_FIELDS,
)
from jaxzero.run.life.retention import (
    REMOVED,
    Retention,
    empty_removed,
    hold,
    lighten_history,
    release,
)

__all__ = [
    "ADDED_FIELDS",
    "ADDED_SELFPLAY_FIELDS",
    "AGENT_FIELDS",
    "AGENT_ITEM",
    "CHECKPOINT_DIR",
    "CHECKSUMS",
    "REMOVED",
    "STATE_ITEM",
    "UNSAVED_SELFPLAY_FIELDS",
    "CheckpointError",
    "CheckpointRemoved",
    "Checkpointer",
    "damaged_file",
    "write_checksums",
]

# What a step holds beyond its arrays' bytes: orbax's metadata, the config, the checksums.
SLACK = 64 << 20


class CheckpointError(RuntimeError):
    """A checkpoint is missing, damaged, unreadable or cannot be written; the message
    says what to do."""


class CheckpointRemoved(CheckpointError):
    """A checkpoint that was there is gone, removed while being read: by the retention
    of the run, still training. Nothing is wrong with the run; read another step."""

    def __init__(self, message: str, step: int, folder: Path):
        super().__init__(message)
        self.step, self.folder = step, folder  # the step, and its run's checkpoints/


class Checkpointer:
    """Saves and restores TrainState snapshots under ``run_dir/checkpoints/<iteration>``."""

    def __init__(
        self,
        run_dir: str | Path,
        *,
        max_to_keep: int = 3,
        keep_every: int = 0,
        read_only: bool = False,
    ):
        """Keep the newest ``max_to_keep`` checkpoints, and every one whose step is a
        multiple of ``keep_every`` (for Elo curves over a run's history; 0: none).
        ``read_only``: only load (an agent), never create or delete anything."""
        self.directory = Path(run_dir).absolute() / CHECKPOINT_DIR
        self.shown = Path(run_dir) / CHECKPOINT_DIR  # as the user named it, for messages
        self._run_dir = Path(run_dir)
        self._max_to_keep, self._keep_every = max_to_keep, keep_every
        if not read_only:
            self._check_writable()
        self._retention = Retention(self.directory, max_to_keep, keep_every)
        self._read_only = read_only
        self._holding: list[int] = []  # folders this reader holds (_hold)
        self._most_bytes: int | None = None  # what a step may hold (expect)
        keeping = {
            "preservation_policy": self._retention,
            "todelete_subdir": REMOVED,  # a step leaves at once (a rename), never half
        }
        options = ocp.CheckpointManagerOptions(
            **({"save_interval_steps": 0} if read_only else keeping),
            create=not read_only,
            read_only=read_only,
            enable_async_checkpointing=False,  # a failed save raises here, not in a thread
        )
        self._refuse_odd_steps()  # orbax opens each step's metadata as it lists them
        for attempt in range(3):
            try:
                with stored_state.quiet_orbax_notices():
                    self._manager = ocp.CheckpointManager(self.directory, options=options)
                break
            # a step listed, then removed by a training run: gone (FileNotFoundError), or
            # gone between orbax's exists() and is_dir() (its NotADirectoryError)
            except (FileNotFoundError, NotADirectoryError):
                if not read_only or attempt == 2:
                    raise

    def _refuse_odd_steps(self) -> None:
        """CheckpointError when a step folder holds, at its top, what is neither a folder
        nor a regular file (a FIFO named ``_CHECKPOINT_METADATA`` hangs orbax's listing)."""
        if not self.directory.is_dir():
            return
        for step in self.directory.iterdir():
            odd = odd_entry(step, top_only=True) if step.name.isdigit() else None
            if odd is not None:
                raise CheckpointError(
                    f"checkpoint {step.name} in {self.shown} is damaged ({odd}); delete "
                    f"{self.shown / step.name} to use the others"
                )

    def _check_writable(self) -> None:
        """CheckpointError now, before any training, when checkpoints cannot be written,
        or when ``checkpoints/``, a step or an entry of one is a symbolic link: orbax
        writes and deletes there by path (:mod:`jaxzero.run.folder`)."""
        found = nolink.links_below(self._run_dir, self.shown, depth=2)
        if found:
            raise CheckpointError(found)
        try:
            nolink.check_writable(self._run_dir, self.shown, "checkpoints")
        except FileProblem as problem:
            raise CheckpointError(str(problem)) from None

    def expect(self, abstract_state: Any) -> None:
        """Bound the bytes a step may hold by the arrays of ``abstract_state`` (twice their
        size, and :data:`SLACK`): a step stuffed with a huge file is then refused before
        its bytes are hashed."""
        leaves = jax.tree.leaves(stored_state.saved_part(abstract_state))
        arrays = sum(int(np.prod(x.shape)) * np.dtype(x.dtype).itemsize for x in leaves)
        self._most_bytes = 2 * arrays + SLACK

    def steps(self) -> list[int]:
        return list(self._manager.all_steps())

    def latest_step(self) -> int | None:
        return self._manager.latest_step()

    def save(self, step: int, state: Any, config: dict[str, Any]) -> None:
        """Write ``state`` and ``config`` as checkpoint ``step``, on disk when this returns;
        CheckpointError (the earlier checkpoints intact) when it cannot be written."""
        existed = step in self.steps()
        items = {
            STATE_ITEM: ocp.args.StandardSave(
                stored_state.to_storable(stored_state.saved_part(state))
            ),
            "config": ocp.args.JsonSave(config),
        }
        if self._keep_every and step % self._keep_every == 0 and stored_state.has_agent(state):
            agent = {name: getattr(state, name) for name in AGENT_FIELDS}
            items[AGENT_ITEM] = ocp.args.StandardSave(stored_state.to_storable(agent))
        found = nolink.links_below(self._run_dir, self.shown, depth=2)  # one planted since
        if found:
            raise CheckpointError(f"could not save checkpoint {step}: {found}")
        try:
            empty_removed(self.directory)  # what a crash left there, in the way of a rename
            self._manager.save(step, args=ocp.args.Composite(**items), force=True)
            self._manager.wait_until_finished()
            if sharding.is_main_process():
                write_checksums(self.directory, self.directory / str(step))
            empty_removed(self.directory)  # the steps retention just moved out
        except Exception as error:  # orbax raises many types for a failed write
            self._retention.release()
            if sharding.is_main_process() and not existed:  # never a step that was there
                self._discard_unfinished(step)
            intact = [s for s in self.steps() if s != step]
            kept = f"checkpoint {intact[-1]} is intact" if intact else "no earlier checkpoint"
            raise CheckpointError(
                f"could not save checkpoint {step} in {self.shown}: "
                f"{os_reason(error)}; {kept}, resume from it once fixed "
                f"(jaxzero train --resume --out {self.shown.parent})"
            ) from None
        self._retention.release()
        if sharding.is_main_process():
            history = self.steps()[: -self._max_to_keep] if self._max_to_keep else []
            lighten_history(self.directory, history)

    def _discard_unfinished(self, step: int) -> None:
        """Remove what a failed save of ``step`` left (orbax's temporary folder, or a
        step without its checksums), so that no later load takes it for a checkpoint."""
        for path in self.directory.glob(f"{step}.orbax-checkpoint-tmp*"):
            shutil.rmtree(path, ignore_errors=True)
        finished = self.directory / str(step)
        if finished.is_dir() and not (finished / CHECKSUMS).exists():
            shutil.rmtree(finished, ignore_errors=True)
        self._manager.reload()

    def restore(self, abstract_state: Any, step: int | None = None) -> tuple[Any, dict[str, Any]]:
        """Read checkpoint ``step`` (default: the latest) shaped like ``abstract_state``."""
        self.expect(abstract_state)
        step = self._check_step(step)
        if not self.is_whole(step):
            raise CheckpointError(
                f"checkpoint {step} in {self.shown} keeps only its network (a history "
                f"checkpoint of train.keep_every; only the newest keep the whole training "
                f"state), so it cannot be resumed; it still plays (jaxzero eval/play/export "
                f"read it): start a new run in a new --out directory"
            )
        saved = stored_state.saved_part(abstract_state)  # what this version's checkpoint holds
        difference = stored_state.layout_difference(self._saved_tree(step), saved)
        stored, difference = stored_state.stored_layout(saved, difference)
        if difference:
            raise CheckpointError(
                f"checkpoint {step} in {self.shown} holds a training state of another "
                f"jaxzero version ({difference}), so it cannot be resumed; its network still "
                f"plays (jaxzero eval/play load it): start a new run in a new --out directory"
            )
        fields = {f.name: getattr(stored, f.name) for f in dataclasses.fields(stored)}
        difference = stored_state.shape_difference(self._saved_tree(step), fields)
        if difference:
            raise CheckpointError(
                f"checkpoint {step} in {self.shown} was written under another config "
                f"({difference}): compare the run's config.json with "
                f"{self._at(step) / 'config' / 'metadata'} and restore it, or start a new "
                f"run in a new --out directory"
            )
        restored = self._restore(
            step,
            state=ocp.args.StandardRestore(stored_state.restore_target(stored)),
            config=ocp.args.JsonRestore(),
        )
        state = stored_state.from_storable(restored.state, stored)
        if stored is not abstract_state:  # the unsaved fields empty, an older layout's zeros
            state = stored_state.completed(state, abstract_state)
        self._check_iteration(step, getattr(state, "iteration", None))
        learned = ("params", "best_params", "opt_state")
        self._refuse_non_finite(step, {n: getattr(state, n) for n in learned if hasattr(state, n)})
        return state, restored.config

    def saved_config(self, step: int | None = None) -> tuple[int, dict[str, Any]]:
        """(step, the config saved with checkpoint ``step``, default the latest), the step
        checked to exist and to match its checksums."""
        step = self._check_step(step)
        return step, self._restore(step, config=ocp.args.JsonRestore()).config

    def is_whole(self, step: int) -> bool:
        """Whether checkpoint ``step`` holds the whole state (else only its agent)."""
        return (self._at_abs(step) / STATE_ITEM).exists()

    def _check_iteration(self, step: int, iteration: Any) -> None:
        """CheckpointError when checkpoint ``step`` holds another iteration (None: a
        state without an iteration counter, nothing to check)."""
        held = None if iteration is None else int(np.max(iteration))  # a population's: [P]
        if held is not None and held != step:
            raise CheckpointError(
                f"checkpoint {step} in {self.shown} holds iteration {held}, not "
                f"{step}: its folder was renamed or swapped with another; name each folder "
                f"of {self.shown} after the iteration it holds (or delete this one), then "
                f"try again"
            )

    def restore_fields(self, abstract_state: Any, fields: list[str], step: int | None = None):
        """Only the named top-level fields of checkpoint ``step``, as a dict shaped like
        those fields of ``abstract_state``: an agent needs its parameters, not the replay
        buffer, and reads them whatever else the saved state holds."""
        self.expect(abstract_state)
        step = self._check_step(step)
        wanted = {name: getattr(abstract_state, name) for name in fields}
        agent = set(fields) <= set(AGENT_FIELDS) and (self._at_abs(step) / AGENT_ITEM).exists()
        item = AGENT_ITEM if agent else STATE_ITEM
        difference = stored_state.shape_difference(self._saved_tree(step, item), wanted)
        if difference:
            raise CheckpointError(
                f"checkpoint {step} in {self.shown} holds another network ({difference})"
                f" than its run's config.json describes; compare config.json with "
                f"{self._at(step) / 'config' / 'metadata'}"
            )
        target = stored_state.restore_target(wanted)
        args = ocp.args.PyTreeRestore(
            target,
            restore_args=ocp.checkpoint_utils.construct_restore_args(target),
            partial_restore=True,
        )
        restored = stored_state.from_storable(
            dict(self._restore(step, **{item: args})[item]), wanted
        )
        self._check_iteration(step, restored.get("iteration"))
        self._refuse_non_finite(step, restored)
        return restored

    def _check_step(self, step: int | None) -> int:
        """``step`` (default: the latest), checked to exist and to match its checksums."""
        step = self.latest_step() if step is None else step
        if step is None:
            raise CheckpointError(  # (a run still starting, not a broken one)
                f"no checkpoint in {self.shown} yet: a run saves its first after "
                "train.checkpoint_every iterations, and when it stops; wait for it, or train "
                "the run longer (jaxzero train --resume)"
            )
        if step not in self.steps():
            raise CheckpointError(
                f"no checkpoint {step} in {self.shown}; available: {self.steps()}"
            )
        if self._read_only:  # a reader, maybe of a run still training
            self._hold(step)
        damaged = damaged_file(self.directory / str(step), self._most_bytes)
        if damaged is not None:  # or changed by the run training meanwhile: a second look
            self._unless_removed(step)
            damaged = damaged_file(self.directory / str(step), self._most_bytes)
        if damaged is not None:
            self._unless_removed(step)
            raise CheckpointError(
                f"checkpoint {step} in {self.shown} is damaged ({damaged}); {self._fallback(step)}"
            )
        return step

    def _unless_removed(self, step: int) -> None:
        """CheckpointRemoved when the listed step ``step`` is gone: a read of it failed
        because the run, still training, removed it (its retention), not from damage."""
        if not self._at_abs(step).is_dir():
            raise self._removed(step)

    def _removed(self, step: int) -> CheckpointRemoved:
        now = sorted(int(p.name) for p in self.directory.glob("*") if p.name.isdigit())
        newer = [s for s in now if s > step]
        instead = f"read a newer one, e.g. {self._at(newer[-1])}" if newer else "list them again"
        return CheckpointRemoved(
            f"checkpoint {step} in {self.shown} was removed while reading it (the run is "
            f"still training); {instead}",
            step,
            self.shown,
        )

    def _refuse_non_finite(self, step: int, tree: dict[str, Any]) -> None:
        """CheckpointError when a number of ``tree`` (restored from checkpoint ``step``)
        is NaN or infinite: the run had diverged (a jaxzero that saved such a state)."""
        for path, leaf in jax.tree_util.tree_leaves_with_path(tree):
            floats = jnp.issubdtype(leaf.dtype, jnp.inexact)
            if floats and not bool(jnp.isfinite(leaf).all()):
                name = jax.tree_util.keystr(path, simple=True, separator=".")
                earlier = ", ".join(str(s) for s in self.steps() if s < step)
                instead = f"load an earlier checkpoint ({earlier}), the newest that loads"
                if not earlier:
                    instead = "no earlier one: start a new run with a lower optim.learning_rate"
                raise CheckpointError(
                    f"checkpoint {step} in {self.shown} holds non-finite parameters ({name} "
                    f"is NaN or infinite: the run had diverged by then); {instead}"
                )

    def _fallback(self, step: int) -> str:
        """What to do instead of loading the damaged checkpoint ``step``."""
        here = [s for s in self.steps() if s < step and self._at_abs(s).is_dir()]
        intact = [s for s in here if not damaged_file(self._at(s), self._most_bytes)]
        if not intact:
            return "no earlier checkpoint is intact: start a new run"
        if not self.is_whole(intact[-1]):
            return (
                f"checkpoint {intact[-1]} is intact: use {self._at(intact[-1])} to play "
                "(its network only: no earlier checkpoint to resume from)"
            )
        return (
            f"checkpoint {intact[-1]} is intact: use {self._at(intact[-1])}, or delete "
            f"{self._at(step)} to resume from it"
        )

    def _at(self, step: int) -> Path:
        return self.shown / str(step)

    def _at_abs(self, step: int) -> Path:
        return self.directory / str(step)

    def _saved_tree(self, step: int, item: str = STATE_ITEM) -> Any:
        """The stored ``item``'s metadata tree (shapes, dtypes), None when unreadable."""
        return stored_state.saved_tree(self._at_abs(step) / item)  # orbax wants it absolute

    def _restore(self, step: int, **items: Any) -> Any:
        try:
            return self._manager.restore(step, args=ocp.args.Composite(**items))
        except Exception as error:  # orbax raises many types for damaged files
            self._unless_removed(step)
            raise CheckpointError(
                f"checkpoint {step} in {self.shown} is unreadable, its files incomplete or "
                f"damaged ({os_reason(error)}); {self._fallback(step)}"
            ) from error

    def _hold(self, step: int) -> None:
        """Keep checkpoint ``step`` from a run's retention until :meth:`close`
        (:func:`jaxzero.run.life.retention.hold`); CheckpointRemoved when retention has it
        already."""
        if not hold(self._at_abs(step), self._holding):
            raise self._removed(step)
        self._unless_removed(step)  # moved out between the open and the lock

    def close(self) -> None:
        """Let go of the checkpoints held, and close orbax's manager."""
        self._retention.release()
        release(self._holding)
        self._manager.close()

    def __enter__(self) -> Checkpointer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
