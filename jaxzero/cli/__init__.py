"""The ``jaxzero`` command line: train, play, gtp, export, report, eval, analyze, one
module each; ``app`` holds what they share (the Typer app, the one-line errors).

Errors a user can fix (unknown game or option, a run directory in the way, a damaged
checkpoint) print one line saying what is wrong and how to fix it, and exit with 2.
"""

from jaxzero.cli import analyze, board, evaluate, export, gtp, play, report, train
from jaxzero.cli.app import UsageError, app, main

# In this order in `jaxzero --help`.
app.command()(train.train)
app.command()(play.play)
app.command()(gtp.gtp)
app.command()(export.export)
app.command()(report.report)
app.command(name="eval")(evaluate.eval_)
app.command()(analyze.analyze)
app.command()(board.board)

__all__ = ["UsageError", "app", "main"]
