"""``jaxzero report RUN`` of a population: each arm's mean across its seeds, with a 95% band.

An arm is the members that share their hyperparameters (``population.json``): they differ
only in their seeds, so the spread across them is the run-to-run noise an effect must
clear. Each figure plots one metric against the iteration: per arm the mean over its
seeds and a band of mean ± t(0.975, n - 1) · s / √n, Student's t for n seeds (n = 1: the
single run, no band). ``summary.md`` tabulates each arm's last logged values the same way.
Each member stays an ordinary run: ``jaxzero report RUN/members/K`` draws its own figures.
A member that diverged (population.json) is listed as such and left out of its arm: its
rows stop where it did.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from jaxzero.measure.statistics import t975
from jaxzero.run.folder import manifest, nolink
from jaxzero.run.folder.layout import REPORT_DIR, SUMMARY_FILE, member_folder
from jaxzero.run.life.members import diverged_description, read_diverged, read_population
from jaxzero.run.reports.figures import plt
from jaxzero.run.reports.markdown import markdown_text
from jaxzero.run.reports.rows import ReportError, read_metrics, record_report

# The metrics drawn, when logged: what tells arms apart in training.
METRICS = (
    "policy_loss",
    "value_loss",
    "value_error",
    "kl_search_prior",
    "game_length",
    "draw_rate",
    "game_return",
)


def band(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mean, half-width of the 95% interval of the mean) over axis 0 of ``values``
    [n, ...]; the half-width is 0 for n = 1."""
    n = values.shape[0]
    mean = values.mean(axis=0)
    if n < 2:
        return mean, np.zeros_like(mean)
    return mean, t975(n - 1) * values.std(axis=0, ddof=1) / np.sqrt(n)


def arms(hyper: dict[str, list[float]], size: int) -> dict[str, list[int]]:
    """Members grouped by their hyperparameters: ``{"optim.learning_rate=0.001": [0, 1]}``."""
    grouped: dict[str, list[int]] = {}
    for k in range(size):
        name = ", ".join(f"{key}={values[k]:g}" for key, values in hyper.items()) or "all"
        grouped.setdefault(name, []).append(k)
    return grouped


def write_population_report(run_dir: Path) -> Path:
    """Figures and summary.md of a population into ``RUN/report``; returns that folder."""
    seeds, hyper = read_population(run_dir)
    diverged = read_diverged(run_dir)
    training = [k for k in range(len(seeds)) if k not in diverged]
    if not training:
        raise ReportError(
            f"every member of {run_dir} diverged ({_diverged_list(run_dir, diverged)}): "
            "nothing trained to report; start a new run with a lower optim.learning_rate"
        )
    rows = {k: read_metrics(member_folder(run_dir, k))[0] for k in training}
    logged = min(len(r) for r in rows.values())  # they log together; a crash may cut one short
    if logged == 0:
        raise ReportError(f"{run_dir}'s members hold no rows: train for a logging interval")
    iterations = np.array([row["iteration"] for row in rows[training[0]][:logged]])
    out = run_dir / REPORT_DIR
    manifest.make_folders(run_dir, out)
    grouped = arms(hyper, len(seeds))
    names = [m for m in METRICS if all(m in row for r in rows.values() for row in r[:logged])]
    lines = [
        f"# Population report: {markdown_text(run_dir.name)}",
        "",
        f"{len(seeds)} members in {len(grouped)} arms; last logged iteration "
        f"{int(iterations[-1])}. Each value: the arm's mean over its seeds, ± the half-width "
        "of its 95% interval (Student's t).",
        "",
    ]
    if diverged:
        shown = markdown_text(_diverged_list(run_dir, diverged))
        lines += [f"Diverged (left out of their arms): {shown}.", ""]
    lines += [
        "| arm | seeds | " + " | ".join(map(markdown_text, names)) + " |",
        "|---|---|" + "---|" * len(names),
    ]
    series = {
        name: np.array(
            [
                [np.nan if row[name] is None else row[name] for row in rows[k][:logged]]
                if k in rows
                else [np.nan] * logged
                for k in range(len(seeds))
            ]
        )  # [P, L]; a diverged member's NaN, never read
        for name in names
    }
    grouped = {arm: [k for k in members if k in rows] for arm, members in grouped.items()}
    lines += [*_table(grouped, series), ""]
    lines += _figures(run_dir, out, grouped, series, iterations)
    record_report(run_dir, out, [SUMMARY_FILE])
    nolink.write_atomic(run_dir, out / SUMMARY_FILE, "\n".join(lines) + "\n")
    return out


def _table(grouped: dict[str, list[int]], series: dict[str, np.ndarray]) -> list[str]:
    """Each arm's row: its last logged value of each metric, mean ± the t half-width."""
    lines = []
    for arm, members in grouped.items():
        if not members:
            shown = markdown_text(arm)
            lines.append(f"| {shown} | 0 (diverged) | " + " | ".join("—" for _ in series) + " |")
            continue
        cells = []
        for values in series.values():
            mean, half = band(values[members][:, -1:])
            cells.append(f"{mean[0]:.3g} ± {half[0]:.2g}")
        lines.append(f"| {markdown_text(arm)} | {len(members)} | " + " | ".join(cells) + " |")
    return lines


def _figures(
    run_dir: Path,
    out: Path,
    grouped: dict[str, list[int]],
    series: dict[str, np.ndarray],
    iterations: np.ndarray,
) -> list[str]:
    """One figure a metric (each arm's mean over its seeds and 95% band) written into
    ``out``; the summary's lines that show them."""
    lines = []
    for name, values in series.items():
        fig, ax = plt.subplots(figsize=(7, 4))
        for i, (arm, members) in enumerate(grouped.items()):
            if not members:
                continue
            mean, half = band(values[members])
            ax.plot(iterations, mean, color=f"C{i}", label=f"{arm} ({len(members)} seeds)")
            ax.fill_between(iterations, mean - half, mean + half, color=f"C{i}", alpha=0.2)
        ax.set(title=f"{name}: mean over seeds, 95% band", xlabel="iteration", ylabel=name)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        record_report(run_dir, out, [f"{name}.png"])  # name: one of METRICS
        nolink.write_figure(run_dir, out / f"{name}.png", fig, dpi=110)
        plt.close(fig)
        lines.append(f"![{name}]({name}.png)")
    return lines


def _diverged_list(run_dir: Path, diverged: dict[int, dict]) -> str:
    """ "member 1 of RUN diverged at iteration 3 (optim.learning_rate=1e+30); ..."."""
    return "; ".join(diverged_description(run_dir, k, r) for k, r in sorted(diverged.items()))
