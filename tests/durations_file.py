"""``--durations-file PATH``: every test phase's duration, slowest first, written to PATH
at the end of each run (what ``--durations=0`` prints), so that each run's times are kept
beside its result; under pytest-xdist the controller writes the whole suite's."""

from __future__ import annotations

from pathlib import Path

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--durations-file",
        metavar="PATH",
        default=None,
        help="write every test phase's duration, slowest first, to PATH",
    )


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    path = config.getoption("--durations-file")
    if not path or hasattr(config, "workerinput"):  # an xdist worker: the controller writes
        return
    reports = [
        report
        for reports in terminalreporter.stats.values()
        for report in reports
        if isinstance(report, pytest.TestReport)
    ]
    reports.sort(key=lambda report: report.duration, reverse=True)
    lines = [f"{r.duration:.2f}s {r.when:<8} {r.nodeid} {r.outcome}" for r in reports]
    total = sum(report.duration for report in reports)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    header = f"{len(reports)} test phases, {total:.1f} s in all (pytest exit status {exitstatus})"
    out.write_text("\n".join([header, *lines]) + "\n")
