"""What ``jaxzero train`` prints and logs while a run or a study's arms train: the
progress line of each logged iteration, and the ``--wandb`` hook."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # (the command line starts without JAX)
    from jaxzero.run.life.hooks import Hook


def progress_line(m: dict[str, float]) -> str:
    """One line of a run's progress: speed, losses, the gate's verdict, evaluations."""
    parts = [f"it {int(m['iteration']):>5}", f"{m['elapsed']:>6.0f}s"]
    for name, label, fmt in [
        ("positions_per_second", "pos/s", ".0f"),
        ("policy_loss", "policy", ".3f"),
        ("value_loss", "value", ".3f"),
        ("kl_search_prior", "KL", ".3f"),
        ("buffer_fill", "buffer", ".0%"),
    ]:
        if name in m:
            parts.append(f"{label} {m[name]:{fmt}}")
    if "arena/score" in m:
        verdict = "promoted" if m.get("arena/promoted") else "kept best"
        parts.append(f"arena {m['arena/score']:.2f} ({verdict})")
    if "eval/raw_optimal" in m:  # the raw policy on the game's solved positions
        parts.append(f"raw optimal {m['eval/raw_optimal']:.1%}")
    for name, label in [("eval/vs_random", "vs random"), ("eval/vs_one_ply", "vs one-ply")]:
        if name in m:
            parts.append(f"{label} {m[name]:.2f}")
    return "  ".join(parts)


def wandb_hooks(project: str | None, run_dir: Path, group: str | None = None) -> list[Hook]:
    """The Weights & Biases hook for ``--wandb PROJECT`` (ValueError in one line without
    the extra), or none; ``group``: a study's arms, one group."""
    if project is None:
        return []
    from jaxzero.run.reports.wandb_hook import WandbLogger

    return [WandbLogger(run_dir, project=project, group=group)]
