"""The tables of :mod:`experiments.compare_search`: their rows, CSVs, plots and results.md.

A study's results are four tables (lists of row dicts), keyed as in :data:`FILES`:
``matches``, ``shares``, ``differences`` and ``training``. :func:`write_tables` writes
their CSVs, :func:`write_report` their PNGs and ``results.md``; :func:`render` redraws both from
the CSVs of an output directory.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from jaxzero.measure.probes import optimal_share
from jaxzero.measure.statistics import mean_interval, paired_difference, welch_difference

Rows = list[dict[str, Any]]
KINDS = ("puct", "gumbel")  # the two arms of this study (search.kind names)
MATCHES = (("puct", "raw"), ("gumbel", "raw"), ("gumbel", "puct"))  # (player, opponent) per n
NAMES = {"puct": "PUCT", "gumbel": "Gumbel", "raw": "raw"}

IMPROVEMENT_COLUMNS = [
    "game", "player", "simulations", "opponent", "opponent_simulations",
    "games", "wins", "draws", "losses", "score", "score_low", "score_high",
]  # fmt: skip
OPTIMAL_COLUMNS = [
    "game", "player", "simulations", "positions", "optimal", "optimal_low", "optimal_high",
    "critical", "kept",
]  # fmt: skip
DIFFERENCE_COLUMNS = [
    "game", "simulations", "positions", "gumbel_only", "puct_only", "difference",
    "difference_low", "difference_high",
]  # fmt: skip
TRAINING_COLUMNS = [
    "game", "search", "simulations", "seed", "iteration", "wall_seconds", "positions",
    "optimal", "optimal_low", "optimal_high",
]  # fmt: skip
FILES = {
    "matches": ("policy_improvement.csv", IMPROVEMENT_COLUMNS),
    "shares": ("optimal_share.csv", OPTIMAL_COLUMNS),
    "differences": ("optimal_difference.csv", DIFFERENCE_COLUMNS),
    "training": ("training.csv", TRAINING_COLUMNS),
}

# --------------------------------------------------------------------------------- rows


def match_row(game: str, player: str, n: int, opponent: str, n_opponent: int, result) -> dict:
    """A MatchResult of ``player``(n) against ``opponent``(n_opponent)."""
    lo, hi = result.interval()
    return dict(
        game=game, player=player, simulations=n, opponent=opponent,
        opponent_simulations=n_opponent, games=result.games, wins=result.wins,
        draws=result.draws, losses=result.losses, score=result.score,
        score_low=lo, score_high=hi,
    )  # fmt: skip


def optimal_row(game: str, player: str, n: int, quality) -> dict[str, Any]:
    return dict(
        game=game, player=player, simulations=n, positions=quality.positions,
        critical=quality.critical, kept=quality.kept, **optimal_share(quality),
    )  # fmt: skip


def difference_row(game: str, n: int, gumbel, puct) -> dict[str, Any]:
    """Gumbel's minus PUCT's optimal share on the same positions, paired interval."""
    g, p = gumbel.optimal_moves, puct.optimal_moves
    difference, lo, hi = paired_difference(g, p)
    return dict(
        game=game, simulations=n, positions=len(g), gumbel_only=int((g & ~p).sum()),
        puct_only=int((p & ~g).sum()), difference=difference, difference_low=lo,
        difference_high=hi,
    )  # fmt: skip


# ---------------------------------------------------------------------------------- CSVs


def write_csv(path: Path, columns: Sequence[str], rows: Rows) -> None:
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(columns))
        writer.writeheader()
        for row in rows:
            writer.writerow({c: row[c] for c in columns})


def write_tables(out: Path, tables: dict[str, Rows]) -> None:
    for name, rows in tables.items():
        file, columns = FILES[name]
        write_csv(out / file, columns, rows)


def _typed(value: str) -> Any:
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def read_csv(path: Path) -> Rows:
    """Rows of a CSV this study wrote, numbers parsed; [] if the file is missing."""
    if not path.exists():
        return []
    with open(path, newline="") as f:
        return [{k: _typed(v) for k, v in row.items()} for row in csv.DictReader(f)]


# ------------------------------------------------------------------------------ verdicts


def verdict(low: float, high: float, even: float = 0.5) -> str:
    """Gumbel's 95% interval against PUCT (a score, or a difference with ``even=0``)."""
    if low > even:
        return "Gumbel better"
    if high < even:
        return "PUCT better"
    return "no clear difference"


