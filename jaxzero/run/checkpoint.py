"""Checkpoints of a whole training run, with orbax.

A checkpoint is everything needed to continue exactly: the TrainState pytree (params,
optimiser state, replay buffer, in-progress games, RNG key, counters) and the config as
JSON. Orbax writes each step into a temporary directory and renames it when complete, so
a crash during a save leaves the previous checkpoints intact; an unfinished step is
never listed. Saves are synchronous: a save that fails (a full disk, a read-only
folder) raises :class:`CheckpointError` at once, and training stops with the previous
checkpoint intact.

Beside each finished step, ``checkpoints/N/checksums.sha256`` (``sha256sum`` format)
holds the hash of every file orbax wrote; every load checks it, so damaged bytes are
refused, naming the newest intact step to fall back to, instead of playing with NaNs.

The newest ``max_to_keep`` checkpoints hold the whole state. One kept only because its
step is a multiple of ``train.keep_every`` (history, for Elo curves) keeps only what
plays: a copy of ``best_params`` and ``iteration`` saved beside the state (the ``agent``
item), its ``state`` deleted once newer checkpoints push it out of the newest, so a long
run's history costs networks, not replay buffers. ``load_agent``, ``eval`` and
``export`` read either kind; a resume takes only a whole one.

A checkpoint folder's number is the iteration it holds; a restore checks it, so folders
renamed or swapped by hand are refused, naming both numbers.

A run may be read while it trains. Retention removes a step in one rename (into
``checkpoints/.removed``, emptied after each save), so a reader finds a step whole or
gone; a read that fails because its step went raises :class:`CheckpointRemoved`, never
"damaged". Parameters that are NaN or infinite (a diverged run, saved by an older
jaxzero) are refused on every restore, naming the earlier checkpoints.

Typed PRNG keys (``jax.random.key``) are stored as their raw key data and re-wrapped on
restore, so any TrainState that JAX can hold can be saved.

A checkpoint written by an older jaxzero, before a field was added to the state, still
resumes when the field's value is known for it (``ADDED_SELFPLAY_FIELDS``); any other
difference of layout is refused, naming it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import logging
import math
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import orbax.checkpoint as ocp

from jaxzero.core import mcts, sharding
from jaxzero.run.files import FileProblem, check_writable, os_reason, sha256, write_atomic
from jaxzero.run.reads import LISTING, FileRefused, odd_entry, read_bytes, sha256_inside

CHECKPOINT_DIR = "checkpoints"
CHECKSUMS = "checksums.sha256"
# Where retention moves a step it deletes (an atomic rename: a reader of a live run finds
# a step whole or not at all), emptied after every save.
REMOVED = ".removed"
STATE_ITEM = "state"  # the whole TrainState; a history checkpoint drops it
AGENT_ITEM = "agent"  # what plays, saved beside it at multiples of keep_every
AGENT_FIELDS = ("best_params", "iteration")


# Self-play fields a checkpoint may lack, each restored as zeros when missing.
# value_return (the return of each recorded position so far): a checkpoint without it was
# written by a jaxzero whose games paid only their outcome, on their last move, so a game
# in progress had returned nothing yet: zeros are exact.
ADDED_SELFPLAY_FIELDS = ("value_return",)
# Top-level fields a checkpoint may lack, likewise restored as zeros. diverged_at (a
# population's members that diverged, 0: none): a jaxzero without it stopped the whole
# population at the first divergence and never saved that state, so zeros are exact.
ADDED_FIELDS = ("diverged_at",)
# Self-play fields never saved: the carried search trees of tree reuse are a cache of the
# last searches (B x (2S + 1) env states, more than the rest of a Go run's self-play), so
# a resumed run's games start their next searches from empty trees, as after a new game.
UNSAVED_SELFPLAY_FIELDS = ("tree",)


def _saved_part(state: Any) -> Any:
    """What of a training state a checkpoint holds: all but ``UNSAVED_SELFPLAY_FIELDS``."""
    if not hasattr(state, "selfplay"):
        return state
    return state.replace(selfplay=_without_fields(state.selfplay, set(UNSAVED_SELFPLAY_FIELDS)))


def _empty_trees_like(abstract: Any) -> Any:
    """Empty carried trees shaped like ``abstract`` (None stays None: no tree reuse)."""
    if abstract is None:
        return None

    def zeros(like: Any) -> Any:
        if _is_key(like):
            return jax.random.wrap_key_data(jnp.zeros(jax.random.key_data(like).shape, jnp.uint32))
        return jnp.zeros(like.shape, like.dtype)

    trees = jax.tree.map(zeros, abstract)
    return mcts.cleared(trees, jnp.ones(trees.node_visits.shape[:1], bool))


def _zeros_like(like: Any) -> Any:
    return jnp.zeros(like.shape, like.dtype)


def _without_fields(node: Any, names: set[str]) -> Any:
    """The dataclass pytree ``node`` without the fields ``names``: what an older jaxzero
    stored (a dataclass made for it, registered as a pytree)."""
    kept = [f.name for f in dataclasses.fields(node) if f.name not in names]
    older = dataclasses.make_dataclass(type(node).__name__, [(n, Any) for n in kept], frozen=True)
    jax.tree_util.register_dataclass(older)
    return older(**{n: getattr(node, n) for n in kept})


# orbax logs this WARNING whenever a CheckpointManager opens with ``read_only=True``,
# the option an agent's load asks for on purpose: a notice, not a problem.
_READ_ONLY_NOTICE = "Given directory is read only"
# ... and these when a step it lists is gone before it reads the step's metadata (the
# retention of a run still training): the step is not listed, nothing is wrong.
_GONE_NOTICE = ("Metadata file does not exist", "Failed to read Metadata file")


class _WithoutReadOnlyNotice(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith((_READ_ONLY_NOTICE, *_GONE_NOTICE))


@contextlib.contextmanager
def _without_read_only_notice():
    """Drop orbax's two notices above (absl's logger) inside this block, nothing else."""
    logger, notice = logging.getLogger("absl"), _WithoutReadOnlyNotice()
    logger.addFilter(notice)
    try:
        yield
    finally:
        logger.removeFilter(notice)


class CheckpointError(RuntimeError):
    """A checkpoint is missing, damaged, unreadable or cannot be written; the message
    says what to do."""


class CheckpointRemoved(CheckpointError):
    """A checkpoint that was there is gone, removed while being read: by the retention
    of the run, still training. Nothing is wrong with the run; read another step."""

    def __init__(self, message: str, step: int, folder: Path):
        super().__init__(message)
        self.step, self.folder = step, folder  # the step, and its run's checkpoints/


def _has_agent(state: Any) -> bool:
    """Whether ``state`` (a TrainState) holds what an agent plays with."""
    return all(hasattr(state, name) for name in AGENT_FIELDS)


def _is_key(x: Any) -> bool:
    return hasattr(x, "dtype") and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)


def _is_empty(x: Any) -> bool:  # a zero-size array, which orbax refuses to write
    return hasattr(x, "shape") and math.prod(x.shape) == 0


def _to_storable(tree: Any) -> Any:
    """Keys as their raw data; a zero-size array (a pgx game's unused slots, MinAtar
    asterix's) as one zero of its dtype, since orbax refuses to write zero-size arrays."""

    def storable(x: Any) -> Any:
        if _is_key(x):
            return jax.random.key_data(x)
        return jnp.zeros((1,), x.dtype) if _is_empty(x) else x

    return jax.tree.map(storable, tree)


def _storable_target(abstract: Any) -> Any:
    def target(x: Any) -> Any:
        if _is_key(x):
            return jax.eval_shape(jax.random.key_data, x)
        if not _is_empty(x):
            return x
        return jax.ShapeDtypeStruct((1,), x.dtype, sharding=_replicated(x))

    return jax.tree.map(target, abstract)


def _replicated(x: Any) -> Any:
    """A sharding for one element in place of ``x``: replicated over x's mesh, if any."""
    sharding = getattr(x, "sharding", None)
    if isinstance(sharding, jax.sharding.NamedSharding):
        return jax.sharding.NamedSharding(sharding.mesh, jax.sharding.PartitionSpec())
    return sharding


def _restore_target(abstract: Any) -> Any:
    """What orbax restores into: shapes and dtypes of ``abstract``, keys as raw data."""
    return _storable_target(jax.tree.map(ocp.utils.to_shape_dtype_struct, abstract))


def _from_storable(tree: Any, abstract: Any) -> Any:
    def restore(x: Any, like: Any) -> Any:
        if _is_key(like):
            return jax.random.wrap_key_data(x)  # the default key implementation
        if _is_empty(like):  # nothing was stored: the empty array, placed as ``like``
            sharding = getattr(like, "sharding", None) or x.sharding
            return jax.device_put(jnp.zeros(like.shape, like.dtype), sharding)
        return x

    return jax.tree.map(restore, tree, abstract)


def _file_hashes(folder: Path, skip: str = "") -> dict[str, str]:
    """sha256 of every file under ``folder`` but the checksum file (and those under its
    subfolder ``skip``), by relative path."""
    hashes = {}
    found = (p for p in folder.rglob("*") if p.is_file() and p.name != CHECKSUMS)
    for path in sorted(p for p in found if p.relative_to(folder).parts[0] != skip):
        hashes[path.relative_to(folder).as_posix()] = sha256(path)
    return hashes


def write_checksums(folder: Path, skip: str = "") -> None:
    """``folder/checksums.sha256`` for a finished checkpoint step (``sha256sum -c`` reads
    it); ``skip``: a subfolder left out (one about to be deleted)."""
    lines = "".join(f"{h}  {name}\n" for name, h in _file_hashes(folder, skip).items())
    write_atomic(folder / CHECKSUMS, lines)


def damaged_file(folder: Path) -> str | None:
    """What is wrong with checkpoint ``folder``, in words ("NAME does not match its
    checksum", "NAME is missing", "PATH is a FIFO, not a regular file"), None when nothing.
    Every entry must be a folder or a regular file inside it (:func:`odd_entry`: checked
    before orbax opens one). A step without checksums (written by an older jaxzero, or
    killed between orbax's commit and the checksums) counts as intact."""
    odd = odd_entry(folder)
    if odd is not None:
        return odd
    try:  # a listing names every file of the step: a few kB
        text = read_bytes(folder / CHECKSUMS, folder, LISTING).decode(errors="replace")
    except FileNotFoundError:
        return None
    except FileRefused as error:
        return str(error)
    expected = {}
    for line in text.splitlines():
        digest, _, name = line.partition("  ")
        expected[name] = digest
    for name, digest in expected.items():  # only those listed: others may come and go
        try:
            if sha256_inside(folder / name, folder) != digest:
                return f"{name} does not match its checksum"
        except FileRefused as error:
            return f"{name} is missing" if (folder / name).is_dir() else str(error)
        except FileNotFoundError:
            return f"{name} is missing"
    return None


@dataclasses.dataclass
class _Retention:
    """Which checkpoints a run keeps (an orbax preservation policy): the newest
    ``max_to_keep`` and every multiple of ``keep_every``; of the others, one a reader
    holds (:meth:`Checkpointer._hold`) stays until a later save. Each one let go is
    locked until :meth:`release`, after orbax has moved it out, so that no reader
    starts on it meanwhile."""

    directory: Path
    max_to_keep: int
    keep_every: int
    held: list[int] = dataclasses.field(default_factory=list)  # folders locked to go

    def should_preserve(self, checkpoints: Sequence[Any], *, context: Any) -> list[bool]:
        newest = len(checkpoints) - self.max_to_keep
        kept = [
            i >= newest or bool(self.keep_every) and info.step % self.keep_every == 0
            for i, info in enumerate(checkpoints)
        ]
        if not sharding.is_main_process():  # the one that deletes decides
            return kept
        return [kept[i] or self._being_read(info.step) for i, info in enumerate(checkpoints)]

    def _being_read(self, step: int) -> bool:
        """Whether a reader holds checkpoint ``step``; if not, it is locked to go."""
        try:
            folder = os.open(self.directory / str(step), os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            return False
        try:
            fcntl.flock(folder, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:  # held by a reader, or no locks on this storage
            os.close(folder)
            return isinstance(error, BlockingIOError)
        self.held.append(folder)
        return False

    def release(self) -> None:
        for folder in self.held:
            with contextlib.suppress(OSError):
                os.close(folder)
        self.held.clear()


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
        self._max_to_keep, self._keep_every = max_to_keep, keep_every
        if not read_only:
            self._check_writable()
        self._retention = _Retention(self.directory, max_to_keep, keep_every)
        self._read_only = read_only
        self._holding: list[int] = []  # folders this reader holds (_hold)
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
                with _without_read_only_notice():
                    self._manager = ocp.CheckpointManager(self.directory, options=options)
                break
            except FileNotFoundError:  # a step listed, then removed by a training run
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
        """CheckpointError now, before any training, when checkpoints cannot be written."""
        try:
            check_writable(self.shown, "checkpoints")
        except FileProblem as problem:
            raise CheckpointError(str(problem)) from None

    def steps(self) -> list[int]:
        return list(self._manager.all_steps())

    def latest_step(self) -> int | None:
        return self._manager.latest_step()

    def save(self, step: int, state: Any, config: dict[str, Any]) -> None:
        """Write ``state`` and ``config`` as checkpoint ``step``, on disk when this returns;
        CheckpointError (the earlier checkpoints intact) when it cannot be written."""
        existed = step in self.steps()
        items = {
            STATE_ITEM: ocp.args.StandardSave(_to_storable(_saved_part(state))),
            "config": ocp.args.JsonSave(config),
        }
        if self._keep_every and step % self._keep_every == 0 and _has_agent(state):
            agent = {name: getattr(state, name) for name in AGENT_FIELDS}
            items[AGENT_ITEM] = ocp.args.StandardSave(_to_storable(agent))
        try:
            self._empty_removed()  # what a crash left there, in the way of a rename
            self._manager.save(step, args=ocp.args.Composite(**items), force=True)
            self._manager.wait_until_finished()
            if sharding.is_main_process():
                write_checksums(self.directory / str(step))
            self._empty_removed()  # the steps retention just moved out
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
            self._lighten_history()

    def _empty_removed(self) -> None:
        """Delete the steps retention moved into ``REMOVED`` (out of every reader's sight)."""
        if sharding.is_main_process():
            shutil.rmtree(self.directory / REMOVED, ignore_errors=True)

    def _lighten_history(self) -> None:
        """Drop the state of every checkpoint older than the newest ``max_to_keep`` that
        holds its agent beside it (kept by ``keep_every``): checksums first, without it,
        so that a crash in between leaves an intact checkpoint either way. A damaged one
        is left as it is (its damage stays detectable)."""
        history = self.steps()[: -self._max_to_keep] if self._max_to_keep else []
        for step in history:
            folder = self._at_abs(step)
            if not (folder / STATE_ITEM).exists() or not (folder / AGENT_ITEM).exists():
                continue
            if damaged_file(folder) is None:
                try:
                    write_checksums(folder, skip=STATE_ITEM)
                except OSError:
                    continue  # kept whole; the next save tries again
                shutil.rmtree(folder / STATE_ITEM, ignore_errors=True)

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
        step = self._check_step(step)
        if not self.is_whole(step):
            raise CheckpointError(
                f"checkpoint {step} in {self.shown} keeps only its network (a history "
                f"checkpoint of train.keep_every; only the newest keep the whole training "
                f"state), so it cannot be resumed; it still plays (jaxzero eval/play/export "
                f"read it): start a new run in a new --out directory"
            )
        saved = _saved_part(abstract_state)  # the layout a checkpoint of this version holds
        difference = self._layout_difference(step, saved)
        stored = saved  # the layout to read: this one, or the older it still takes
        problems = set(difference.split(", ")) - {""}
        added = [n for n in ADDED_SELFPLAY_FIELDS if f"missing selfplay.{n}" in problems]
        added_top = [n for n in ADDED_FIELDS if f"missing {n}" in problems]
        if problems and problems == {f"missing selfplay.{n}" for n in added} | {
            f"missing {n}" for n in added_top
        }:
            if added:
                stored = stored.replace(selfplay=_without_fields(saved.selfplay, set(added)))
            if added_top:
                stored = _without_fields(stored, set(added_top))
            difference = ""
        if difference:
            raise CheckpointError(
                f"checkpoint {step} in {self.shown} holds a training state of another "
                f"jaxzero version ({difference}), so it cannot be resumed; its network still "
                f"plays (jaxzero eval/play load it): start a new run in a new --out directory"
            )
        fields = {f.name: getattr(stored, f.name) for f in dataclasses.fields(stored)}
        difference = self._shape_difference(step, fields)
        if difference:
            raise CheckpointError(
                f"checkpoint {step} in {self.shown} was written under another config "
                f"({difference}): compare the run's config.json with "
                f"{self._at(step) / 'config' / 'metadata'} and restore it, or start a new "
                f"run in a new --out directory"
            )
        restored = self._restore(
            step,
            state=ocp.args.StandardRestore(_restore_target(stored)),
            config=ocp.args.JsonRestore(),
        )
        state = _from_storable(restored.state, stored)
        if stored is not abstract_state:  # the unsaved fields empty, an older layout's zeros
            tops = {f.name: getattr(state, f.name) for f in dataclasses.fields(state)}
            for name in added_top:
                tops[name] = _zeros_like(getattr(abstract_state, name))
            old = tops["selfplay"]
            fields = {f.name: getattr(old, f.name) for f in dataclasses.fields(old)}
            for name in added:
                fields[name] = _zeros_like(getattr(abstract_state.selfplay, name))
            fields["tree"] = _empty_trees_like(abstract_state.selfplay.tree)
            tops["selfplay"] = type(abstract_state.selfplay)(**fields)
            state = type(abstract_state)(**tops)
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
        step = self._check_step(step)
        wanted = {name: getattr(abstract_state, name) for name in fields}
        agent = set(fields) <= set(AGENT_FIELDS) and (self._at_abs(step) / AGENT_ITEM).exists()
        item = AGENT_ITEM if agent else STATE_ITEM
        difference = self._shape_difference(step, wanted, item)
        if difference:
            raise CheckpointError(
                f"checkpoint {step} in {self.shown} holds another network ({difference})"
                f" than its run's config.json describes; compare config.json with "
                f"{self._at(step) / 'config' / 'metadata'}"
            )
        target = _restore_target(wanted)
        args = ocp.args.PyTreeRestore(
            target,
            restore_args=ocp.checkpoint_utils.construct_restore_args(target),
            partial_restore=True,
        )
        restored = _from_storable(dict(self._restore(step, **{item: args})[item]), wanted)
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
        damaged = damaged_file(self.directory / str(step))
        if damaged is not None:  # or changed by the run training meanwhile: a second look
            self._unless_removed(step)
            damaged = damaged_file(self.directory / str(step))
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
        intact = [s for s in here if not damaged_file(self._at(s))]
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
        try:
            stored = self._at_abs(step) / item  # orbax wants an absolute path
            return ocp.PyTreeCheckpointHandler().metadata(stored).tree
        except Exception:  # unreadable metadata: the restore itself reports it
            return None

    def _layout_difference(self, step: int, abstract_state: Any) -> str:
        """'' if checkpoint ``step`` stores the fields of ``abstract_state`` (a dataclass
        pytree, and each dataclass field of it), else which fields are missing or extra."""
        saved = self._saved_tree(step)
        if saved is None:
            return ""
        problems: list[str] = []

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

    def _shape_difference(self, step: int, wanted: dict[str, Any], item: str = STATE_ITEM) -> str:
        """'' if checkpoint ``step`` stores every array of ``wanted`` with its shape (in
        its ``item``), else the first that differs (``params.Dense_0.kernel: [16, 9]
        saved, [32, 9] here``)."""
        saved = self._saved_tree(step, item)
        if saved is None:
            return ""
        stored = {
            jax.tree_util.keystr(path, simple=True, separator="."): leaf
            for path, leaf in jax.tree_util.tree_leaves_with_path(
                {k: saved[k] for k in wanted if k in saved}
            )
        }
        for path, leaf in jax.tree_util.tree_leaves_with_path(_restore_target(wanted)):
            name = jax.tree_util.keystr(path, simple=True, separator=".")
            there = stored.get(name)
            if there is None:
                return f"{name} not saved"
            if tuple(there.shape) != tuple(leaf.shape):
                return f"{name}: {list(there.shape)} saved, {list(leaf.shape)} here"
        return ""

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
        """Keep checkpoint ``step`` from a run's retention until :meth:`close`: a shared
        lock on its folder, which retention honours (:class:`_Retention`).
        CheckpointRemoved when retention has it already; storage without locks reads
        it unheld."""
        try:
            folder = os.open(self._at_abs(step), os.O_RDONLY | os.O_DIRECTORY)
        except FileNotFoundError:
            raise self._removed(step) from None
        self._holding.append(folder)
        try:
            fcntl.flock(folder, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:  # retention is moving it out right now
            raise self._removed(step) from None
        except OSError:
            pass  # no locks on this storage
        self._unless_removed(step)  # moved out between the open and the lock

    def close(self) -> None:
        self._retention.release()
        for folder in self._holding:
            with contextlib.suppress(OSError):
                os.close(folder)
        self._holding.clear()
        self._manager.close()

    def __enter__(self) -> Checkpointer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
