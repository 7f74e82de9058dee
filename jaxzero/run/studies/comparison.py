"""Arms compared: each arm's mean over its seeds with a 95% band, and the differences.

``jaxzero report DIR`` of a study (:mod:`jaxzero.run.studies.study`) and ``jaxzero report A B ...``
of separate runs or populations of one game both end here. An arm is a set of runs that
differ only in their seeds (a population's members that share their hyperparameters, a
study's arm, or a single run, an arm of one). For every metric the runs log, the
measurements that come every ``evaluation.every`` iterations included (``eval/raw_optimal``,
each opponent's score), one figure draws each arm's mean over its seeds against the
iteration, with the band mean ± t(0.975, n - 1) · s / √n. ``summary.md`` leads with the
study's answer: its question's metric (``eval/raw_optimal`` where the game has solved
positions, else the first evaluation metric), each seed's value, each arm's mean with its
95% interval, and Welch's difference of each pair of arms of at least two seeds with its
95% interval (the statistics of ``experiments/compare_search``). Then every other metric
the same way, as context: many intervals side by side, of which some exclude 0 by chance.

An interval never leaves its metric's range: a rate or a share stays within [0, 1] and a
loss, an error or a count at or above 0 (:func:`metric_range`; the t interval is clipped
there), and a metric every seed measures alike (a population's throughput, one number
for all its members) is said to be one value, not given an interval of width 0.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from pathlib import Path

import numpy as np

from jaxzero.measure.statistics import mean_interval, welch_difference
from jaxzero.run.folder import nolink
from jaxzero.run.folder.layout import POPULATION_FILE, REPORT_DIR, SUMMARY_FILE
from jaxzero.run.reports.figures import plt
from jaxzero.run.reports.markdown import code_span, file_name, markdown_text
from jaxzero.run.reports.population_report import band
from jaxzero.run.reports.rows import ReportError, read_metrics

# Not drawn: the row's clock and counters (every arm's grow alike).
SKIPPED = frozenset({"iteration", "elapsed", "positions_written", "wall_seconds"})


@dataclasses.dataclass(frozen=True)
class Arm:
    """Runs of one setting that differ in their seeds.

    Attributes:
        name: how the report names it.
        runs: each seed's run folder (with its ``metrics.jsonl``).
    """

    name: str
    runs: tuple[Path, ...]


Series = dict[str, dict[int, float]]  # metric -> {iteration: value} of one run


def write_comparison(out: Path, arms: list[Arm], title: str, lines: list[str]) -> Path:
    """The figures and ``summary.md`` comparing ``arms``, written into ``out``.

    Args:
        out: the report folder (made when missing); only its own names are written.
        arms: the arms, each of at least one run.
        title: the summary's heading.
        lines: markdown said before the tables (what was compared, the command).

    Returns:
        ``out``.

    Raises:
        ReportError: a run without readable rows, or arms that share no metric.
    """
    series = {arm.name: [_series(run) for run in arm.runs] for arm in arms}
    every = [set(s) for runs in series.values() for s in runs]
    metrics = sorted(set.intersection(*every)) if every else []
    if not metrics:
        raise ReportError(f"{', '.join(a.name for a in arms)} share no logged metric to compare")
    _claim(out)
    names = _file_names(metrics)
    for metric in metrics:
        _figure(out, metric, series, names[metric])
    question = headline(metrics)
    text = [f"# {markdown_text(title)}", "", *lines, ""]
    if question is not None:
        text += [*_answer(question, series), ""]
    text += ["## Every metric", "", *_last_table(metrics, series)]
    text += ["", *_differences(metrics, series, len(metrics)), ""]
    text += [f"![{markdown_text(metric)}]({names[metric]})" for metric in metrics]
    nolink.write_atomic(out.parent, out / SUMMARY_FILE, "\n".join(text) + "\n")
    return out


def _file_names(metrics: list[str]) -> dict[str, str]:
    """Each metric's figure file, told apart when two names spell alike as files."""
    names: dict[str, str] = {}
    for metric in metrics:
        name = file_name(metric.replace("/", "_"))
        while name + ".png" in names.values():
            name += "_"
        names[metric] = name + ".png"
    return names


