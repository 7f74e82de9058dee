"""PUCT vs Gumbel search, side by side, under identical conditions.

Two questions, one command:

1. **Policy improvement at a fixed network.** For a trained checkpoint of each game, the
   noise-free greedy search of each kind with n simulations plays the raw network policy
   (argmax of the legal logits) and the other kind at the same n; every match is played
   from random openings, each opening twice with the colours swapped
   (:func:`jaxzero.measure.evaluate.play_match`), and scored (wins + draws / 2) / games with a 95%
   Wilson interval. For Connect Four (and tic-tac-toe) the share of solver-optimal moves
   on the solved position set is measured at each n as well, and Gumbel's minus PUCT's
   share on the same positions with a paired interval.
2. **Training with each search.** The same preset is trained with PUCT and with Gumbel
   at a low and a medium self-play budget, for the same wall time (compilation excluded)
   and several seeds; the raw network's solver-optimal move share is recorded along the
   way against training wall time and positions generated. ``--jobs N`` runs N at a
   time, each process pinned to its own CPUs.

Output (``--out``): ``policy_improvement.csv``, ``optimal_share.csv``,
``optimal_difference.csv``, ``training.csv``, PNG plots, ``results.md`` with the tables
and a per-game verdict, and each training run's final network in ``training_runs/``.

    python -m experiments.compare_search --jobs 2 --out docs/compare_search \\
        --checkpoint tic_tac_toe=RUN --checkpoint connect_four=RUN --checkpoint go_6x6=RUN
    python -m experiments.compare_search --quick --jobs 2 --out /tmp/cs_quick  # reduced
    python -m experiments.compare_search --smoke --out /tmp/cs  # CI, toy size
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import functools
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from envs.core import Env, State
from jaxzero.core import search as search_lib
from jaxzero.core.config import Config, apply_overrides, config_to_dict, get_preset
from jaxzero.core.loop import make_trainer
from jaxzero.measure.evaluate import (
    optimal_move_share,
    paired_difference,
    play_match,
    wilson_interval,
)
from jaxzero.measure.opponents import Policy
from jaxzero.run.agent import Agent, load_agent, parse_settings
from jaxzero.run.checkpoint import Checkpointer
from jaxzero.run.driver import CONFIG_FILE, train

Array = jax.Array
KINDS = ("puct", "gumbel")
SOLVED_GAMES = ("tic_tac_toe", "connect_four")  # games with a solved position set
OPENING_PLIES = {"tic_tac_toe": 1, "connect_four": 2, "go_6x6": 4, "go_9x9": 6}

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


@dataclasses.dataclass(frozen=True)
class Tier:
    """How big a study to run."""

    simulations: tuple[int, ...]  # n for the fixed-network study
    match_games: int  # games per match (even)
    checkpoint_seconds: float  # driver training of each game's own checkpoint (0: given)
    checkpoint_iterations: int | None  # or a fixed iteration budget
    checkpoint_overrides: dict[str, dict[str, Any]]  # per game, on top of the preset
    games: tuple[str, ...]  # games of the fixed-network study
    train_game: str  # preset of the training study
    train_simulations: tuple[int, ...]
    train_seeds: tuple[int, ...]
    train_seconds: float  # wall time of each training run (compilation excluded)
    train_evals: int  # strength measurements per training run (plus one at the start)
    train_overrides: dict[str, Any]


_SMALL_C4 = {
    "network.num_blocks": 2,
    "network.channels": 32,
    "selfplay.batch_size": 64,
    "replay.min_size": 1024,
    "replay.capacity": 50_000,
    "optim.warmup_steps": 20,
    "search.num_simulations": 16,
}
_SMALL_GO = {
    "network.num_blocks": 2,
    "network.channels": 32,
    "selfplay.batch_size": 64,
    "replay.min_size": 1024,
    "replay.capacity": 50_000,
    "optim.warmup_steps": 20,
    "search.num_simulations": 16,
}
_TINY = {
    "selfplay.batch_size": 8,
    "selfplay.moves_per_iteration": 3,
    "replay.capacity": 256,
    "replay.min_size": 16,
    "optim.minibatch_size": 16,
    "optim.updates_per_iteration": 1,
    "network.hidden_size": 16,
    "network.num_blocks": 1,
    "network.channels": 8,
}
_NO_CHECKS = {"arena.eval_every": 0, "train.log_every": 1_000_000}

TIERS: dict[str, Tier] = {
    "full": Tier(
        simulations=(2, 4, 8, 16, 32, 64, 128),
        match_games=200,
        checkpoint_seconds=0.0,
        checkpoint_iterations=None,
        checkpoint_overrides={},
        games=("tic_tac_toe", "connect_four", "go_6x6"),
        train_game="connect_four",
        train_simulations=(8, 32),
        train_seeds=(0, 1),
        train_seconds=1800.0,
        train_evals=10,
        train_overrides={},
    ),
    "quick": Tier(
        simulations=(2, 8, 32),
        match_games=64,
        checkpoint_seconds=45.0,
        checkpoint_iterations=None,
        checkpoint_overrides={
            "tic_tac_toe": {},
            "connect_four": _SMALL_C4,
            "go_6x6": _SMALL_GO,
        },
        games=("tic_tac_toe", "connect_four", "go_6x6"),
        train_game="tic_tac_toe",
        train_simulations=(8, 32),
        train_seeds=(0, 1),
        train_seconds=20.0,
        train_evals=3,
        train_overrides={},
    ),
    "smoke": Tier(
        simulations=(2,),
        match_games=4,
        checkpoint_seconds=0.0,
        checkpoint_iterations=0,
        checkpoint_overrides={"tic_tac_toe": _TINY},
        games=("tic_tac_toe",),
        train_game="tic_tac_toe",
        train_simulations=(2,),
        train_seeds=(0, 1),
        train_seconds=1.0,
        train_evals=1,
        train_overrides=_TINY,
    ),
}


# ----------------------------------------------------------------------------- policies


def raw_policy(agent: Agent) -> Policy:
    """The network alone: argmax of the legal logits (first of ties)."""

    def policy(states: State, key: Array) -> Array:
        del key
        logits, _ = agent.apply_fn(agent.params, states.observation)
        masked = search_lib.mask_logits(logits, states.legal_action_mask)
        return jnp.argmax(masked, axis=-1).astype(jnp.int32)

    return policy


def search_policy(agent: Agent, kind: str, num_simulations: int) -> Policy:
    """Greedy noise-free search of ``kind`` with ``num_simulations`` (Agent.act's search)."""
    config = dataclasses.replace(agent.config.search, kind=kind)

    def policy(states: State, key: Array) -> Array:
        return search_lib.search_actions(
            agent.params, states, key, config, agent.env, agent.apply_fn, num_simulations
        )

    return policy


# ------------------------------------------------------------------- fixed-network study


def _match_row(game, player, n, opponent, n_opp, result) -> dict[str, Any]:
    lo, hi = result.interval()
    return dict(
        game=game, player=player, simulations=n, opponent=opponent,
        opponent_simulations=n_opp, games=result.games, wins=result.wins,
        draws=result.draws, losses=result.losses, score=result.score,
        score_low=lo, score_high=hi,
    )  # fmt: skip


def _optimal_row(game: str, player: str, n: int, quality) -> dict[str, Any]:
    lo, hi = wilson_interval(quality.optimal * quality.positions, quality.positions)
    return dict(
        game=game, player=player, simulations=n, positions=quality.positions,
        optimal=quality.optimal, optimal_low=lo, optimal_high=hi,
        critical=quality.critical, kept=quality.kept,
    )  # fmt: skip


def _difference_row(game: str, n: int, gumbel, puct) -> dict[str, Any]:
    g, p = gumbel.optimal_moves, puct.optimal_moves
    difference, lo, hi = paired_difference(g, p)
    return dict(
        game=game, simulations=n, positions=len(g), gumbel_only=int((g & ~p).sum()),
        puct_only=int((p & ~g).sum()), difference=difference, difference_low=lo,
        difference_high=hi,
    )  # fmt: skip


def policy_improvement(
    agent: Agent, tier: Tier, key: Array, log=print, matches_too: bool = True
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """Matches of search(kind, n) vs the raw policy and vs the other kind, for each n
    (unless not ``matches_too``); solver-optimal shares where the game has a solved set,
    and Gumbel's minus PUCT's share on the same positions. Returns (match rows, share
    rows, difference rows)."""
    game = agent.env.id
    plies = OPENING_PLIES.get(game, 2)
    raw = raw_policy(agent)
    matches, shares, differences = [], [], []
    solved = game in SOLVED_GAMES
    if solved:
        shares.append(_optimal_row(game, "raw", 0, optimal_move_share(raw, agent.env)))
        log(f"  {game} raw policy: optimal {shares[-1]['optimal']:.3f}")
    for n in tier.simulations:
        players = {kind: search_policy(agent, kind, n) for kind in KINDS}
        if solved:
            quality = {}
            for kind in KINDS:
                key, k = jax.random.split(key)
                quality[kind] = optimal_move_share(players[kind], agent.env, key=k)
                shares.append(_optimal_row(game, kind, n, quality[kind]))
                log(f"  {game} {kind}({n}): {quality[kind]}")
            differences.append(_difference_row(game, n, quality["gumbel"], quality["puct"]))
        if not matches_too:
            continue
        for kind in KINDS:
            key, k = jax.random.split(key)
            result = play_match(
                agent.env, players[kind], raw, tier.match_games, k, opening_plies=plies
            )
            matches.append(_match_row(game, kind, n, "raw", 0, result))
            log(f"  {game} {kind}({n}) vs raw: {result}")
        key, k = jax.random.split(key)
        result = play_match(
            agent.env, players["gumbel"], players["puct"], tier.match_games, k, opening_plies=plies
        )
        matches.append(_match_row(game, "gumbel", n, "puct", n, result))
        log(f"  {game} gumbel({n}) vs puct({n}): {result}")
    return matches, shares, differences


def make_checkpoint(game: str, tier: Tier, root: Path, log=print) -> Path:
    """Train ``game``'s own small checkpoint with the driver (quick/smoke tiers)."""
    config = apply_overrides(get_preset(game), tier.checkpoint_overrides.get(game, {}) | _NO_CHECKS)
    run_dir = root / f"checkpoint_{game}"
    start = time.monotonic()
    result = train(
        run_dir,
        config,
        seconds=tier.checkpoint_seconds or None,
        iterations=tier.checkpoint_iterations,
        force=True,
    )
    log(f"  trained {game}: {result.iterations} iterations in {time.monotonic() - start:.0f} s")
    return run_dir


# ------------------------------------------------------------------------ training study


@functools.lru_cache(maxsize=16)
def _solved_states(env: Env):
    from jaxzero.measure.evaluate import position_set, states_from_moves

    data = position_set(env.id)
    return states_from_moves(env, data.moves, data.lengths), data


def raw_optimal_share(env: Env, apply_fn, params) -> float:
    """Share of the solved positions where the raw network's argmax move keeps the best
    game-theoretic result (the same measure as :func:`optimal_move_share`, in one call)."""
    states, data = _solved_states(env)
    action = np.asarray(_raw_actions(apply_fn, params, states))
    results = data.results
    rows = np.arange(len(action))
    return float((data.legal[rows, action] & (results[rows, action] == results.max(1))).mean())


@functools.partial(jax.jit, static_argnames=("apply_fn",))
def _raw_actions(apply_fn, params, states: State) -> Array:
    logits, _ = apply_fn(params, states.observation)
    return jnp.argmax(search_lib.mask_logits(logits, states.legal_action_mask), -1)


def training_run(
    config: Config, seed: int, tier: Tier, log=print, run_dir: Path | None = None
) -> list[dict[str, Any]]:
    """Train ``config`` from seed ``seed`` for ``tier.train_seconds`` of iteration time
    (compilation and measurements excluded); measure the raw policy's optimal share
    ``tier.train_evals`` times at equal intervals and at the start. With ``run_dir`` the
    final state is saved there as a run that ``load_agent`` / ``jaxzero eval`` read."""
    trainer = make_trainer(config)
    state = trainer.init(jax.random.key(seed))
    step = trainer.iteration.lower(state).compile()
    n_positions = len(_solved_states(trainer.env)[1].lengths)
    rows = []

    def measure(wall: float) -> None:
        share = raw_optimal_share(trainer.env, trainer.apply_fn, state.params)
        lo, hi = wilson_interval(share * n_positions, n_positions)
        rows.append(
            dict(
                game=config.game,
                search=config.search.kind,
                simulations=config.search.num_simulations,
                seed=seed,
                iteration=int(state.iteration),
                wall_seconds=wall,
                positions=int(state.positions_written),
                optimal=share,
                optimal_low=lo,
                optimal_high=hi,
            )  # fmt: skip
        )

    measure(0.0)
    wall = 0.0
    for i in range(1, tier.train_evals + 1):
        target = tier.train_seconds * i / tier.train_evals
        start = time.monotonic()
        while wall + (time.monotonic() - start) < target:
            state, _ = step(state)
            jax.block_until_ready(state.iteration)
        wall += time.monotonic() - start
        measure(wall)
    if run_dir is not None:
        run_dir.mkdir(parents=True, exist_ok=True)
        saved = config_to_dict(config)
        (run_dir / CONFIG_FILE).write_text(json.dumps(saved, indent=2) + "\n")
        Checkpointer(run_dir).save(int(state.iteration), state, saved)
    last = rows[-1]
    log(
        f"  {config.search.kind}({config.search.num_simulations}) seed {seed}: "
        f"{last['iteration']} iterations, {last['positions']} positions, "
        f"optimal {last['optimal']:.3f}"
    )
    return rows


def training_arms(tier: Tier) -> list[tuple[str, int, int]]:
    """(search kind, simulations, seed) of every training run of ``tier``, in run order."""
    return [
        (kind, n, seed)
        for n in tier.train_simulations
        for kind in KINDS
        for seed in tier.train_seeds
    ]


def arm_config(tier: Tier, kind: str, n: int) -> Config:
    base = apply_overrides(get_preset(tier.train_game), tier.train_overrides)
    return apply_overrides(base, {"search.kind": kind, "search.num_simulations": n})


def training_study(tier: Tier, workdir: Path, log=print) -> list[dict[str, Any]]:
    """Every training run of ``tier``, one after another in this process; each final state
    is saved as the run ``workdir/KIND-N-SEED``."""
    rows = []
    for kind, n, seed in training_arms(tier):
        run_dir = workdir / f"{kind}-{n}-{seed}"
        rows += training_run(arm_config(tier, kind, n), seed, tier, log, run_dir)
    return rows


def cpu_groups(jobs: int) -> list[list[int]]:
    """This process's CPUs dealt into ``jobs`` disjoint groups, one per concurrent run."""
    cpus = sorted(os.sched_getaffinity(0))
    if not 1 <= jobs <= len(cpus):
        raise ValueError(
            f"--jobs {jobs}: this process may use {len(cpus)} CPUs; give 1..{len(cpus)} "
            "(each concurrent training run gets CPUs of its own)"
        )
    return [cpus[i::jobs] for i in range(jobs)]


def parallel_training_study(
    tier_name: str, tier: Tier, jobs: int, workdir: Path, log=print
) -> list[dict[str, Any]]:
    """:func:`training_study` with ``jobs`` runs at a time, each in its own process pinned to
    its own CPUs (single-threaded XLA on a single CPU), so concurrent runs do not share cores
    and equal wall time still means equal compute. Each run writes ``workdir/KIND-N-SEED/``
    (its final checkpoint, ``training.csv`` and ``log.txt``); the rows come back in
    :func:`training_arms` order."""
    free = cpu_groups(jobs)
    arms = training_arms(tier)
    waiting, running, dirs = list(arms), {}, {}
    while waiting or running:
        while waiting and free:
            kind, n, seed = arm = waiting.pop(0)
            cpus = free.pop(0)
            dirs[arm] = workdir / f"{kind}-{n}-{seed}"
            dirs[arm].mkdir(parents=True, exist_ok=True)
            env = dict(os.environ)
            if len(cpus) == 1:
                flags = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
                env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} {flags}".strip()
            command = [
                sys.executable, "-m", "experiments.compare_search",
                *([] if tier_name == "full" else [f"--{tier_name}"]),
                "--arm", f"{kind}:{n}:{seed}", "--train-seconds", str(tier.train_seconds),
                "--cpus", ",".join(map(str, cpus)), "--out", str(dirs[arm]),
            ]  # fmt: skip
            with open(dirs[arm] / "log.txt", "w") as f:
                # The child pins itself (--cpus) before JAX starts its threads: a preexec_fn
                # would run Python between fork and exec of this multithreaded process.
                process = subprocess.Popen(
                    command, stdout=f, stderr=subprocess.STDOUT, env=env,
                    cwd=Path(__file__).resolve().parents[1],
                )  # fmt: skip
            running[process] = (arm, cpus)
            log(f"  started {kind}({n}) seed {seed} on CPUs {cpus}")
        process = _wait_any(running)
        arm, cpus = running.pop(process)
        free.append(cpus)
        if process.returncode != 0:
            for other in running:
                other.kill()
            raise RuntimeError(
                f"training run {arm} failed (exit {process.returncode}); see "
                f"{dirs[arm] / 'log.txt'}"
            )
        log(f"  finished {arm[0]}({arm[1]}) seed {arm[2]}")
    return [row for arm in arms for row in read_csv(dirs[arm] / "training.csv")]


def _wait_any(running: dict[subprocess.Popen, Any]) -> subprocess.Popen:
    while True:
        for process in running:
            if process.poll() is not None:
                return process
        time.sleep(0.5)


# --------------------------------------------------------------------------------- output


def write_fixed_network_csvs(out: Path, matches, shares, differences) -> None:
    write_csv(out / "policy_improvement.csv", IMPROVEMENT_COLUMNS, matches)
    write_csv(out / "optimal_share.csv", OPTIMAL_COLUMNS, shares)
    write_csv(out / "optimal_difference.csv", DIFFERENCE_COLUMNS, differences)


def write_csv(path: Path, columns: Sequence[str], rows: list[dict[str, Any]]) -> None:
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(columns))
        writer.writeheader()
        for row in rows:
            writer.writerow({c: row[c] for c in columns})