def seeds_difference(puct: Rows, gumbel: Rows) -> tuple[float, float, float] | None:
    """Gumbel − PUCT of the mean final share with Welch's 95% interval, from 3 seeds a
    side; None with fewer."""
    if min(len(puct), len(gumbel)) < 3:
        return None
    return welch_difference([r["optimal"] for r in gumbel], [r["optimal"] for r in puct])


def training_verdict(puct: Rows, gumbel: Rows) -> str:
    """Which search trained better. With 3 or more seeds a side: where Welch's 95%
    interval of the difference of the mean final shares excludes 0. With fewer: only a
    separation that holds for every seed (each seed's interval above all of the other's)."""
    if not puct or not gumbel:
        return "PUCT only" if puct else "Gumbel only" if gumbel else "no runs"
    if difference := seeds_difference(puct, gumbel):
        _, low, high = difference
        return "Gumbel better" if low > 0 else "PUCT better" if high < 0 else "no clear difference"
    if min(r["optimal_low"] for r in gumbel) > max(r["optimal_high"] for r in puct):
        return "Gumbel better"
    if min(r["optimal_low"] for r in puct) > max(r["optimal_high"] for r in gumbel):
        return "PUCT better"
    return "no clear difference"


# ------------------------------------------------------------------------------ markdown


def _fmt(row: dict[str, Any], name: str, digits: int = 2) -> str:
    """``row[name]`` with its interval ``[name_low, name_high]``."""
    lo, hi = row[f"{name}_low"], row[f"{name}_high"]
    return f"{row[name]:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def _table(title: str, note: str, header: Sequence[str], body: list[str]) -> list[str]:
    head = ["", title, ""] + ([note, ""] if note else [])
    return head + ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + body


def _match_lines(matches: Rows) -> list[str]:
    index = {(r["game"], r["player"], r["simulations"], r["opponent"]): r for r in matches}
    body = []
    for game in dict.fromkeys(r["game"] for r in matches):
        for n in sorted({r["simulations"] for r in matches if r["game"] == game}):
            p, g, h = (index[game, player, n, opponent] for player, opponent in MATCHES)
            cells = " | ".join(_fmt(r, "score") for r in (p, g, h))
            body.append(f"| {game} | {n} | {cells} | {verdict(h['score_low'], h['score_high'])} |")
    return body


def final_rows(training: Rows) -> dict[tuple, dict[str, Any]]:
    """Each run's last measurement, keyed (game, simulations, search, seed)."""
    final: dict[tuple, dict[str, Any]] = {}
    for r in training:
        key = (r["game"], r["simulations"], r["search"], r["seed"])
        if key not in final or r["wall_seconds"] >= final[key]["wall_seconds"]:
            final[key] = r
    return final


def _seeds_cell(rows: Rows) -> str:
    """A side's final shares: each seed's with its Wilson interval (two seeds or one), or
    their mean over the seeds with its t interval, then each seed's value."""
    if not rows:
        return "—"  # a budget trained with one search only
    if len(rows) < 3:
        return ", ".join(_fmt(r, "optimal", 3) for r in rows)
    mean, low, high = mean_interval(r["optimal"] for r in rows)
    each = " ".join(f"{r['optimal']:.3f}" for r in rows)
    return f"**{mean:.3f} [{low:.3f}, {high:.3f}]** ({len(rows)} seeds: {each})"


def _training_lines(training: Rows) -> list[str]:
    final = final_rows(training)
    body = []
    for game, n in dict.fromkeys((g, n) for g, n, _, _ in sorted(final)):
        runs = {k: [r for key, r in final.items() if key[:3] == (game, n, k)] for k in KINDS}
        cells = [_seeds_cell(rs) for rs in runs.values()]
        positions = " / ".join(
            f"{np.mean([r['positions'] for r in rs]):.0f}" if rs else "—" for rs in runs.values()
        )
        verdict_ = training_verdict(runs["puct"], runs["gumbel"])
        if difference := seeds_difference(runs["puct"], runs["gumbel"]):
            verdict_ += ": Gumbel − PUCT {:+.3f} [{:+.3f}, {:+.3f}]".format(*difference)
        body.append(f"| {game} | {n} | {cells[0]} | {cells[1]} | {positions} | {verdict_} |")
    return body


