"""``jaxzero report``: a run's figures and markdown summary."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from jaxzero.cli.app import console, fail


def report(run_dir: Annotated[Path, typer.Argument(help="A run directory")]) -> None:
    """Write figures (PNG) and a markdown summary of a run into RUN_DIR/report."""
    from jaxzero.run.report import ReportError, write_report

    try:
        out = write_report(run_dir)
    except ReportError as error:
        fail(str(error))
    console.print(f"report written to {out / 'summary.md'}", highlight=False)
