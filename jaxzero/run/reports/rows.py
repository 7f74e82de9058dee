"""The rows a report reads: a run's ``metrics.jsonl`` and ``elo.json``, bounded, a damaged
line skipped and named; what a report writes, recorded in the run's manifest."""

from __future__ import annotations

import json
from pathlib import Path

from jaxzero.run.folder import manifest
from jaxzero.run.folder.files import os_reason
from jaxzero.run.folder.layout import ELO_FILE, METRICS_FILE
from jaxzero.run.folder.reads import ELO, FileRefused, read_json, read_lines


class ReportError(RuntimeError):
    """The run directory cannot be reported; the message says why."""


def read_metrics(run_dir: Path) -> tuple[list[dict[str, float]], list[int]]:
    """The rows of ``metrics.jsonl`` and the numbers of the lines that are not a row
    (cut short by a crash, or damaged bytes), which the report skips and names. A value
    that was NaN or infinite is written as null: None here. The file is read a line at a
    time (:func:`jaxzero.run.folder.reads.read_lines`): a line too long to be a row is skipped."""
    path = run_dir / METRICS_FILE
    if not path.exists():
        raise ReportError(f"{run_dir} has no {METRICS_FILE}: is it a jaxzero run directory?")
    rows, skipped = [], []
    try:
        for number, line in read_lines(path, run_dir):
            row = _metrics_row(line)
            if row is not None:
                rows.append(row)
            elif line is None or line.strip():
                skipped.append(number)
    except FileRefused as error:
        raise ReportError(f"{error}: move it away") from None
    except OSError as error:
        raise ReportError(f"cannot read {path}: {os_reason(error)}") from None
    if not rows:
        raise ReportError(f"{path} holds no rows: train for at least one logging interval")
    return rows, skipped


def _metrics_row(line: bytes | None) -> dict[str, float] | None:
    """The row of a metrics.jsonl line: an object of numbers (or nulls) with an
    iteration; None for anything else (a cut line, damaged bytes, a blank line)."""
    if not line:
        return None
    try:
        row = json.loads(line)  # bytes: UTF-8 is checked too
    except (ValueError, RecursionError):  # RecursionError: "[[[[..." nested past the stack
        return None
    numbers = isinstance(row, dict) and all(
        v is None or isinstance(v, int | float) for v in row.values()
    )
    return row if numbers and isinstance(row.get("iteration"), int | float) else None


def read_elo_rows(run_dir: Path) -> list[dict[str, float]]:
    """The ``rows`` of ``elo.json`` (iteration, elo, elo_lower, elo_upper, elo/NAME), or []."""
    path = run_dir / ELO_FILE
    if not path.exists():
        return []
    needed = ("iteration", "elo", "elo_lower", "elo_upper")
    try:
        rows = read_json(path, run_dir, ELO)["rows"]
        if not all(isinstance(row[n], int | float) for row in rows for n in needed):
            raise TypeError("a row without its numbers")
    except (OSError, ValueError, KeyError, TypeError):
        raise ReportError(f"{path} is not an Elo file of `jaxzero eval`: move it away") from None
    return rows


def record_report(run_dir: Path, out: Path, names: list[str]) -> None:
    """Record the report files ``names`` in the run's manifest, before they are written
    (a crash part way leaves none unrecorded)."""
    manifest.record(manifest.run_root(run_dir), files=[out / name for name in names])