def markdown(tables: dict[str, Rows], tier_name: str, command: str) -> str:
    matches, shares, differences, training = (tables.get(name, []) for name in FILES)
    lines = [f"# PUCT vs Gumbel ({tier_name} tier)", "", f"Command: `{command}`"]
    if matches:
        lines += _table(
            "## Policy improvement at a fixed network",
            "Score = (wins + draws/2) / games, 95% Wilson interval; both colours, random openings.",
            ["game", "n", "PUCT vs raw", "Gumbel vs raw", "Gumbel vs PUCT", "verdict"],
            _match_lines(matches),
        )
    if shares:
        lines += _table(
            "## Solver-optimal move share",
            "",
            ["game", "player", "n", "optimal share", "kept in critical positions"],
            [
                f"| {r['game']} | {r['player']} | {r['simulations']} | "
                f"{_fmt(r, 'optimal', 3)} | {r['kept']:.3f} of {r['critical']} |"
                for r in shares
            ],
        )
    if differences:
        lines += _table(
            "### Gumbel minus PUCT on the same positions",
            "Paired: both searches answer the same positions, so the difference of their "
            "optimal shares gets Newcombe's paired 95% interval (much narrower than two "
            "separate intervals).",
            ["game", "n", "Gumbel only", "PUCT only", "Gumbel - PUCT", "verdict"],
            [
                f"| {r['game']} | {r['simulations']} | {r['gumbel_only']} | {r['puct_only']} | "
                f"{_fmt(r, 'difference', 3)} | "
                f"{verdict(r['difference_low'], r['difference_high'], even=0.0)} |"
                for r in differences
            ],
        )
    if training:
        lines += _table(
            "## Training with each search (equal wall time)",
            "Raw-policy solver-optimal share at the end of each run. With one or two seeds: "
            "per seed, with its 95% Wilson interval over the position set; the verdict says "
            "one search is better only when every seed's interval lies above every seed's "
            "interval of the other. With three or more: the mean over the seeds with its "
            "95% Student-t interval, and the verdict from Welch's 95% interval of the "
            "difference of the means.",
            ["game", "n", "PUCT per seed", "Gumbel per seed", "positions PUCT / Gumbel", "verdict"],
            _training_lines(training),
        )
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------- plots


def _save(fig, path: Path) -> Path:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _panels(rows: Rows, y: str, series, levels, path: Path, title: str, ylabel: str) -> Path:
    """One panel per game: each ``(label, where)`` of ``series`` draws the rows matching
    ``where``, ``y`` against n with 95% error bars; ``levels[game]``: grey (level, label) lines."""
    import matplotlib.pyplot as plt

    games = list(dict.fromkeys(r["game"] for r in rows))
    fig, axes = plt.subplots(1, len(games), figsize=(4.5 * len(games), 3.6), squeeze=False)
    for ax, game in zip(axes[0], games, strict=True):
        for level, label in levels.get(game, []):
            ax.axhline(level, color="grey", lw=0.8, ls="--", label=label)
        for label, where in series:
            rs = [r for r in rows if r["game"] == game and where.items() <= r.items()]  # ⊆
            err = np.array([[r[y] - r[f"{y}_low"], r[f"{y}_high"] - r[y]] for r in rs]).T
            x, value = [r["simulations"] for r in rs], [r[y] for r in rs]
            ax.errorbar(x, value, yerr=err, marker="o", capsize=3, label=label)
        ax.set(title=title.format(game=game), xlabel="simulations n", ylabel=ylabel)
        ax.set_xscale("log", base=2)
        ax.legend(fontsize=8)
    return _save(fig, path)