def verdict(low: float, high: float, even: float = 0.5) -> str:
    """Gumbel's 95% interval against PUCT (a score, or a difference with ``even=0``)."""
    if low > even:
        return "Gumbel better"
    if high < even:
        return "PUCT better"
    return "no clear difference"


def training_verdict(puct: list[dict[str, Any]], gumbel: list[dict[str, Any]]) -> str:
    """Which search trained better, counting only separations that hold for every seed."""
    if not puct or not gumbel:
        return "PUCT only" if puct else "Gumbel only" if gumbel else "no runs"
    if min(r["optimal_low"] for r in gumbel) > max(r["optimal_high"] for r in puct):
        return "Gumbel better"
    if min(r["optimal_low"] for r in puct) > max(r["optimal_high"] for r in gumbel):
        return "PUCT better"
    return "no clear difference"


def _fmt(x: float, lo: float, hi: float, digits: int = 2) -> str:
    return f"{x:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def markdown(matches, shares, differences, training, tier_name: str, command: str) -> str:
    lines = [f"# PUCT vs Gumbel ({tier_name} tier)", "", f"Command: `{command}`", ""]
    if matches:
        lines += [
            "## Policy improvement at a fixed network",
            "",
            "Score = (wins + draws/2) / games, 95% Wilson interval; both colours, random openings.",
            "",
            "| game | n | PUCT vs raw | Gumbel vs raw | Gumbel vs PUCT | verdict |",
            "|---|---|---|---|---|---|",
        ]
    index = {(r["game"], r["player"], r["simulations"], r["opponent"]): r for r in matches}
    for game in dict.fromkeys(r["game"] for r in matches):
        for n in sorted({r["simulations"] for r in matches if r["game"] == game}):
            pairs = (("puct", "raw"), ("gumbel", "raw"), ("gumbel", "puct"))
            p, g, h = (index[(game, k, n, o)] for k, o in pairs)
            cells = [_fmt(r["score"], r["score_low"], r["score_high"]) for r in (p, g, h)]
            lines.append(
                f"| {game} | {n} | {' | '.join(cells)} | "
                f"{verdict(h['score_low'], h['score_high'])} |"
            )
    if shares:
        lines += [
            "",
            "## Solver-optimal move share",
            "",
            "| game | player | n | optimal share | kept in critical positions |",
            "|---|---|---|---|---|",
        ]
        for r in shares:
            lines.append(
                f"| {r['game']} | {r['player']} | {r['simulations']} | "
                f"{_fmt(r['optimal'], r['optimal_low'], r['optimal_high'], 3)} | "
                f"{r['kept']:.3f} of {r['critical']} |"
            )
    if differences:
        lines += [
            "",
            "### Gumbel minus PUCT on the same positions",
            "",
            "Paired: both searches answer the same positions, so the difference of their "
            "optimal shares gets Newcombe's paired 95% interval (much narrower than two "
            "separate intervals).",
            "",
            "| game | n | Gumbel only | PUCT only | Gumbel - PUCT | verdict |",
            "|---|---|---|---|---|---|",
        ]
        for r in differences:
            lines.append(
                f"| {r['game']} | {r['simulations']} | {r['gumbel_only']} | {r['puct_only']} | "
                f"{_fmt(r['difference'], r['difference_low'], r['difference_high'], 3)} | "
                f"{verdict(r['difference_low'], r['difference_high'], even=0.0)} |"
            )
    if training:
        lines += [
            "",
            "## Training with each search (equal wall time)",
            "",
            "Raw-policy solver-optimal share at the end of each run, per seed with its 95% "
            "Wilson interval over the position set. Verdict: one search is better only when "
            "every seed's interval lies above every seed's interval of the other.",
            "",
            "| game | n | PUCT per seed | Gumbel per seed | positions PUCT / Gumbel | verdict |",
            "|---|---|---|---|---|---|",
        ]
        final: dict[tuple, dict[str, Any]] = {}
        for r in training:
            key = (r["game"], r["simulations"], r["search"], r["seed"])
            if key not in final or r["wall_seconds"] >= final[key]["wall_seconds"]:
                final[key] = r
        for game, n in dict.fromkeys((g, n) for g, n, _, _ in sorted(final)):
            runs = {k: [r for (g, m, kind, _), r in final.items() if (g, m, kind) == (game, n, k)]
                    for k in KINDS}  # fmt: skip
            cells = [
                ", ".join(_fmt(r["optimal"], r["optimal_low"], r["optimal_high"], 3) for r in rs)
                or "—"  # a budget trained with one search only
                for rs in runs.values()
            ]
            positions = " / ".join(f"{np.mean([r['positions'] for r in rs]):.0f}" if rs else "—"
                                   for rs in runs.values())  # fmt: skip
            lines.append(f"| {game} | {n} | {cells[0]} | {cells[1]} | {positions} | "
                         f"{training_verdict(runs['puct'], runs['gumbel'])} |")  # fmt: skip
    return "\n".join(lines) + "\n"


