"""``jaxzero play``: a game against a trained agent, on stdin and stdout."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from jaxzero.cli.agents import default_agent, load, say_which
from jaxzero.cli.app import UsageError, fail
from jaxzero.cli.games import check_game
from jaxzero.cli.options import (
    SEED_MAX,
    AgentOption,
    GameArgument,
    HumanOption,
    SearchKind,
    SearchSettings,
    SimulationsOption,
    TrustCodeOption,
)


def play(
    game: GameArgument = None,
    checkpoint: AgentOption = None,
    human: HumanOption = "first",
    simulations: SimulationsOption = None,
    search: SearchKind = None,
    seed: Annotated[
        int, typer.Option(min=0, max=SEED_MAX, help="Seed of the game's randomness")
    ] = 0,
    set_: SearchSettings = None,
    trust_code: TrustCodeOption = False,
) -> None:
    """Play a game against a trained agent (works through a pipe too).

    Without --checkpoint, GAME's agent is your own run in runs/GAME (the folder
    `jaxzero train GAME` writes, relative to where you are), else the shipped one; like
    every folder, it imports no code it names without --trust-code."""
    from jaxzero.play import InputEnded, play_game
    from jaxzero.run.life.checkpoint import CheckpointError

    try:
        if game is not None:
            check_game(game)
        checkpoint = checkpoint or default_agent(game)
        agent = load(checkpoint, set_, trust_code, game)
        player = agent.search_player(simulations, search)
    except (UsageError, CheckpointError, ValueError) as error:
        fail(str(error))
    say_which(checkpoint, agent)
    for stream in (sys.stdin, sys.stdout):  # bytes the locale cannot decode: an invalid move
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="replace")
    try:
        play_game(
            agent,
            player,
            human=0 if human == "first" else 1,
            seed=seed,
            stdin=sys.stdin,
            stdout=sys.stdout,
        )
    except (InputEnded, ValueError) as error:
        fail(str(error))