def _training_plot(training: Rows, path: Path) -> Path:
    """Each run's share against wall time and positions; with 3 or more seeds a side,
    thin per-seed lines under the mean of each measurement with its 95% t band."""
    import matplotlib.pyplot as plt

    budgets = sorted({r["simulations"] for r in training})
    fig, axes = plt.subplots(2, len(budgets), figsize=(4.5 * len(budgets), 7), squeeze=False)
    colours = {"puct": "tab:blue", "gumbel": "tab:orange"}
    axis = (
        ("wall_seconds", "training wall time (s), per seed"),
        ("positions", "positions generated"),
    )
    for col, n in enumerate(budgets):
        at_n = [r for r in training if r["simulations"] == n]
        for (xkey, xlabel), ax in zip(axis, axes[:, col], strict=True):
            for kind in KINDS:
                seeds = sorted({r["seed"] for r in at_n if r["search"] == kind})
                runs = [[r for r in at_n if (r["search"], r["seed"]) == (kind, s)] for s in seeds]
                many = len(runs) >= 3
                for seed, rs in zip(seeds, runs, strict=True):
                    ax.plot(
                        [r[xkey] for r in rs], [r["optimal"] for r in rs],
                        color=colours[kind], marker="" if many else ".",
                        lw=0.6 if many else 1.5, alpha=0.35 if many else 1.0,
                        ls="-" if many or seed % 2 == 0 else "--",
                        label=None if many else f"{kind} seed {seed}",
                    )  # fmt: skip
                if many:  # the i-th measurement of every seed, averaged
                    length = min(len(rs) for rs in runs)
                    x = np.mean([[r[xkey] for r in rs[:length]] for rs in runs], axis=0)
                    bands = [
                        mean_interval(rs[i]["optimal"] for rs in runs) for i in range(length)
                    ]  # fmt: skip
                    mean, low, high = (np.array(v) for v in zip(*bands, strict=True))
                    ax.plot(
                        x,
                        mean,
                        color=colours[kind],
                        lw=2,
                        label=f"{kind}, mean of {len(runs)} seeds",
                    )
                    ax.fill_between(x, low, high, color=colours[kind], alpha=0.25)
            ax.set(title=f"{training[0]['game']}, {n} simulations", xlabel=xlabel)
            ax.set_ylabel("raw-policy optimal share")
            if xkey == "positions":
                ax.ticklabel_format(axis="x", style="sci", scilimits=(0, 0))
            ax.legend(fontsize=7)
    return _save(fig, path)


def plot(tables: dict[str, Rows], out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    matches, shares, training = (tables.get(name, []) for name in ("matches", "shares", "training"))
    written = []
    if matches:
        series = [(f"{NAMES[p]} vs {NAMES[o]}", {"player": p, "opponent": o}) for p, o in MATCHES]
        even = dict.fromkeys((r["game"] for r in matches), [(0.5, None)])
        path, ylabel = out / "policy_improvement.png", "score (95% CI)"
        written.append(_panels(matches, "score", series, even, path, "{game}", ylabel))
    if shares:
        series = [(kind, {"player": kind}) for kind in KINDS]
        raw = {r["game"]: [(r["optimal"], "raw policy")] for r in shares if r["player"] == "raw"}
        path, title = out / "optimal_share.png", "{game}: solver-optimal moves"
        written.append(
            _panels(shares, "optimal", series, raw, path, title, "optimal share (95% CI)")
        )
    if training:
        written.append(_training_plot(training, out / "training.png"))
    return written


def write_report(
    out: Path, tables: dict[str, Rows], tier_name: str, command: str
) -> tuple[str, list]:
    """Draw the PNGs and write ``results.md`` of ``tables``; (its text, the PNG paths)."""
    pngs = plot(tables, out)
    text = markdown(tables, tier_name, command)
    (out / "results.md").write_text(text)
    return text, pngs


def render(out: str | Path, tier_name: str, command: str = "") -> str:
    """Redraw the PNGs and ``results.md`` of ``out`` from its CSVs (e.g. of a partial run)."""
    out = Path(out)
    tables = {name: read_csv(out / file) for name, (file, _) in FILES.items()}
    return write_report(out, tables, tier_name, command)[0]
