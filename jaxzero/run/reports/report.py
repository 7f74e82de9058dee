"""``jaxzero report RUN_DIR``: figures and a short markdown summary of a training run.

Reads ``metrics.jsonl`` (one JSON object per logged iteration), and the round robin's Elo rows
from ``elo.json`` when ``jaxzero eval`` wrote one, and writes PNG figures and
``summary.md`` into ``RUN_DIR/report/``. Each figure groups metrics by meaning; a figure
whose metrics the run never logged is skipped, so any run directory can be reported.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from jaxzero.core.single_game import SingleGame
from jaxzero.run.folder import manifest, nolink
from jaxzero.run.folder.files import FileProblem, os_reason
from jaxzero.run.folder.layout import (
    CONFIG_FILE,
    GAMES_FILE,
    METRICS_FILE,
    POPULATION_FILE,
    REPORT_DIR,
    SUMMARY_FILE,
)
from jaxzero.run.life.game_records import (
    SELF_PLAY,
    RecordedGame,
    player_names,
    read_games,
    strip_svg,
)
from jaxzero.run.reports.figures import plt
from jaxzero.run.reports.markdown import markdown_text
from jaxzero.run.reports.rows import ReportError, read_elo_rows, read_metrics, record_report

STRIPS = 5  # recorded games a report draws

# figure file -> (title, y label, metric-name predicate)
FIGURES: dict[str, tuple[str, str, Callable[[str], bool]]] = {
    "losses.png": ("Training losses", "loss", lambda n: n.endswith("_loss")),
    "kl_gap.png": (
        "Search improvement over the prior: KL(search || prior)",
        "nats",
        lambda n: n.startswith("kl_") or n == "policy_entropy",
    ),
    "win_rates.png": (
        "Evaluation",
        "score / rate",
        lambda n: n.startswith(("eval/", "arena/")) and not n.endswith(("promoted", "games")),
    ),
    "model.png": (  # a learned model's run only
        "Learned model: its errors k moves on; nodes off the rules",
        "error / share",
        lambda n: n.startswith(("model/value_error", "model/policy_distance", "model/off_rules")),
    ),
    "games.png": (
        "Self-play games",
        "value",
        lambda n: n in {"game_length", "win_rate", "draw_rate", "loss_rate", "buffer_fill"},
    ),
}


def _series(rows: list[dict[str, float]], name: str) -> tuple[list[float], list[float]]:
    xs, ys = [], []
    for row in rows:
        if name in row and row[name] is not None:
            xs.append(row["iteration"])
            ys.append(row[name])
    return xs, ys


def _elo_figure(
    run_dir: Path, path: Path, elo_rows: list[dict[str, float]], promotions: list[float]
) -> None:
    """The run's Elo per checkpoint with its 95% band, the fixed opponents as dashed
    horizontal lines (their fit over the same round robin), promotions as grey lines."""
    xs, elo = _series(elo_rows, "elo")
    _, lower = _series(elo_rows, "elo_lower")
    _, upper = _series(elo_rows, "elo_upper")
    fig, ax = plt.subplots(figsize=(7, 4))
    if len(lower) == len(xs) and len(upper) == len(xs):
        error = np.array([np.subtract(elo, lower), np.subtract(upper, elo)])  # [2, K]
        ax.errorbar(xs, elo, yerr=error, marker="o", capsize=3, label="agent, 95% interval")
        ax.fill_between(xs, lower, upper, alpha=0.15)
    else:
        ax.plot(xs, elo, marker="o", label="agent")
    opponents = sorted({n for row in elo_rows for n in row if n.startswith("elo/")})
    for i, name in enumerate(opponents):
        _, ys = _series(elo_rows, name)
        ax.axhline(
            ys[-1],
            linestyle="--",
            linewidth=1,
            color=f"C{i + 1}",
            label=f"{name.removeprefix('elo/')} ({ys[-1]:.0f})",
        )
    for x in promotions:
        ax.axvline(x, color="grey", alpha=0.3, linewidth=1)
    if promotions:
        ax.plot([], [], color="grey", alpha=0.3, label=f"promotion ({len(promotions)})")
    ax.set(title="Elo (random = 0)", xlabel="iteration", ylabel="Elo")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    nolink.write_figure(run_dir, path, fig, dpi=110)
    plt.close(fig)


def write_report(run_dir: str | Path) -> Path:
    """Write the figures and ``summary.md``; returns the report directory. A
    population's (``RUN/population.json``) draws each arm across its seeds
    (:mod:`jaxzero.run.reports.population_report`)."""
    run_dir = Path(run_dir)
    found = nolink.links_below(run_dir, run_dir / REPORT_DIR)  # before a figure is drawn
    if found:
        raise ReportError(found)
    if (run_dir / POPULATION_FILE).is_file():
        from jaxzero.run.reports.population_report import write_population_report

        try:
            return write_population_report(run_dir)
        except FileProblem as problem:
            raise ReportError(str(problem)) from None
        except OSError as error:
            raise ReportError(
                f"cannot write the report in {run_dir / 'report'}: {os_reason(error)}"
            ) from None
    rows, skipped = read_metrics(run_dir)
    elo_rows = read_elo_rows(run_dir)
    out = run_dir / REPORT_DIR
    try:
        manifest.make_folders(manifest.run_root(run_dir), out)
        nolink.check_writable(run_dir, out, "the report")
        return _write_report(run_dir, out, rows, skipped, elo_rows)
    except FileProblem as problem:
        raise ReportError(str(problem)) from None
    except OSError as error:
        raise ReportError(f"cannot write the report in {out}: {os_reason(error)}") from None


def _write_report(run_dir, out, rows, skipped, elo_rows) -> Path:
    plotted = rows + elo_rows
    promotions = [r["iteration"] for r in rows if (r.get("arena/promoted") or 0) > 0]
    names = sorted({name for row in plotted for name in row} - {"iteration", "elapsed"})
    made = []
    for filename, (title, ylabel, wanted) in FIGURES.items():
        chosen = [n for n in names if wanted(n)]
        if not chosen:
            continue
        record_report(run_dir, out, [filename])
        fig, ax = plt.subplots(figsize=(7, 4))
        for name in chosen:
            xs, ys = _series(plotted, name)
            ax.plot(xs, ys, label=name, marker="." if len(xs) < 50 else None)
        ax.set(title=title, xlabel="iteration", ylabel=ylabel)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        nolink.write_figure(run_dir, out / filename, fig, dpi=110)
        plt.close(fig)
        made.append(filename)
    if elo_rows:
        record_report(run_dir, out, ["elo.png"])
        _elo_figure(run_dir, out / "elo.png", elo_rows, promotions)
        made.append("elo.png")
    lines = _summary(run_dir, rows, skipped, elo_rows, promotions, made)
    lines += _game_strips(run_dir, out)
    record_report(run_dir, out, [SUMMARY_FILE])
    nolink.write_atomic(run_dir, out / SUMMARY_FILE, "\n".join(lines))
    return out


def _shown(value: float | None) -> str:
    return "not finite" if value is None else f"{value:.4g}"


def _summary(run_dir, rows, skipped, elo_rows, promotions, made) -> list[str]:
    """The lines of ``summary.md``."""
    last = rows[-1]
    arena_rows = [r for r in rows if "arena/promoted" in r]
    elo_lines = [
        f"| {int(r['iteration'])} | {r['elo']:.0f} | [{r['elo_lower']:.0f}, {r['elo_upper']:.0f}] |"
        for r in elo_rows
        if "elo" in r
    ]
    lines = [
        f"# Run report: {markdown_text(run_dir.name)}",
        "",
        f"{len(rows)} logged iterations, last at iteration {int(last['iteration'])} "
        f"after {last.get('elapsed') or 0:.0f} s of this invocation.",
        "",
        "Each metric's last logged value, and the iteration it was logged at (a run's",
        "evaluation is logged every `evaluation.every` iterations; the measurements of",
        "its strength, `eval/...`, first).",
        "",
        "| metric | last value | at iteration |",
        "|---|---|---|",
        *[
            f"| {markdown_text(n)} | {_shown(value)} | {at} |"
            for n, (value, at) in _latest(rows).items()
        ],
        "",
        *(
            [f"Arena gate: {len(promotions)} promotions in {len(arena_rows)} matches.", ""]
            if arena_rows
            else []
        ),
        *(
            ["| checkpoint | Elo | 95% interval |", "|---|---|---|", *elo_lines, ""]
            if elo_lines
            else []
        ),
        *[f"![{f}]({f})" for f in made],
        "",
    ]
    if skipped:
        shown = ", ".join(map(str, skipped[:10])) + (", ..." if len(skipped) > 10 else "")
        lines[3:3] = [f"{len(skipped)} unreadable lines of {METRICS_FILE} skipped: {shown}.", ""]
    return lines


def _latest(rows: list[dict]) -> dict[str, tuple[float | None, int]]:
    """Each metric's last logged value and its iteration, ``eval/...`` first, then by
    name: an evaluation's row is not the last row unless the run stopped on one."""
    latest = {}
    for row in rows:
        for name, value in row.items():
            if name not in ("iteration", "elapsed"):
                latest[name] = (value, int(row["iteration"]))
    return dict(sorted(latest.items(), key=lambda item: (not item[0].startswith("eval/"), item[0])))


