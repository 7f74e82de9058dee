"""Weights & Biases for a run, optional (``pip install 'jaxzero[wandb]'``): the hook
:class:`WandbLogger` logs what the run's own files hold, the way pgx's and purejaxrl's
users track their runs.

    train("runs/ttt", config, hooks=[WandbLogger("runs/ttt", project="jaxzero")])

* at the start, the run's ``config.json`` flattened (``optim.learning_rate``, ...);
* every row that ``metrics.jsonl`` gets, at step = the iteration;
* at the end, the figures of ``RUN/report/`` (written by ``jaxzero report``) as images.

TensorBoard under ``RUN/tb/`` is written as before. wandb keeps its own files in its own
folder (``WANDB_DIR``, else ``./wandb``), never in the run directory; ``WANDB_MODE=offline``
logs with no account and no network (``wandb sync`` uploads them later).
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from jaxzero.core import sharding
from jaxzero.core.config import config_to_dict, flatten
from jaxzero.run.folder.config_file import read_config_file
from jaxzero.run.folder.layout import CONFIG_FILE, REPORT_DIR
from jaxzero.run.life.hooks import Step

INSTALL = "pip install 'jaxzero[wandb]'"


class WandbProblem(ValueError):
    """wandb is not installed, or cannot start a run; the message says how to fix it."""


def import_wandb() -> Any:
    """The ``wandb`` module, or :class:`WandbProblem` naming the extra that installs it."""
    try:
        import wandb  # heavy, and optional: kept off `import jaxzero`
    except ImportError:
        raise WandbProblem(
            f"logging to Weights & Biases needs wandb, which is not installed: {INSTALL}"
        ) from None
    return wandb


@dataclasses.dataclass
class WandbLogger:
    """Logs the run in ``run_dir`` to Weights & Biases: its config when the run starts,
    every metrics row (step = iteration), and the report's figures when it stops.

    Only process 0 logs (the one that writes the run's files). A resumed run is a new
    wandb run whose steps continue from the restored iteration (``start_iteration`` in
    its config). Raises :class:`WandbProblem` (a ValueError, one line) when wandb is not
    installed (on construction) or refuses to start a run (not logged in, say).

    Attributes:
        run_dir: the run directory passed to :func:`jaxzero.train`.
        project: the wandb project.
        name: the wandb run's name; None: the run directory's name.
        entity: the wandb team or user; None: wandb's default.
        group: a wandb group (e.g. the arms of one study); None: none.
        tags: wandb tags.
        mode: ``"online"``, ``"offline"`` or ``"disabled"``; None: wandb's own choice
            (``WANDB_MODE``, else online).
        directory: where wandb writes its files; None: ``WANDB_DIR``, else ``./wandb``.
    """

    run_dir: str | Path
    project: str
    name: str | None = None
    entity: str | None = None
    group: str | None = None
    tags: Sequence[str] = ()
    mode: str | None = None
    directory: str | Path | None = None
    _wandb: Any = dataclasses.field(default=None, repr=False)
    _run: Any = dataclasses.field(default=None, repr=False)  # the wandb Run, once started
    _step: int = 0  # the last step logged

    def __post_init__(self) -> None:
        self._wandb = import_wandb()  # before any training: a missing extra fails at once

    def start(self, state: Any) -> None:
        """Start the wandb run with the run's config (read back from ``config.json``).

        Args:
            state: the run's first ``TrainState`` (a resumed run's, restored).
        """
        if not sharding.is_main_process():
            return
        run_dir = Path(self.run_dir)
        self._step = int(np.max(state.iteration))  # a population's: [P]
        config = _run_config(run_dir) | {"run_dir": str(run_dir), "start_iteration": self._step}
        try:
            self._run = self._wandb.init(
                project=self.project,
                entity=self.entity,
                name=self.name or run_dir.resolve().name,
                group=self.group,
                tags=list(self.tags) or None,
                mode=self.mode,
                dir=None if self.directory is None else str(self.directory),
                config=config,
            )
        except self._wandb.errors.Error as error:
            raise WandbProblem(
                f"wandb could not start a run: {_one_line(error)}; run `wandb login`, or "
                "log offline with WANDB_MODE=offline (`wandb sync` uploads it later)"
            ) from None

    def __call__(self, step: Step) -> None:
        """Log the iteration's row, if it has one (:meth:`~jaxzero.run.life.hooks.Step.record`).

        Args:
            step: the iteration (:class:`~jaxzero.run.life.hooks.Step`).
        """
        row = step.record()
        if self._run is None or not row:
            return
        self._run.log({k: v for k, v in row.items() if k != "iteration"}, step=step.iteration)
        self._step = step.iteration

    def close(self, step: Step | None) -> None:
        """Log the report's figures, then finish the wandb run (failed when the run
        is stopping on an error).

        Args:
            step: the last iteration (None when the run failed before its first).
        """
        if self._run is None:
            return
        run, self._run = self._run, None
        try:
            figures = report_figures(Path(self.run_dir))
            if figures:
                images = {f"report/{p.stem}": self._wandb.Image(str(p)) for p in figures}
                run.log(images, step=self._step)
        finally:
            # close() runs in the driver's `finally`: an exception on its way out is the run's
            failing = sys.exc_info()[0]
            run.finish(exit_code=int(failing is not None and failing is not KeyboardInterrupt))


def _run_config(run_dir: Path) -> dict[str, Any]:
    """The run's config.json as one level of dotted keys (``optim.learning_rate``)."""
    path = run_dir / CONFIG_FILE
    try:
        return flatten(config_to_dict(read_config_file(path)), sep=".")
    except (OSError, ValueError) as error:
        raise WandbProblem(
            f"cannot read the run's config {path} ({_one_line(error)}): give WandbLogger "
            "the run directory that train() trains"
        ) from None


def report_figures(run_dir: Path) -> list[Path]:
    """The PNG figures of ``run_dir``'s report, by name; regular files only (a link could
    point anywhere, and would be uploaded)."""
    folder = run_dir / REPORT_DIR
    if not folder.is_dir() or folder.is_symlink():
        return []
    return sorted(p for p in folder.glob("*.png") if p.is_file() and not p.is_symlink())


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()).rstrip(".")  # it goes on after a semicolon
    return text or type(error).__name__
