"""PUCT vs Gumbel search, side by side, under identical conditions.

1. **Policy improvement at a fixed network.** For a trained checkpoint of each game, the
   noise-free greedy search of each kind with n simulations plays the raw network policy
   (argmax of the legal logits) and the other kind at the same n, from paired random
   openings with the colours swapped (:func:`jaxzero.measure.match.play_match`), scored
   (wins + draws / 2) / games with a 95% Wilson interval. Where the game has a solved
   position set (tic-tac-toe, Connect Four) the solver-optimal move share is measured at
   each n too, and Gumbel's minus PUCT's share on the same positions, paired.
2. **Training with each search.** The same preset is trained with PUCT and with Gumbel at
   a low and a medium self-play budget, for the same wall time and several seeds; the
   raw network's optimal share (``eval/raw_optimal``, every ``evaluation.every``
   iterations) is recorded against training time and positions generated. It is a study
   (:mod:`jaxzero.run.studies.study`), trained as ``jaxzero train GAME --seeds S --grid
   search.kind=puct,gumbel search.num_simulations=N1,N2 --jobs J`` trains it: each arm
   (search kind, simulations) one population of all its seeds (one compiled program),
   ``--jobs J`` arms at a time, each in a process on its own share of the cores, with
   ``train_seconds`` per seed of wall time (the compute of that many single runs). Its
   report (:mod:`jaxzero.run.studies.comparison`) compares the arms with the statistics of
   ``results.md``.

Output (``--out``): ``policy_improvement.csv``, ``optimal_share.csv``,
``optimal_difference.csv``, ``training.csv``, PNGs and ``results.md`` with a verdict per
game (experiments.compare_search_report), and the training study in ``training_study/``
(its arms in ``arms/KIND-N``, its report in ``report/``).

    python -m experiments.compare_search --jobs 2 --out docs/compare_search \\
        --checkpoint tic_tac_toe=RUN --checkpoint connect_four=RUN --checkpoint go_6x6=RUN
    python -m experiments.compare_search --quick --jobs 2 --out /tmp/cs_quick  # reduced
    python -m experiments.compare_search --smoke --out /tmp/cs  # CI, toy size
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax

from experiments import compare_search_report as report
from experiments.compare_search_report import KINDS
from jaxzero.core.config import apply_overrides
from jaxzero.core.games import game_kit
from jaxzero.core.presets import get_preset
from jaxzero.measure.games import solved_games
from jaxzero.measure.match import play_match
from jaxzero.measure.players import RawPolicyPlayer
from jaxzero.measure.positions import SolvedPositions
from jaxzero.measure.statistics import wilson_interval
from jaxzero.run.agents.agent import Agent, load_agent, parse_settings
from jaxzero.run.folder.layout import member_folder
from jaxzero.run.life.compile_cache import enable_compile_cache
from jaxzero.run.life.driver import train
from jaxzero.run.life.ways import use_host_cores
from jaxzero.run.reports.rows import read_metrics
from jaxzero.run.studies.comparison import write_study_report
from jaxzero.run.studies.study import Study, cpu_shares, train_study


@dataclasses.dataclass(frozen=True)
class Tier:
    """How big a study to run (the defaults: the full study)."""

    simulations: tuple[int, ...] = (2, 4, 8, 16, 32, 64, 128)  # n of the fixed-network study
    match_games: int = 200  # games per match (even)
    checkpoint_seconds: float = 0.0  # driver training of each game's own checkpoint (0: given)
    checkpoint_iterations: int | None = None  # or a fixed iteration budget
    checkpoint_overrides: dict[str, dict] = dataclasses.field(default_factory=dict)  # per game
    games: tuple[str, ...] = ("tic_tac_toe", "connect_four", "go_6x6")  # fixed-network study
    train_game: str = "connect_four"  # preset of the training study
    train_simulations: tuple[int, ...] = (8, 32)
    train_seeds: tuple[int, ...] = (0, 1)
    train_seconds: float | None = 1800.0  # wall time of each seed (its arm's over its seeds)
    train_iterations: int | None = None  # or each arm's iterations
    train_every: int = 10  # iterations between the measurements (evaluation.every)
    train_overrides: dict[str, Any] = dataclasses.field(default_factory=dict)


_SMALL = {  # the quick tier's Connect Four and Go checkpoints
    "network.num_blocks": 2, "network.channels": 32, "selfplay.batch_size": 64,
    "replay.min_size": 1024, "replay.capacity": 50_000, "optim.warmup_steps": 20,
    "search.num_simulations": 16,
}  # fmt: skip
_TINY = {  # the test suite's tiny tic-tac-toe (tests/conftest.py), whose programs it shares
    "selfplay.batch_size": 8, "selfplay.moves_per_iteration": 3, "replay.capacity": 256,
    "replay.min_size": 16, "optim.minibatch_size": 16, "optim.updates_per_iteration": 2,
    "search.num_simulations": 4, "evaluation.simulations": 4, "network.hidden_size": 16,
    "network.num_blocks": 1, "network.channels": 8, "network.value_hidden": 16,
}  # fmt: skip
_NO_CHECKS = {"evaluation.every": 0, "train.log_every": 1_000_000}  # no checks, no metrics rows
TIERS: dict[str, Tier] = {
    "full": Tier(),
    "quick": Tier(
        simulations=(2, 8, 32), match_games=64, checkpoint_seconds=45.0,
        checkpoint_overrides={"connect_four": _SMALL, "go_6x6": _SMALL},
        train_game="tic_tac_toe", train_seconds=20.0, train_every=20,
    ),
    "smoke": Tier(
        simulations=(4,), match_games=2, checkpoint_iterations=0,
        checkpoint_overrides={"tic_tac_toe": _TINY}, games=("tic_tac_toe",),
        train_game="tic_tac_toe", train_simulations=(4,), train_seconds=None,
        train_iterations=2, train_every=1, train_overrides=_TINY,
    ),
}  # fmt: skip


def policy_improvement(agent: Agent, tier: Tier, key, log=print, matches_too=True) -> dict:
    """The three tables: search(kind, n) vs raw and vs the other kind (if ``matches_too``);
    solver-optimal shares where the game has a solved set, and Gumbel's minus PUCT's."""
    game, params, plies = agent.env.id, agent.params, game_kit(agent.env.id).opening_plies
    raw = RawPolicyPlayer(agent.apply_fn)  # the network as the agent's search sees it
    probe = SolvedPositions(agent.env) if game in solved_games() else None
    play = functools.partial(play_match, opening_plies=plies, params_a=params, params_b=params)
    matches, shares, differences = [], [], []
    if probe is not None:
        shares.append(report.optimal_row(game, "raw", 0, probe.quality(raw, params)))
        log(f"  {game} raw policy: optimal {shares[-1]['optimal']:.3f}")
    for n in tier.simulations:
        players = {kind: agent.search_player(n, kind) for kind in KINDS}
        if probe is not None:
            quality = {}
            for kind in KINDS:
                key, k = jax.random.split(key)
                quality[kind] = probe.quality(players[kind], params, k)
                shares.append(report.optimal_row(game, kind, n, quality[kind]))
                log(f"  {game} {kind}({n}): {quality[kind]}")
            differences.append(report.difference_row(game, n, quality["gumbel"], quality["puct"]))
        for player, opponent in report.MATCHES if matches_too else ():
            key, k = jax.random.split(key)
            b, n_b = (raw, 0) if opponent == "raw" else (players[opponent], n)
            result = play(agent.env, players[player], b, tier.match_games, k)
            matches.append(report.match_row(game, player, n, opponent, n_b, result))
            log(f"  {game} {player}({n}) vs {opponent}{f'({n_b})' if n_b else ''}: {result}")
    return {"matches": matches, "shares": shares, "differences": differences}


def make_checkpoint(game: str, tier: Tier, root: Path, log=print) -> Path:
    """Train ``game``'s own small checkpoint with the driver (quick/smoke tiers)."""
    config = apply_overrides(get_preset(game), tier.checkpoint_overrides.get(game, {}) | _NO_CHECKS)
    budget = dict(seconds=tier.checkpoint_seconds or None, iterations=tier.checkpoint_iterations)
    result = train(root / f"checkpoint_{game}", config, force=True, **budget)
    log(f"  trained {game}: {result.iterations} iterations in {result.seconds:.0f} s")
    return result.run_dir