MARK = ".jaxzero-comparison"  # in a folder this module wrote: its files may be replaced


def _claim(out: Path) -> None:
    """Make ``out`` ours to write: new, empty, or written by an earlier comparison (its
    mark); ReportError for any other folder, whose files are never replaced, and for a
    link at ``out`` or in it (the folder the user typed is ``out``'s parent: a study's,
    or where ``--out`` names it)."""
    found = nolink.links_below(out.parent, out)
    if found:
        raise ReportError(found)
    if out.is_dir() and any(out.iterdir()) and not (out / MARK).is_file():
        raise ReportError(
            f"{out} holds files jaxzero did not write: nothing was changed; name a new "
            "folder with --out"
        )
    mark = "written by jaxzero report; its files are replaced by the next\n"
    nolink.write_atomic(out.parent, out / MARK, mark)


def _series(run: Path) -> Series:
    """Every metric of ``run``'s rows: {iteration: value}, non-finite values left out."""
    found: Series = {}
    for row in read_metrics(run)[0]:
        for name, value in row.items():
            if name not in SKIPPED and isinstance(value, int | float):
                found.setdefault(name, {})[int(row["iteration"])] = float(value)
    return found


def _last(runs: list[Series], metric: str) -> list[float]:
    """Each run's last measurement of ``metric``."""
    return [s[metric][max(s[metric])] for s in runs]


# The metrics a study asks about first, in this order: the first one the arms log leads.
QUESTIONS = ("eval/raw_optimal", "eval/vs_one_ply", "eval/vs_random", "game_return")
_SHARES = ("buffer_fill", "updated", "finite", "model/off_rules", "eval/raw_optimal")
_AT_LEAST_ZERO = ("_loss", "_error", "entropy", "grad_norm", "game_length", "_wins", "games",
                  "kl_search_prior", "per_second", "positions", "policy_distance")  # fmt: skip


def headline(metrics: list[str]) -> str | None:
    """The study's question: the first of :data:`QUESTIONS` the arms log, else the first
    evaluation metric (``eval/...``), else None."""
    for name in QUESTIONS:
        if name in metrics:
            return name
    return next((m for m in metrics if m.startswith("eval/")), None)


def metric_range(metric: str) -> tuple[float, float]:
    """The values ``metric`` can take: rates and shares [0, 1], scores against an
    opponent [0, 1], losses, errors, entropies and counts [0, inf); anything else
    unbounded."""
    name = metric.rsplit("/", 1)[-1]
    if (
        metric in _SHARES
        or name.endswith("_rate")
        or (metric.startswith("eval/vs_") and not name.endswith(("_wins", "games")))
    ):
        return 0.0, 1.0
    if any(part in metric for part in _AT_LEAST_ZERO):
        return 0.0, math.inf
    return -math.inf, math.inf


def _interval(metric: str, values: list[float]) -> str:
    """``mean [low, high]`` over the seeds, within the metric's range; the value alone,
    said to be every seed's, when the seeds measured the same (a figure the config fixes,
    such as positions per iteration, or a tie)."""
    mean, low, high = mean_interval(values)
    if len(values) == 1:
        return f"{mean:.4g}"
    if max(values) == min(values):
        return f"{mean:.4g} (all {len(values)} seeds alike: no interval)"
    bottom, top = metric_range(metric)
    return f"{mean:.4g} [{max(low, bottom):.4g}, {min(high, top):.4g}]"


def _difference(metric: str, first: list[float], second: list[float]) -> str:
    """Welch's difference of two arms' values with its interval, within the range a
    difference of the metric can take."""
    if max(first) == min(first) and max(second) == min(second):
        return f"{np.mean(first) - np.mean(second):+.4g} (one value a side: no interval)"
    diff, low, high = welch_difference(first, second)
    bottom, top = metric_range(metric)
    span = top - bottom
    return f"{diff:+.4g} [{max(low, -span):+.4g}, {min(high, span):+.4g}]"


