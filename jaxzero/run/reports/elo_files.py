"""``RUN/elo.json``: a round robin's ratings, written into each run directory taken part.

    for written, kept in write_elo_files(table):   # table: measure.round_robin.RoundRobin
        ...

``RUN/elo.json`` (the latest round robin; an earlier one is renamed
``elo-DATE-TIME.json``, not overwritten) holds the run's checkpoints' ratings as rows keyed
by iteration, with metric names starting with ``elo`` (``elo``, ``elo_lower``,
``elo_upper``, and the fixed opponents' ratings as ``elo/NAME``), which ``jaxzero report``
plots next to metrics.jsonl.
"""

from __future__ import annotations

import time
from pathlib import Path

from jaxzero.measure.round_robin import ANCHOR, RoundRobin
from jaxzero.run.folder import manifest, nolink
from jaxzero.run.folder.files import json_text
from jaxzero.run.folder.layout import ELO_FILE


def elo_rows(table: RoundRobin, run_dir: Path) -> list[dict[str, float]]:
    """Rows keyed by iteration for one run: its checkpoint's Elo and 95% interval, and
    every fixed opponent's Elo (constant reference lines)."""
    ratings = table.ratings
    fixed = {e.name: ratings[e.name] for e in table.entrants if e.fixed}
    rows: list[dict[str, float]] = []
    mine = [e for e in table.entrants if e.run_dir is not None and e.run_dir == run_dir]
    for entrant in sorted(mine, key=lambda e: e.iteration or 0):
        i = ratings.players.index(entrant.name)
        row: dict[str, float] = {
            "iteration": entrant.iteration or 0,
            "elo": float(ratings.elo[i]),
            "elo_lower": float(ratings.lower[i]),
            "elo_upper": float(ratings.upper[i]),
        }
        row |= {f"elo/{name}": value for name, value in fixed.items() if name != ANCHOR}
        rows.append(row)
    return rows


def keep_previous(path: Path) -> Path | None:
    """Rename an existing ``path`` to ``STEM-YYYYmmdd-HHMMSS.SUFFIX`` (its modification
    time, then ``-2``, ``-3`` ... if taken) so that writing ``path`` loses nothing; returns
    the new name, or None when there was nothing to keep."""
    if not path.exists():
        return None
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(path.stat().st_mtime))
    kept = path.with_name(f"{path.stem}-{stamp}{path.suffix}")
    n = 1
    while kept.exists():
        n += 1
        kept = path.with_name(f"{path.stem}-{stamp}-{n}{path.suffix}")
    return path.rename(kept)


def write_elo_files(table: RoundRobin) -> list[tuple[Path, Path | None]]:
    """Write ``RUN/elo.json`` into every run directory that took part. An earlier file is
    renamed first (:func:`keep_previous`), never overwritten. Returns (written, kept) pairs."""
    written = []
    runs = dict.fromkeys(e.run_dir for e in table.entrants if e.run_dir is not None)
    ratings = table.ratings
    for run_dir in runs:
        data = {
            "anchor": ANCHOR,
            "games_per_pair": table.games,
            "players": {
                name: {
                    "elo": float(ratings.elo[i]),
                    "lower": float(ratings.lower[i]),
                    "upper": float(ratings.upper[i]),
                    "games": int(ratings.games[i]),
                    "score": float(ratings.score[i]),
                }
                for i, name in enumerate(ratings.players)
            },
            "rows": elo_rows(table, run_dir),
        }
        path, root = run_dir / ELO_FILE, manifest.run_root(run_dir)
        written.append((path, _replace(root, path, json_text(data, path))))
    return written


def _replace(root: Path, path: Path, text: str) -> Path | None:
    """``path`` written with ``text`` (never through a link below ``root``), the earlier
    file moved aside once the new one is whole on disk; where the earlier one went."""
    kept = None

    def move_aside() -> None:
        nonlocal kept
        kept = keep_previous(path)
        manifest.record(root, files=[p for p in (path, kept) if p is not None])

    nolink.write_atomic(root, path, text, before=move_aside)
    return kept
