"""``jaxzero report``: a run's figures and markdown summary; a study's arms, or several
runs, compared."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from jaxzero.cli.app import console, fail


def report(
    run_dirs: Annotated[
        list[Path],
        typer.Argument(
            metavar="RUN_DIR...",
            help="A run, population or study directory; or several runs and populations of "
            "one game to compare (with --out)",
        ),
    ],
    out: Annotated[
        Path | None, typer.Option(help="Where a comparison of several runs is written")
    ] = None,
) -> None:
    """Write figures (PNG) and a markdown summary into RUN_DIR/report: a run's metrics, a
    population's arms across their seeds, a study's arms compared with the differences of
    their means; for several runs, their arms compared into --out."""
    from jaxzero.run.reports.report import write_report
    from jaxzero.run.reports.rows import ReportError
    from jaxzero.run.studies.comparison import write_runs_report, write_study_report
    from jaxzero.run.studies.study import is_study

    try:
        if len(run_dirs) > 1:
            if out is None:
                raise ReportError("comparing several runs: name the report's folder with --out DIR")
            written = write_runs_report(run_dirs, out)
        elif out is not None:
            raise ReportError("--out is for comparing several runs; one run's report is RUN/report")
        elif is_study(run_dirs[0]):
            written = write_study_report(run_dirs[0])
        else:
            written = write_report(run_dirs[0])
    except (ReportError, OSError) as error:
        fail(str(error))
    console.print(f"report written to {written / 'summary.md'}", highlight=False)
