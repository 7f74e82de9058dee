"""``jaxzero export``: a run's playing network as a small agent folder."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from jaxzero.cli.app import console, fail
from jaxzero.cli.options import TrustCodeOption


def export(
    checkpoint: Annotated[
        Path, typer.Argument(help="Run directory (latest checkpoint) or RUN/checkpoints/N")
    ],
    out: Annotated[Path, typer.Option(help="New folder to write the agent into")],
    trust_code: TrustCodeOption = False,
) -> None:
    """Write a run's playing network as a small agent folder: config, parameters and a
    model card. `jaxzero play/eval/analyze/gtp --checkpoint FOLDER` and
    `jaxzero.load_agent(FOLDER)` read it."""
    from jaxzero.run.agents.agent import export_agent
    from jaxzero.run.life.checkpoint import CheckpointError

    try:
        agent = export_agent(checkpoint, out, trust_code=trust_code)
    except FileExistsError:
        fail(f"{out} already exists: pick a new --out folder (nothing was written)")
    except (CheckpointError, ValueError) as error:
        fail(str(error))
    size = sum(f.stat().st_size for f in out.iterdir())
    console.print(
        f"exported {checkpoint} (iteration {agent.iteration}) into {out}: {size / 1e3:.0f} kB; "
        f"its model card is {out / 'MODEL_CARD.md'}",
        highlight=False,
        soft_wrap=True,
    )
