"""``jaxzero eval``: a round robin between checkpoints and fixed opponents, and its Elo fit.

    ladder = run_ladder([Path("runs/c4")], opponents=("random", "one_ply"), games=100)
    print(elo.format_table(ladder.ratings))
    write_elo_files(ladder)          # RUN/elo.json for every run directory taken part

Every pair of entrants plays ``games`` games (paired random openings, both colours:
:func:`jaxzero.measure.gate.make_match`); checkpoints play with their own noise-free greedy search.
``random`` always takes part: the ratings are anchored at random = 0 (:mod:`jaxzero.measure.elo`).

Checkpoints of one network shape share their compiled matches: one checkpoint-vs-checkpoint
match (one batched search serving both networks) and one checkpoint-vs-all-fixed-opponents
match, whatever the number of checkpoints.

With ``sgf_dir`` (Go only) every game is also written there as SGF, one file a game,
``A_vs_B_001.sgf`` ... with the players' names, komi and result
(:mod:`jaxzero.go.records`); the recording matches are compiled instead of the plain
ones, not in addition to them.

``RUN/elo.json`` (the latest ladder; an earlier one is renamed ``elo-DATE-TIME.json``, not
overwritten) holds the run's checkpoints' ratings as rows keyed by iteration, with
metric names starting with ``elo`` (``elo``, ``elo_lower``, ``elo_upper``, and the fixed
opponents' ratings as ``elo/NAME``), which ``jaxzero report`` plots next to metrics.jsonl.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np

import envs
from envs.core import Env
from jaxzero.core import networks
from jaxzero.core import search as search_lib
from jaxzero.core.config import NetworkConfig, SearchConfig
from jaxzero.go import records as game_records
from jaxzero.measure import elo
from jaxzero.measure.evaluate import MatchResult
from jaxzero.measure.gate import (
    Evaluator,
    agent_vs_fixed,
    fixed_policy,
    make_match,
    make_search_match,
    match_result,
    search_policy,
)
from jaxzero.measure.opponents import OPPONENTS, make_opponent
from jaxzero.run.agent import load_agent
from jaxzero.run.checkpoint import CHECKPOINT_DIR

ELO_FILE = "elo.json"
ANCHOR = "random"


class LadderError(ValueError):
    """A path, opponent or setting the ladder cannot use; the message says why."""


@dataclasses.dataclass(frozen=True)
class Entrant:
    """A player of the round robin: a checkpoint (run_dir, iteration) or a fixed opponent."""

    name: str
    policy: Callable  # jaxzero.measure.gate.MatchPolicy
    params: Any
    run_dir: Path | None = None
    iteration: int | None = None
    search: tuple | None = None  # (SearchConfig, apply_fn, simulations) of a checkpoint


@dataclasses.dataclass(frozen=True)
class Ladder:
    entrants: tuple[Entrant, ...]
    results: tuple[tuple[str, str, MatchResult], ...]
    ratings: elo.Ratings
    games: int
    sgf_files: tuple[Path, ...] = ()  # the games written as SGF, if asked for


def checkpoint_steps(run_dir: Path) -> list[int]:
    """The finished checkpoints of a run, oldest first (orbax's temporary folders excluded)."""
    folder = run_dir / CHECKPOINT_DIR
    if not folder.is_dir():
        return []
    return sorted(int(p.name) for p in folder.iterdir() if p.is_dir() and p.name.isdigit())


def expand_paths(paths: Sequence[Path], every: int = 1) -> list[tuple[Path, int]]:
    """(run directory, checkpoint step) for each path: a run directory gives every
    ``every``-th of its checkpoints counted back from the latest (always included); a
    checkpoint directory ``RUN/checkpoints/N`` gives itself."""
    if every < 1:
        raise LadderError(f"--every must be >= 1, got {every}")
    found: list[tuple[Path, int]] = []
    for path in paths:
        path = Path(path)
        if not path.exists():
            raise LadderError(f"{path} does not exist; pass run directories or checkpoints")
        if (path / "config.json").exists():
            steps = checkpoint_steps(path)
            if not steps:
                raise LadderError(f"{path} has no checkpoints yet; train it first")
            chosen = steps[::-1][::every][::-1]
            found += [(path, step) for step in chosen]
        elif path.name.isdigit() and path.parent.name == CHECKPOINT_DIR:
            found.append((path.parent.parent, int(path.name)))
        else:
            raise LadderError(
                f"{path} is neither a run directory (with config.json) nor a checkpoint "
                f"(RUN/{CHECKPOINT_DIR}/N)"
            )
    seen: set[tuple[Path, int]] = set()
    unique = []
    for run, step in found:
        if (run.resolve(), step) not in seen:
            seen.add((run.resolve(), step))
            unique.append((run, step))
    return unique


def parse_opponents(text: str) -> tuple[str, ...]:
    """Comma-separated opponent names, checked, with the anchor ``random`` always first."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in OPPONENTS]
    if unknown:
        raise LadderError(f"unknown opponent {unknown[0]!r}; choose from: {', '.join(OPPONENTS)}")
    return tuple(dict.fromkeys([ANCHOR, *names]))


@functools.lru_cache(maxsize=8)
def _env(game: str) -> Env:
    return envs.make(game)


@functools.lru_cache(maxsize=8)
def _apply_fn(game: str, network: NetworkConfig, search_config: SearchConfig):
    env = _env(game)
    apply_fn = networks.make_apply_fn(networks.make_network(network, env))
    return search_lib.evaluation_apply_fn(search_config, env, apply_fn)


@functools.lru_cache(maxsize=16)
def _search_match(env: Env, config, apply_fn, simulations: int, games: int, plies: int):
    return make_search_match(env, config, apply_fn, simulations, games, plies)


@functools.lru_cache(maxsize=64)
def _match(env: Env, policy_a: Callable, policy_b: Callable, games: int, plies: int):
    return make_match(env, policy_a, policy_b, games, plies)


def _names(found: list[tuple[Path, int]]) -> list[str]:
    short = [f"{run.name}@{step}" for run, step in found]
    if len(set(short)) == len(short):
        return short
    return [f"{run}@{step}" for run, step in found]


def make_entrants(
    paths: Sequence[Path],
    opponents: Sequence[str],
    *,
    every: int = 1,
    simulations: int | None = None,
    search: Mapping[str, Any] | None = None,
) -> tuple[Env, list[Entrant]]:
    """Load the checkpoints (with ``search.*`` settings changed, :func:`load_agent`) and
    build the opponents; all must share one game."""
    found = expand_paths(paths, every)
    agents = [load_agent(run, step=step, search=search) for run, step in found]
    games = sorted({a.config.game for a in agents})
    if len(games) > 1:
        raise LadderError(f"the checkpoints play different games ({', '.join(games)}); pick one")
    if not games:
        raise LadderError("give at least one run directory or checkpoint to rate")
    game = games[0]
    env = _env(game)
    entrants = []
    for name, agent, (run, step) in zip(_names(found), agents, found, strict=True):
        sims = agent.config.search.eval_simulations if simulations is None else simulations
        if sims < 1:
            raise LadderError(f"--simulations must be >= 1, got {sims}")
        apply_fn = _apply_fn(game, agent.config.network, agent.config.search)
        policy = search_policy(agent.config.search, env, apply_fn, sims)
        kind = (agent.config.search, apply_fn, sims)
        entrants.append(Entrant(name, policy, agent.params, run, step, kind))
    for name in opponents:
        try:
            opponent = make_opponent(name, env)
        except ValueError as error:
            raise LadderError(str(error)) from None
        entrants.append(Entrant(name, fixed_policy(opponent), ()))
    return env, entrants


def run_ladder(
    paths: Sequence[Path],
    opponents: Sequence[str] = (ANCHOR, "one_ply"),
    *,
    games: int = 100,
    simulations: int | None = None,
    every: int = 1,
    opening_plies: int = 2,
    seed: int = 0,
    sgf_dir: Path | None = None,
    on_result: Callable[[str, str, MatchResult], None] | None = None,
    search: Mapping[str, Any] | None = None,
) -> Ladder:
    """Play the round robin and fit Elo (anchored at random = 0); with ``sgf_dir``, write
    every game there as SGF (Go only)."""
    if games < 2 or games % 2:
        raise LadderError(f"--games must be an even number >= 2, got {games}")
    if ANCHOR not in opponents:
        opponents = (ANCHOR, *opponents)
    env, entrants = make_entrants(
        paths, opponents, every=every, simulations=simulations, search=search
    )
    if sgf_dir is not None:
        try:
            game_records.require_go(env, "--sgf game records")
        except ValueError as error:
            raise LadderError(str(error)) from None
    key = jax.random.key(seed)
    results = []
    sgf_files: list[Path] = []

    def record(a: str, b: str, result: MatchResult) -> None:
        results.append((a, b, result))
        if on_result is not None:
            on_result(a, b, result)

    def play(match, a: Entrant, b: Entrant, key: jax.Array) -> MatchResult:
        if sgf_dir is None:
            return match_result(*match(a.params, b.params, key))
        outcome, seat, actions, final = jax.device_get(match.recorded(a.params, b.params, key))
        games = _write_games(env, sgf_dir, actions, seat, outcome, final, (a.name, b.name))
        sgf_files.extend(games)
        return match_result(outcome, seat)

    agents = [e for e in entrants if e.search is not None]
    fixed = [e for e in entrants if e.search is None]
    names = tuple(e.name for e in fixed)
    for i, a in enumerate(agents):
        key, k = jax.random.split(key)
        evaluator = agent_vs_fixed(env, a.policy, names, games, opening_plies)
        if sgf_dir is None:
            by_opponent = evaluator(a.params, k)
        else:
            by_opponent = _recorded_vs_fixed(env, evaluator, a, k, sgf_dir, sgf_files)
        for name, result in by_opponent.items():
            record(a.name, name, result)
        for b in agents[i + 1 :]:
            key, k = jax.random.split(key)
            if a.search == b.search:  # one network shape and search: one batched search
                match = _search_match(env, *a.search, games, opening_plies)
            else:
                match = _match(env, a.policy, b.policy, games, opening_plies)
            record(a.name, b.name, play(match, a, b, k))
    for i, a in enumerate(fixed):
        for b in fixed[i + 1 :]:
            key, k = jax.random.split(key)
            match = _match(env, a.policy, b.policy, games, opening_plies)
            record(a.name, b.name, play(match, a, b, k))
    rows = [(a, b, r.wins, r.draws, r.losses) for a, b, r in results]
    ratings = elo.fit_elo(rows, anchor=ANCHOR)
    return Ladder(tuple(entrants), tuple(results), ratings, games, tuple(sgf_files))


def _recorded_vs_fixed(
    env: Env, evaluator: Evaluator, a: Entrant, key: jax.Array, sgf_dir: Path, files: list[Path]
) -> dict[str, MatchResult]:
    """What ``evaluator(a.params, key)`` returns, from the recording match, whose games
    are written to ``sgf_dir`` opponent by opponent (appended to ``files``)."""
    outcome, seat, actions, final = jax.device_get(
        evaluator.match.recorded(a.params, evaluator.choice, key)
    )
    choice = np.asarray(jax.device_get(evaluator.choice))
    results = {}
    for i, name in enumerate(evaluator.opponents):
        mine = np.flatnonzero(choice == i)
        part = jax.tree.map(functools.partial(np.take, indices=mine, axis=0), final)
        games = _write_games(
            env, sgf_dir, actions[mine], seat[mine], outcome[mine], part, (a.name, name)
        )
        files.extend(games)
        results[name] = match_result(outcome[mine], seat[mine])
    return results


def _write_games(env: Env, sgf_dir: Path, actions, seat, outcome, final, names) -> list[Path]:
    """Write one match's games (host arrays, ``PairedMatch.recorded``) as SGF files."""
    records = game_records.match_records(env, actions, seat, outcome, final, names)
    return game_records.write_records(records, sgf_dir, prefix=f"{names[0]}_vs_{names[1]}")


def elo_rows(ladder: Ladder, run_dir: Path) -> list[dict[str, float]]:
    """Rows keyed by iteration for one run: its checkpoint's Elo and 95% interval, and
    every fixed opponent's Elo (constant reference lines)."""
    ratings = ladder.ratings
    fixed = {e.name: ratings[e.name] for e in ladder.entrants if e.run_dir is None}
    rows = []
    mine = [e for e in ladder.entrants if e.run_dir is not None and e.run_dir == run_dir]
    for entrant in sorted(mine, key=lambda e: e.iteration):
        i = ratings.players.index(entrant.name)
        row = {
            "iteration": entrant.iteration,
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


def write_elo_files(ladder: Ladder) -> list[tuple[Path, Path | None]]:
    """Write ``RUN/elo.json`` into every run directory that took part. An earlier file is
    renamed first (:func:`keep_previous`), never overwritten. Returns (written, kept) pairs."""
    written = []
    runs = dict.fromkeys(e.run_dir for e in ladder.entrants if e.run_dir is not None)
    ratings = ladder.ratings
    for run_dir in runs:
        data = {
            "anchor": ANCHOR,
            "games_per_pair": ladder.games,
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
            "rows": elo_rows(ladder, run_dir),
        }
        path = run_dir / ELO_FILE
        kept = keep_previous(path)
        path.write_text(json.dumps(data, indent=2) + "\n")
        written.append((path, kept))
    return written