def _yerr(rows: list[dict[str, Any]], name: str) -> np.ndarray:
    """Asymmetric error bars [2, N] from the rows' ``name``, ``name_low``, ``name_high``."""
    return np.array([[r[name] - r[f"{name}_low"], r[f"{name}_high"] - r[name]] for r in rows]).T


def plot(matches, shares, training, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    games = list(dict.fromkeys(r["game"] for r in matches))
    if games:
        fig, axes = plt.subplots(1, len(games), figsize=(4.5 * len(games), 3.6), squeeze=False)
        for ax, game in zip(axes[0], games, strict=True):
            for player, opponent, label in (
                ("puct", "raw", "PUCT vs raw"),
                ("gumbel", "raw", "Gumbel vs raw"),
                ("gumbel", "puct", "Gumbel vs PUCT"),
            ):
                rs = [
                    r for r in matches
                    if r["game"] == game and r["player"] == player and r["opponent"] == opponent
                ]  # fmt: skip
                x = np.array([r["simulations"] for r in rs])
                y = np.array([r["score"] for r in rs])
                err = _yerr(rs, "score")
                ax.errorbar(x, y, yerr=err, marker="o", capsize=3, label=label)
            ax.axhline(0.5, color="grey", lw=0.8, ls=":")
            ax.set_xscale("log", base=2)
            ax.set_ylim(0, 1)
            ax.set_title(game)
            ax.set_xlabel("simulations n")
            ax.set_ylabel("score (95% CI)")
        axes[0][0].legend(fontsize=8)
        fig.tight_layout()
        written.append(out / "policy_improvement.png")
        fig.savefig(written[-1], dpi=110)
        plt.close(fig)
    share_games = list(dict.fromkeys(r["game"] for r in shares))
    if share_games:
        width = 4.5 * len(share_games)
        fig, axes = plt.subplots(1, len(share_games), figsize=(width, 3.6), squeeze=False)
        for ax, game in zip(axes[0], share_games, strict=True):
            raw = [r for r in shares if r["game"] == game and r["player"] == "raw"]
            for r in raw:
                ax.axhline(r["optimal"], color="grey", ls="--", label="raw policy")
            for kind in KINDS:
                rs = [r for r in shares if r["game"] == game and r["player"] == kind]
                x = np.array([r["simulations"] for r in rs])
                y = np.array([r["optimal"] for r in rs])
                err = _yerr(rs, "optimal")
                ax.errorbar(x, y, yerr=err, marker="o", capsize=3, label=kind)
            ax.set_xscale("log", base=2)
            ax.set_title(f"{game}: solver-optimal moves")
            ax.set_xlabel("simulations n")
            ax.set_ylabel("optimal share (95% CI)")
            ax.legend(fontsize=8)
        fig.tight_layout()
        written.append(out / "optimal_share.png")
        fig.savefig(written[-1], dpi=110)
        plt.close(fig)
    if training:
        budgets = sorted({r["simulations"] for r in training})
        fig, axes = plt.subplots(2, len(budgets), figsize=(4.5 * len(budgets), 7), squeeze=False)
        colours = {"puct": "tab:blue", "gumbel": "tab:orange"}
        for col, n in enumerate(budgets):
            for row, (xkey, xlabel) in enumerate(
                (("wall_seconds", "training wall time (s)"), ("positions", "positions generated"))
            ):
                ax = axes[row][col]
                runs = sorted({(r["search"], r["seed"]) for r in training if r["simulations"] == n})
                for kind, seed in runs:
                    rs = [
                        r for r in training
                        if r["simulations"] == n and r["search"] == kind and r["seed"] == seed
                    ]  # fmt: skip
                    ax.plot(
                        [r[xkey] for r in rs], [r["optimal"] for r in rs], marker=".",
                        color=colours[kind], ls="-" if seed % 2 == 0 else "--",
                        label=f"{kind} seed {seed}",
                    )  # fmt: skip
                ax.set_title(f"{training[0]['game']}, {n} simulations")
                ax.set_xlabel(xlabel)
                if xkey == "positions":
                    ax.ticklabel_format(axis="x", style="sci", scilimits=(0, 0))
                ax.set_ylabel("raw-policy optimal share")
                ax.legend(fontsize=7)
        fig.tight_layout()
        written.append(out / "training.png")
        fig.savefig(written[-1], dpi=110)
        plt.close(fig)
    return written


# ----------------------------------------------------------------------------------- main


def run(
    out: str | Path,
    tier_name: str = "full",
    checkpoints: dict[str, str] | None = None,
    *,
    seed: int = 0,
    skip_training: bool = False,
    skip_fixed: bool = False,
    skip_matches: bool = False,
    jobs: int = 1,
    changes: dict[str, Any] | None = None,
    search: dict[str, Any] | None = None,
    command: str = "",
    log=print,
) -> dict[str, Any]:
    """Run the study of ``tier_name`` and write CSVs, PNGs and ``results.md`` into ``out``.

    ``checkpoints`` maps a game to a run directory; games of the tier without one get a
    checkpoint trained here (quick/smoke) or are skipped (full). ``skip_matches`` keeps
    only the solver-optimal shares of the fixed-network study; ``search`` changes the
    loaded agents' ``search.*`` settings (:func:`load_agent`). ``jobs`` > 1 runs that
    many training runs at a time (:func:`parallel_training_study`); ``changes`` replaces
    fields of the tier (e.g. ``{"train_seconds": 1500}``).
    """
    tier = dataclasses.replace(TIERS[tier_name], **(changes or {}))
    if jobs > 1 and not skip_training:
        cpu_groups(jobs)  # a bad --jobs fails now, not after the fixed-network study
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    checkpoints = dict(checkpoints or {})
    key = jax.random.key(seed)
    matches: list[dict[str, Any]] = []
    shares: list[dict[str, Any]] = []
    differences: list[dict[str, Any]] = []
    log(f"[compare_search] tier {tier_name}, out {out}")
    for game in () if skip_fixed else tier.games:
        if game not in checkpoints:
            if tier.checkpoint_seconds <= 0 and tier.checkpoint_iterations is None:
                log(f"  {game}: no checkpoint given, skipped")
                continue
            checkpoints[game] = str(make_checkpoint(game, tier, out / "runs", log))
        agent = load_agent(checkpoints[game], search=search)
        log(f"  {game}: checkpoint {checkpoints[game]} (iteration {agent.iteration})")
        key, k = jax.random.split(key)
        m, s, d = policy_improvement(agent, tier, k, log, matches_too=not skip_matches)
        matches, shares, differences = matches + m, shares + s, differences + d
        write_fixed_network_csvs(out, matches, shares, differences)
    if skip_training:
        training = []
    elif jobs > 1:
        training = parallel_training_study(tier_name, tier, jobs, out / "training_runs", log)
    else:
        training = training_study(tier, out / "training_runs", log)
    write_fixed_network_csvs(out, matches, shares, differences)
    write_csv(out / "training.csv", TRAINING_COLUMNS, training)
    pngs = plot(matches, shares, training, out)
    text = markdown(matches, shares, differences, training, tier_name, command)
    (out / "results.md").write_text(text)
    log(text)
    return {
        "matches": matches,
        "shares": shares,
        "differences": differences,
        "training": training,
        "pngs": pngs,
        "checkpoints": checkpoints,
    }


def _typed(value: str) -> Any:
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def read_csv(path: Path) -> list[dict[str, Any]]:
    """Rows of a CSV this script wrote, numbers parsed; [] if the file is missing."""
    if not path.exists():
        return []
    with open(path, newline="") as f:
        return [{k: _typed(v) for k, v in row.items()} for row in csv.DictReader(f)]


def render(out: str | Path, tier_name: str, command: str = "") -> str:
    """Redraw the PNGs and ``results.md`` of ``out`` from its CSVs (e.g. of a partial run)."""
    out = Path(out)
    matches = read_csv(out / "policy_improvement.csv")
    shares = read_csv(out / "optimal_share.csv")
    differences = read_csv(out / "optimal_difference.csv")
    training = read_csv(out / "training.csv")
    plot(matches, shares, training, out)
    text = markdown(matches, shares, differences, training, tier_name, command)
    (out / "results.md").write_text(text)
    return text


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    tier = parser.add_mutually_exclusive_group()
    tier.add_argument("--quick", action="store_true", help="reduced study (~10 min on 2 CPUs)")
    tier.add_argument("--smoke", action="store_true", help="every code path at toy size (CI)")
    parser.add_argument("--out", default="docs/compare_search", help="output directory")
    parser.add_argument(
        "--checkpoint", action="append", default=[], metavar="GAME=RUN_DIR",
        help="a trained run for GAME (repeatable); otherwise quick/smoke train their own",
    )  # fmt: skip
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-training", action="store_true", help="only the fixed-net study")
    parser.add_argument("--skip-fixed", action="store_true", help="only the training study")
    parser.add_argument(
        "--skip-matches", action="store_true",
        help="fixed-network study: only the solver-optimal shares (no matches)",
    )  # fmt: skip
    parser.add_argument(
        "--jobs", type=int, default=1,
        help="training runs at a time, each pinned to its own CPUs (default 1)",
    )  # fmt: skip
    parser.add_argument(
        "--train-seconds", type=float, default=None,
        help="wall time of each training run (default: the tier's; full 1800)",
    )  # fmt: skip
    parser.add_argument(
        "--simulations", type=int, nargs="+", default=None, metavar="N",
        help="the fixed-network study's budgets (default: the tier's; full 2 4 ... 128)",
    )  # fmt: skip
    parser.add_argument(
        "--match-games", type=int, default=None,
        help="games of each fixed-network match, even (default: the tier's; full 200)",
    )  # fmt: skip
    parser.add_argument(
        "--arm", default=None, metavar="KIND:N:SEED",
        help="run only this training run and write its training.csv (used by --jobs)",
    )  # fmt: skip
    parser.add_argument(
        "--cpus", default=None, metavar="I,J,...", help="with --arm: run on these CPUs only"
    )
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE",
        help="fixed-network study: change a search.* setting of the loaded agents "
        "(e.g. search.max_num_considered_actions=4)",
    )  # fmt: skip
    parser.add_argument(
        "--render", action="store_true", help="only redraw plots and results.md from --out's CSVs"
    )
    args = parser.parse_args(argv)
    checkpoints = {}
    for item in args.checkpoint:
        game, sep, path = item.partition("=")
        if not sep:
            parser.error(f"--checkpoint expects GAME=RUN_DIR, got {item!r}")
        checkpoints[game] = path
    name = "quick" if args.quick else "smoke" if args.smoke else "full"
    command = "python -m experiments.compare_search " + " ".join(
        sys.argv[1:] if argv is None else argv
    )
    if args.render:
        print(render(args.out, name, command.strip()))
        return
    log = functools.partial(print, flush=True)
    changes = _tier_changes(parser, args)
    try:
        search = parse_settings(args.set)
    except ValueError as error:
        parser.error(str(error))
    if args.arm is not None:
        kind, n, seed = _parse_arm(parser, args.arm)
        if args.cpus:  # before JAX's first computation starts its thread pool
            os.sched_setaffinity(0, [int(cpu) for cpu in args.cpus.split(",")])
        tier = dataclasses.replace(TIERS[name], **changes)
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        rows = training_run(arm_config(tier, kind, n), seed, tier, log, out)
        write_csv(out / "training.csv", TRAINING_COLUMNS, rows)
        return
    try:
        cpu_groups(args.jobs)
    except ValueError as error:
        parser.error(str(error))
    run(
        args.out, name, checkpoints, seed=args.seed, skip_training=args.skip_training,
        skip_fixed=args.skip_fixed, skip_matches=args.skip_matches, jobs=args.jobs,
        changes=changes, search=search,
        command=command.strip(), log=log,
    )  # fmt: skip