def chosen_games(games: list[RecordedGame], count: int = STRIPS) -> list[RecordedGame]:
    """The games a report draws: the last self-play game, and the last evaluation's games
    (against each opponent, the network first and second); at most ``count``."""
    self_play = [g for g in games if g.kind == SELF_PLAY][-1:]
    evaluated = [g for g in games if g.kind != SELF_PLAY]
    last = evaluated[-1].iteration if evaluated else None
    return (self_play + [g for g in evaluated if g.iteration == last])[:count]


def _game_strips(run_dir: Path, out: Path) -> list[str]:
    """Draw a few of the run's recorded games (``games.jsonl``) move by move, each into
    ``report/game_K.svg``; the summary's lines about them."""
    import jax

    import envs
    from envs.registry import imports_code
    from jaxzero.run.folder.config_file import read_config_file

    try:
        game = read_config_file(run_dir / CONFIG_FILE).game
    except (OSError, ValueError):
        return []  # no config to name the game: no games to draw
    if not (run_dir / GAMES_FILE).exists():
        return []
    if imports_code(game):  # a file names the code: the report does not import it
        return [
            "## Games",
            "",
            f"Not drawn: the game {markdown_text(game)} is code that a report does not import.",
            "",
        ]
    try:
        env = envs.make(game)
        games = chosen_games(read_games(run_dir, env.num_actions))
    except (ValueError, TypeError) as error:
        return ["## Games", "", f"Not drawn: {markdown_text(error)}.", ""]
    lines = ["## Games", ""]
    single = SingleGame(env)
    names = player_names(env, single.init(jax.random.key(0)))  # X, O: as the strips draw them
    for number, recorded in enumerate(games, start=1):
        name = f"game_{number}.svg"
        label = markdown_text(recorded.describe(names))
        try:
            svg = strip_svg(env, recorded, step=single.step)
        except ValueError as error:
            lines += [f"{label}: not drawn ({markdown_text(error)}).", ""]
            continue
        record_report(run_dir, out, [name])
        nolink.write_atomic(run_dir, out / name, svg)
        lines += [label, "", f"![{label}]({name})", ""]
    return lines
