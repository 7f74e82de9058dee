"""Faults round 4, reports: what a folder holds (game labels, metric names, the recorded
command) reaches summary.md as text, never as Markdown or HTML of its own (M5); a metric
name is never a file name as it stands (a NUL byte, a slash)."""

from __future__ import annotations

import json
import shutil

import markdown
from typer.testing import CliRunner

from jaxzero.cli import app
from jaxzero.run.reports.markdown import code_span, markdown_text
from jaxzero.run.studies.comparison import Arm, write_comparison

runner = CliRunner()
HOSTILE = "<img src=x onerror=alert(1)> [click](http://evil.example) *bold* | cell"


def _no_markup(text: str) -> None:
    """As a Markdown renderer (mkdocs's) shows it: no image, link, emphasis or HTML of
    the folder's making, and the table's cells as many as its heads."""
    html = markdown.markdown(text, extensions=["tables"])
    for made in ('<img src="x"', "<a ", "<em>", "<b>", "<script"):
        assert made not in html, (made, html)
    heads = 0
    for line in text.splitlines():  # each table row has its head's cells: no "|" of a name
        pipes = line.replace("\\|", "").count("|") if line.startswith("|") else 0
        heads = heads or pipes
        assert pipes in (0, heads), line
        heads = heads if pipes else 0


def test_labels_and_metric_names_are_text_in_a_run_report(tiny_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(tiny_run, run)
    with open(run / "metrics.jsonl", "a") as file:
        file.write(json.dumps({"iteration": 5, HOSTILE: 0.5, "policy_loss": 1.0}) + "\n")
    game = {"iteration": 5, "kind": "eval", "players": ["<b>me</b>", HOSTILE],
            "moves": [0, 3, 1, 4, 2], "returns": [1.0, -1.0]}  # fmt: skip
    with open(run / "games.jsonl", "a") as file:
        file.write(json.dumps(game) + "\n")
    result = runner.invoke(app, ["report", str(run)])
    assert result.exit_code == 0, result.output
    summary = (run / "report" / "summary.md").read_text()
    _no_markup(summary)
    assert markdown_text(HOSTILE) in summary  # said, as text


def test_a_comparison_names_metrics_and_commands_as_text(tiny_run, tmp_path):
    runs = []
    for name in ("a", "b"):
        run = tmp_path / name
        shutil.copytree(tiny_run, run)
        with open(run / "metrics.jsonl", "a") as file:
            row = {"iteration": 5, HOSTILE: 0.5, "nul\x00name": 1.0, "x/../../y": 2.0}
            file.write(json.dumps(row) + "\n")
        runs.append(run)
    out = tmp_path / "compared"
    command = "jaxzero train `rm -rf ~` <script>"
    arms = [Arm("<b>a</b>", (runs[0],)), Arm("b", (runs[1],))]
    write_comparison(out, arms, "Runs compared", [f"Command: {code_span(command)}"])
    summary = (out / "summary.md").read_text()
    _no_markup(summary)
    assert "Command: ``jaxzero train `rm -rf ~` <script>``" in summary  # one code span
    assert sorted(p.parent for p in out.rglob("*")) == [out] * len(list(out.iterdir()))
    assert not any("\x00" in p.name or p.name.startswith("..") for p in out.iterdir())
    assert (out / "nul_name.png").exists() and (out / "x_.._.._y.png").exists()