def _tier_changes(parser: argparse.ArgumentParser, args: argparse.Namespace) -> dict[str, Any]:
    """The tier fields the command line replaces, checked."""
    changes: dict[str, Any] = {}
    if args.train_seconds is not None:
        if args.train_seconds <= 0:
            parser.error(f"--train-seconds must be positive, got {args.train_seconds}")
        changes["train_seconds"] = args.train_seconds
    if args.simulations is not None:
        if min(args.simulations) < 1:
            parser.error(f"--simulations must be at least 1, got {args.simulations}")
        changes["simulations"] = tuple(args.simulations)
    if args.match_games is not None:
        if args.match_games < 2 or args.match_games % 2:
            parser.error(
                f"--match-games must be even and at least 2 (each opening is played with "
                f"both colours), got {args.match_games}"
            )
        changes["match_games"] = args.match_games
    return changes


def _parse_arm(parser: argparse.ArgumentParser, text: str) -> tuple[str, int, int]:
    kind, _, rest = text.partition(":")
    n, _, seed = rest.partition(":")
    if kind not in KINDS or not n.isdigit() or not seed.isdigit():
        parser.error(f"--arm expects KIND:N:SEED with KIND one of {KINDS}, got {text!r}")
    return kind, int(n), int(seed)


if __name__ == "__main__":
    main()