def training_arms(tier: Tier) -> list[tuple[str, int]]:
    """(search kind, simulations) of every training arm of ``tier``, in run order."""
    return [(k, n) for n in tier.train_simulations for k in KINDS]


def training_study(tier: Tier, jobs: int, out: Path, log=print, command: str = "") -> list:
    """Every arm of ``tier``, each a population of the tier's seeds, as the study
    ``out/training_study`` (its arms ``arms/KIND-N``; started over when it is there,
    each arm deleting only what it wrote), ``jobs`` arms at a time, and its report;
    the measurements as ``training.csv``'s rows, arm by arm, seed by seed."""
    # each measurement in a full metrics row (positions_written with it)
    every = {"evaluation.every": tier.train_every, "train.log_every": tier.train_every}
    config = apply_overrides(get_preset(tier.train_game), tier.train_overrides | every)
    arms = {f"{kind}-{n}": {"search.kind": kind, "search.num_simulations": n}
            for kind, n in training_arms(tier)}  # fmt: skip
    study = Study(config, arms, list(tier.train_seeds), {}, command)
    root = out / "training_study"
    turns = -(-len(arms) // jobs) if jobs > 1 else len(arms)  # the arms' turns on the CPUs
    seconds = tier.train_seconds and tier.train_seconds * len(tier.train_seeds) * turns
    results = train_study(root, study, seconds=seconds, iterations=tier.train_iterations,
                          force=True, jobs=jobs, log=log)  # fmt: skip
    # an arm's process's exit status (jobs > 1), or its run's result (in this process)
    if failed := [f"{name} (exit {code})" for name, code in results.items() if code != 0
                  and isinstance(code, int)]:  # fmt: skip
        raise RuntimeError(f"training arms that did not finish: {', '.join(failed)}")
    log(f"  training study report: {write_study_report(root) / 'summary.md'}")
    return training_rows(root, study)


def training_rows(root: Path, study: Study) -> list[dict[str, Any]]:
    """``training.csv``'s rows from a study's arms: each seed's measurements of the raw
    policy's optimal share (with its Wilson interval over the position set), its clock
    (``wall_seconds``: the arm's wall time over its seeds, the compute of one run) and
    the positions it wrote."""
    rows = []
    for name in study.arms:
        config = study.arm_config(name)
        load = game_kit(config.game).positions  # None: a game without solved positions
        total = len(load().lengths) if load is not None else 0
        for k, seed in enumerate(study.seeds):
            for row in read_metrics(member_folder(study.folder(root, name), k))[0]:
                if not isinstance(row.get("eval/raw_optimal"), int | float):
                    continue  # not a measuring iteration (or a value not written)
                share = float(row["eval/raw_optimal"])
                low, high = wilson_interval(share * total, total)
                rows.append({
                    "game": config.game, "search": config.search.kind,
                    "simulations": config.search.num_simulations, "seed": seed,
                    "iteration": int(row["iteration"]),
                    "wall_seconds": float(row["elapsed"]) / len(study.seeds),
                    "positions": int(row.get("positions_written", 0)),
                    "optimal": share, "optimal_low": low, "optimal_high": high,
                })  # fmt: skip
    return rows


def run(
    out: str | Path, tier_name: str = "full", checkpoints: dict[str, str] | None = None, *,
    seed: int = 0, skip_training: bool = False, skip_fixed: bool = False,
    skip_matches: bool = False, jobs: int = 1, changes: dict[str, Any] | None = None,
    search: dict[str, Any] | None = None, command: str = "", log=print,
) -> dict[str, Any]:  # fmt: skip
    """Run the study of ``tier_name`` and write CSVs, PNGs and ``results.md`` into ``out``.

    ``checkpoints``: game -> run directory (else quick/smoke train one, full skips the
    game); ``search``: ``search.*`` / ``evaluation.*`` settings of the loaded agents;
    ``changes``: tier fields to replace (e.g. ``{"train_seconds": 1500}``)."""
    tier = dataclasses.replace(TIERS[tier_name], **(changes or {}))
    cpu_shares(jobs)  # a bad count fails now, not after the fixed-network study
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    checkpoints, key = dict(checkpoints or {}), jax.random.key(seed)
    tables: dict[str, list] = {"matches": [], "shares": [], "differences": []}
    log(f"[compare_search] tier {tier_name}, out {out}")
    for game in () if skip_fixed else tier.games:
        if game not in checkpoints:
            if tier.checkpoint_seconds <= 0 and tier.checkpoint_iterations is None:
                log(f"  {game}: no checkpoint given, skipped")
                continue
            checkpoints[game] = str(make_checkpoint(game, tier, out / "runs", log))
        agent = load_agent(checkpoints[game], settings=search)
        log(f"  {game}: checkpoint {checkpoints[game]} (iteration {agent.iteration})")
        key, k = jax.random.split(key)
        found = policy_improvement(agent, tier, k, log, matches_too=not skip_matches)
        tables = {name: rows + found[name] for name, rows in tables.items()}
        report.write_tables(out, tables)
    training = () if skip_training else training_study(tier, jobs, out, log, command)
    tables["training"] = list(training)
    report.write_tables(out, tables)
    text, pngs = report.write_report(out, tables, tier_name, command)
    log(text)
    return tables | {"pngs": pngs, "checkpoints": checkpoints}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    tier = parser.add_mutually_exclusive_group()
    tier.add_argument("--quick", action="store_true", help="reduced study (~10 min on 2 CPUs)")
    tier.add_argument("--smoke", action="store_true", help="every code path at toy size (CI)")
    add, flag = parser.add_argument, functools.partial(parser.add_argument, action="store_true")
    # fmt: off
    add("--out", default="docs/compare_search", help="output directory")
    add("--checkpoint", action="append", default=[], metavar="GAME=RUN_DIR",
        help="a trained run for GAME (repeatable); otherwise quick/smoke train their own")
    add("--seed", type=int, default=0)
    flag("--skip-training", help="only the fixed-net study")
    flag("--skip-fixed", help="only the training study")
    flag("--skip-matches", help="fixed-network study: only the solver-optimal shares (no matches)")
    add("--jobs", type=int, default=1,
        help="training arms at a time, each on its own share of the CPUs (default 1)")
    add("--train-seconds", type=float,
        help="wall time of each seed's training (default: the tier's; full 1800)")
    add("--train-seeds", type=int, metavar="S",
        help="seeds 0..S-1 of each training arm, one population (default: the tier's; 2)")
    add("--train-simulations", type=int, nargs="+", metavar="N",
        help="the training arms' budgets, each with PUCT and Gumbel (default: the tier's; 8 32)")
    add("--simulations", type=int, nargs="+", metavar="N",
        help="the fixed-network study's budgets (default: the tier's; full 2 4 ... 128)")
    add("--match-games", type=int,
        help="games of each fixed-network match, even (default: the tier's; full 200)")
    add("--set", action="append", default=[], metavar="KEY=VALUE",
        help="fixed-network study: change a search.* or evaluation.* setting of the loaded "
        "agents (e.g. search.max_num_considered_actions=4)")
    flag("--render", help="only redraw plots and results.md from --out's CSVs")
    # fmt: on
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    parser = _parser()
    args = parser.parse_args(argv)
    if bad := [item for item in args.checkpoint if "=" not in item]:
        parser.error(f"--checkpoint expects GAME=RUN_DIR, got {bad[0]!r}")
    checkpoints = dict(item.split("=", 1) for item in args.checkpoint)
    name = "quick" if args.quick else "smoke" if args.smoke else "full"
    words = sys.argv[1:] if argv is None else argv
    # a redraw names the command that produced the CSVs, not itself
    command = " ".join(
        ["python -m experiments.compare_search", *(w for w in words if w != "--render")]
    )
    if args.render:
        print(report.render(args.out, name, command))
        return
    log = functools.partial(print, flush=True)
    enable_compile_cache()  # a rerun (or the other arms' processes) reads its programs back
    use_host_cores()  # on a CPU, a population's members split over its cores
    changes = _tier_changes(parser, args)
    try:
        search = parse_settings(args.set)
        cpu_shares(args.jobs)
    except ValueError as error:
        parser.error(str(error))
    run(args.out, name, checkpoints, seed=args.seed, skip_training=args.skip_training,
        skip_fixed=args.skip_fixed, skip_matches=args.skip_matches, jobs=args.jobs,
        changes=changes, search=search, command=command, log=log)  # fmt: skip


def _tier_changes(parser: argparse.ArgumentParser, args: argparse.Namespace) -> dict[str, Any]:
    """The tier fields the command line replaces, checked."""
    seconds, sims, games = args.train_seconds, args.simulations, args.match_games
    seeds, train_sims = args.train_seeds, args.train_simulations
    if seconds is not None and seconds <= 0:
        parser.error(f"--train-seconds must be positive, got {seconds}")
    if seeds is not None and seeds < 1:
        parser.error(f"--train-seeds must be at least 1, got {seeds}")
    for flag, budgets in (("--simulations", sims), ("--train-simulations", train_sims)):
        if budgets is not None and min(budgets) < 1:
            parser.error(f"{flag} must be at least 1, got {budgets}")
    if games is not None and (games < 2 or games % 2):
        parser.error("--match-games must be even and at least 2 (each opening is played with "
                     f"both colours), got {games}")  # fmt: skip
    changes = dict(
        train_seconds=seconds, simulations=sims and tuple(sims), match_games=games,
        train_seeds=seeds and tuple(range(seeds)),
        train_simulations=train_sims and tuple(train_sims),
    )  # fmt: skip
    return {name: value for name, value in changes.items() if value is not None}


if __name__ == "__main__":
    main()
