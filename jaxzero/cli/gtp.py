"""``jaxzero gtp``: a Go agent speaking the Go Text Protocol, for GoGui, Sabaki and GNU Go."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from jaxzero.cli.agents import default_agent, load, say_which
from jaxzero.cli.app import UsageError, fail
from jaxzero.cli.options import SearchKind, SearchSettings, TrustCodeOption

GTP_AGENT = "go_6x6"  # `jaxzero gtp` without --checkpoint: the shipped Go 6x6 agent


def gtp(
    checkpoint: Annotated[
        Path | None,
        typer.Option(
            help="Run directory, checkpoint or agent folder of a Go agent [default: "
            f"runs/{GTP_AGENT}, else the shipped {GTP_AGENT} agent]"
        ),
    ] = None,
    simulations: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Search simulations per move [default: the agent's evaluation.simulations]",
        ),
    ] = None,
    search: SearchKind = None,
    resign: Annotated[
        float,
        typer.Option(min=-1.0, max=1.0, help="Resign when the value estimate is below this"),
    ] = -0.95,
    set_: SearchSettings = None,
    trust_code: TrustCodeOption = False,
) -> None:
    """Speak the Go Text Protocol on stdin/stdout (for GoGui, Sabaki, GNU Go, gomill), with
    Leela Zero's lz-analyze for the analysis Sabaki and Lizzie show."""
    from jaxzero.go.gtp import GtpEngine
    from jaxzero.run.life.checkpoint import CheckpointError

    try:
        checkpoint = checkpoint or default_agent(GTP_AGENT)
        agent = load(checkpoint, set_, trust_code)
        engine = GtpEngine(
            agent, num_simulations=simulations, search=search, resign_threshold=resign
        )
    except (UsageError, CheckpointError, ValueError) as error:
        fail(str(error))
    say_which(checkpoint, agent)  # stderr: stdout speaks only GTP
    engine.serve(sys.stdin, sys.stdout)