def _pairs(series: dict[str, list[Series]]) -> list[tuple[str, str]]:
    """The pairs of arms of two seeds or more each: those a difference has an interval for."""
    return [
        (a, b) for a, b in itertools.combinations(series, 2)
        if len(series[a]) > 1 and len(series[b]) > 1
    ]  # fmt: skip


def _answer(metric: str, series: dict[str, list[Series]]) -> list[str]:
    """The study's question answered first: each seed's last value, each arm's mean and
    interval, and each pair's difference in words."""
    name = markdown_text(metric)
    runs = [s for arm_runs in series.values() for s in arm_runs]
    measured = sorted({max(s[metric]) for s in runs})
    trained = max(max(values) for s in runs for values in s.values())
    at = ", ".join(map(str, measured))
    when = f"at iteration {at}" + ("" if measured == [trained] else f"; trained to {trained}")
    lines = [
        f"## The answer: {name}",
        "",
        f"Each arm's last measurement of {name} ({when}), seed by seed, and their mean "
        "[95% interval].",
        "",
        "| arm | seeds | mean [95% interval] |",
        "|---|---|---|",
    ]
    for arm, runs in series.items():
        values = _last(runs, metric)
        seeds = ", ".join(f"{v:.4g}" for v in values)
        lines.append(f"| {markdown_text(arm)} | {seeds} | {_interval(metric, values)} |")
    for a, b in _pairs(series):
        first, second = _last(series[a], metric), _last(series[b], metric)
        diff, low, high = welch_difference(first, second)
        verdict = (
            "the interval excludes 0: a difference the seeds' spread does not explain"
            if low > 0 or high < 0
            else "the interval holds 0: these seeds do not tell the arms apart"
        )
        lines += [
            "",
            f"{markdown_text(a)} − {markdown_text(b)}: {_difference(metric, first, second)} "
            f"(Welch's 95% interval); {verdict}.",
        ]
    return lines


def _last_table(metrics: list[str], series: dict[str, list[Series]]) -> list[str]:
    """A row a metric: each arm's last measurement, mean [95% interval] over its seeds."""
    heads = [f"{markdown_text(arm)} ({len(runs)} seeds)" for arm, runs in series.items()]
    lines = [
        "Each arm's last measurement: the mean over its seeds [95% interval of the mean,",
        "within the metric's range].",
        "",
        "| metric | " + " | ".join(heads) + " |",
        "|---|" + "---|" * len(series),
    ]
    for metric in metrics:
        cells = [_interval(metric, _last(runs, metric)) for runs in series.values()]
        lines.append(f"| {markdown_text(metric)} | " + " | ".join(cells) + " |")
    return lines


def _differences(metrics: list[str], series: dict[str, list[Series]], count: int) -> list[str]:
    """Welch's difference of the last measurement, for each pair of arms of 2+ seeds."""
    pairs = _pairs(series)
    if not pairs:
        return ["No pair of arms has two seeds each: no difference has an interval."]
    lines = [
        "Differences of the last measurement (first arm minus second), Welch's 95% interval.",
        f"These are {count} intervals side by side: at 95% each, about {count / 20:.1f} of them "
        "would exclude 0 by chance alone, so read them as context for the answer above, not "
        "as findings of their own.",
        "",
        "| metric | " + " | ".join(markdown_text(f"{a} − {b}") for a, b in pairs) + " |",
        "|---|" + "---|" * len(pairs),
    ]
    for metric in metrics:
        cells = [
            _difference(metric, _last(series[a], metric), _last(series[b], metric))
            for a, b in pairs
        ]
        lines.append(f"| {markdown_text(metric)} | " + " | ".join(cells) + " |")
    return lines


