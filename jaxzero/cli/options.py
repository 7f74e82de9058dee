"""Options several commands share (``--search``, ``--set``, ``--trust-code``, a seed's
range) and how their values are read."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

from jaxzero.cli.app import fail

SEED_MAX = 2**32 - 1
# The commands that play an agent (play, board): which game, which agent, which seat
GameArgument = Annotated[str | None, typer.Argument(help="Game (default: the checkpoint's)")]
AgentOption = Annotated[
    Path | None,
    typer.Option(
        help="Run directory, checkpoint or agent folder [default: runs/GAME, else "
        "the shipped agent of GAME]"
    ),
]
HumanOption = Annotated[Literal["first", "second"], typer.Option(help="Play first or second")]
SimulationsOption = Annotated[
    int | None, typer.Option(min=1, help="Search simulations per agent move")
]


def _search_kind(kind: str | None) -> str | None:
    """``--search``: a registered search or an import path, checked before any loading."""
    if kind is None:
        return None
    from jaxzero.core.imports import is_import_path
    from jaxzero.core.policies import search_kinds

    if kind not in search_kinds() and not is_import_path(kind):
        raise typer.BadParameter(
            f"unknown search {kind!r}; choose {', '.join(search_kinds())}, or module:factory"
        )
    return kind


SearchKind = Annotated[
    str | None,
    typer.Option(
        help="Search: gumbel, puct, a registered name or module:factory [default: the run's]",
        callback=_search_kind,
    ),
]
SearchSettings = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        metavar="KEY=VALUE",
        help="Play with a search.* or evaluation.* setting changed, e.g. "
        "evaluation.average_symmetries=true",
    ),
]
TrustCodeOption = Annotated[
    bool,
    typer.Option(
        "--trust-code",
        help="Import the code that the run or agent folder names (a module:attribute game, "
        "network or search function): only for folders from someone you trust",
    ),
]


def trusted(trust_code: bool, *named: str | None) -> bool | list[str]:
    """``load_agent``'s ``trust_code``: everything, or the import paths typed on this call."""
    return True if trust_code else [name for name in named if name]


def search_settings(items: list[str] | None) -> dict[str, str]:
    """The ``--set KEY=VALUE`` settings as a dict; exit with an error line for a bad one."""
    from jaxzero.run.agents.agent import parse_settings

    try:
        return parse_settings(items or [])
    except ValueError as error:
        fail(str(error))
