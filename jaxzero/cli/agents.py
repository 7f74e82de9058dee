"""Which agent a command plays with: the folder it names, else the user's own
``runs/GAME``, else the one shipped for the game; loaded with the ``--set`` settings and
only the code ``--trust-code`` allows."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from jaxzero.cli.app import UsageError, console
from jaxzero.cli.games import run_name
from jaxzero.cli.options import search_settings, trusted

if TYPE_CHECKING:
    from jaxzero.run.agents.agent import Agent


def load(
    checkpoint: Path, settings: list[str] | None, trust_code: bool, game: str | None = None
) -> Agent:
    """The agent of ``checkpoint`` with ``--set`` settings, importing only the code that
    ``--trust-code`` or the typed ``game`` allows; UsageError if it plays another game
    than ``game``."""
    from jaxzero.run.agents.agent import load_agent

    trust = trusted(trust_code, game)
    agent = load_agent(checkpoint, settings=search_settings(settings), trust_code=trust)
    if game is not None and game not in (agent.config.game, agent.env.id):
        raise UsageError(f"{checkpoint} holds a {agent.config.game} agent, not {game}")
    return agent


def default_agent(game: str | None) -> Path:
    """The agent ``jaxzero play GAME`` plays: the user's own ``runs/GAME`` if it exists,
    else the one shipped in the package for GAME."""
    from jaxzero.run.agents.agent_files import shipped_agent

    if game is None:
        raise UsageError("say which agent to play: jaxzero play GAME, or --checkpoint RUN_DIR")
    run = Path("runs") / run_name(game)
    if run.exists():
        return run
    shipped = shipped_agent(game)
    if shipped is None:
        raise UsageError(
            f"no agent in {run} and none shipped for {game}: train one with "
            f"`jaxzero train {game}`, or pass --checkpoint RUN_DIR"
        )
    return shipped


def say_which(checkpoint: Path, agent: Agent) -> None:
    """One line on stderr naming the agent a command plays with."""
    from jaxzero.run.agents.agent_files import describe, find_agent, shipped_agent

    line = f"agent: {describe(find_agent(checkpoint))}, iteration {agent.iteration}"
    game = agent.config.game
    if Path(checkpoint) == Path("runs") / run_name(game) and shipped_agent(game) is not None:
        line += f" (your own run; the shipped agent: --checkpoint {game})"
    console.print(line, highlight=False, soft_wrap=True)