def _figure(out: Path, metric: str, series: dict[str, list[Series]], name: str) -> None:
    """``metric`` per arm, mean over its seeds with its band, at the iterations every
    seed of the arm measured, drawn into ``out/name``."""
    fig, ax = plt.subplots(figsize=(7, 4))
    for i, (arm, runs) in enumerate(series.items()):
        steps = sorted(set.intersection(*(set(s[metric]) for s in runs)))
        values = np.array([[s[metric][t] for t in steps] for s in runs])  # [n, T]
        mean, half = band(values)
        bottom, top = metric_range(metric)
        ax.plot(steps, mean, color=f"C{i}", marker="." if len(steps) < 30 else None,
                label=f"{arm} ({len(runs)} seeds)")  # fmt: skip
        low, high = np.maximum(mean - half, bottom), np.minimum(mean + half, top)
        ax.fill_between(steps, low, high, color=f"C{i}", alpha=0.2)
    shown = "".join(c if c.isprintable() else "?" for c in metric)  # a NUL draws no glyph
    ax.set(title=f"{shown}: mean over seeds, 95% band", xlabel="iteration", ylabel=shown)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    nolink.write_figure(out.parent, out / name, fig, dpi=110)
    plt.close(fig)


def arms_of(folder: Path, label: str) -> list[Arm]:
    """The arms a run folder holds: a single run is one arm of one seed; a population's
    members that share their hyperparameters are one arm each (diverged members left
    out: their rows stop where they did)."""
    from jaxzero.run.folder.layout import member_folder
    from jaxzero.run.life.members import read_diverged, read_population
    from jaxzero.run.reports.population_report import arms

    if not (folder / POPULATION_FILE).is_file():
        return [Arm(label, (folder,))]
    seeds, hyper = read_population(folder)
    diverged = read_diverged(folder)
    grouped = arms(hyper, len(seeds))
    found = []
    for group, members in grouped.items():
        runs = tuple(member_folder(folder, k) for k in members if k not in diverged)
        if runs:
            found.append(Arm(label if len(grouped) == 1 else f"{label}, {group}", runs))
    return found


def write_study_report(root: str | Path) -> Path:
    """``jaxzero report DIR`` of a study: its arms compared.

    Args:
        root: the study's folder (:func:`jaxzero.train_study`).

    Returns:
        ``root/report``, holding ``summary.md`` (each arm's last measurement of every
        metric, mean and 95% interval over its seeds; Welch's difference of each pair of
        arms) and a figure per metric.

    Raises:
        ReportError: not a readable study, or arms without rows to compare.
    """
    from jaxzero.run.studies.study import read_study

    root = Path(root)
    try:
        study = read_study(root)
    except ValueError as error:
        raise ReportError(str(error)) from None
    arms = [arm for name in study.arms for arm in arms_of(study.folder(root, name), name)]
    lines = [
        f"{len(study.arms)} arms of {markdown_text(study.config.game)}, {len(study.seeds)} "
        f"members each ({', '.join(map(code_span, study.arms))}), in "
        f"{code_span(root / 'arms' / 'NAME')}.",
        "",
        f"Command: {code_span(study.command)}" if study.command else "",
    ]
    return write_comparison(root / REPORT_DIR, arms, f"Study report: {root.name}", lines)


def write_runs_report(folders: list[Path], out: Path) -> Path:
    """``jaxzero report A B ... --out DIR``: runs and populations of one game compared."""
    from jaxzero.run.life.driver import load_run_config

    games = {}
    for folder in folders:
        try:
            games[folder] = load_run_config(folder).game
        except (OSError, ValueError) as error:
            raise ReportError(f"{folder} is not a run to compare ({error})") from None
    if len(set(games.values())) > 1:
        listed = ", ".join(f"{folder} ({game})" for folder, game in games.items())
        raise ReportError(f"the runs train different games: {listed}; compare one game's")
    arms = [arm for folder in folders for arm in arms_of(folder, folder.name)]
    game = markdown_text(next(iter(games.values())))
    lines = [f"{len(arms)} arms of {game}: " + ", ".join(map(markdown_text, folders))]
    return write_comparison(out, arms, "Runs compared", lines)
