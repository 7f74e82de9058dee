"""The ``jaxzero`` command line: train, play, gtp, export, report, eval, analyze, one
module each; ``app`` holds what they share (the Typer app, the one-line errors).

Errors a user can fix (unknown game or option, a run directory in the way, a damaged
checkpoint) print one line saying what is wrong and how to fix it, and exit with 2.
"""

from jaxzero.cli import analyze, board, evaluate, export, gtp, play, report, train
from jaxzero.cli.app import UsageError, app, main

# In this order in `jaxzero --help`, each with a line that fits its list (Click cuts a
# longer first sentence off with "..."); `jaxzero COMMAND --help` says the whole.
app.command(short_help="Train an agent by self-play (a run, seeds or a study).")(train.train)
app.command(short_help="Play a game against a trained agent.")(play.play)
app.command(short_help="A Go agent as a GTP engine: GoGui, Sabaki, lz-analyze.")(gtp.gtp)
app.command(short_help="Write a run's network as a small agent folder.")(export.export)
app.command(short_help="Figures and a summary of a run, population or study.")(report.report)
app.command(name="eval", short_help="Round robin of checkpoints and opponents, an Elo table.")(
    evaluate.eval_
)
app.command(short_help="Show a position and the root of a search over it.")(analyze.analyze)
app.command(short_help="Play and analyse in a web page.")(board.board)

__all__ = ["UsageError", "app", "main"]
