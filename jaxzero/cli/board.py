"""``jaxzero board``: the web board, a page to play an agent and read its analysis."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from jaxzero.cli.agents import default_agent, load, say_which
from jaxzero.cli.app import UsageError, console, fail
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

if TYPE_CHECKING:
    from jaxzero.run.agents.agent import Agent
    from jaxzero.run.life.game_records import RecordedGame


def board(
    game: GameArgument = None,
    checkpoint: AgentOption = None,
    host: Annotated[
        str, typer.Option(help="Address to serve on: 127.0.0.1 is this machine only")
    ] = "127.0.0.1",
    allow_host: Annotated[
        list[str] | None,
        typer.Option(
            help="Another name this machine is reached by (repeatable): a request naming "
            "any other host is refused (DNS rebinding)"
        ),
    ] = None,
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port (0: any free one)")] = 8765,
    human: HumanOption = "first",
    simulations: SimulationsOption = None,
    search: SearchKind = None,
    seed: Annotated[
        int, typer.Option(min=0, max=SEED_MAX, help="Seed of the games' chance and the searches")
    ] = 0,
    open_browser: Annotated[
        bool, typer.Option("--open", help="Open the page in a web browser")
    ] = False,
    set_: SearchSettings = None,
    trust_code: TrustCodeOption = False,
) -> None:
    """Serve a web page to play the agent by clicking and watch its analysis.

    Play first or second, undo, step through the game, load a position from moves or an
    SGF record, and step through a run's recorded games. The page is served on
    127.0.0.1 (this machine only) until Ctrl-C; it fetches nothing from elsewhere."""
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        fail("the board needs starlette and uvicorn: pip install 'jaxzero[board]'")
    from jaxzero.board.hosts import exposure
    from jaxzero.board.server import bind, serve
    from jaxzero.board.session import Session
    from jaxzero.run.life.checkpoint import CheckpointError

    try:  # first, so that a taken port is said before the agent loads and compiles
        sock = bind(host, port)
    except OSError as error:
        fail(
            f"cannot serve on {host}:{port}: {error.strerror or error}; pass --port N "
            "(0: any free port) or another --host"
        )
    with sock:
        try:
            if game is not None:
                check_game(game)
            checkpoint = checkpoint or default_agent(game)
            agent = load(checkpoint, set_, trust_code, game)
            session = Session(
                agent,
                simulations=simulations,
                search=search,
                human=0 if human == "first" else 1,
                seed=seed,
                games=_recorded_games(checkpoint, agent),
            )
        except (UsageError, CheckpointError, ValueError) as error:
            fail(str(error))
        say_which(checkpoint, agent)
        warning = exposure(host)
        if warning is not None:
            console.print(warning, highlight=False, soft_wrap=True)

        def ready(url: str) -> None:
            print(f"board: {url} (Ctrl-C stops it)", flush=True)
            if open_browser:
                import webbrowser

                webbrowser.open(url)

        serve(session, host, on_ready=ready, allow_hosts=allow_host or (), sock=sock)
    print("board stopped", file=sys.stderr, flush=True)


def _recorded_games(checkpoint: Path, agent: Agent) -> list[RecordedGame]:
    """The games of the run ``checkpoint`` is in ([] for an agent folder)."""
    from jaxzero.run.agents.agent import locate
    from jaxzero.run.agents.agent_files import find_agent
    from jaxzero.run.life.checkpoint import CheckpointError
    from jaxzero.run.life.game_records import read_games

    try:
        run_dir, _ = locate(find_agent(checkpoint))
    except CheckpointError:
        return []
    return read_games(run_dir, agent.env.num_actions)
