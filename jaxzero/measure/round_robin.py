"""A round robin between players, and its Elo fit (what ``jaxzero eval`` plays).

    entrants = [Entrant("run@100", agent.player, agent.params), *fixed_entrants(env, names)]
    table = run_round_robin(env, entrants, games=100)
    print(format_table(table.ratings))

Every pair of entrants plays ``games`` games (paired random openings, both colours:
:mod:`jaxzero.measure.match`); trained entrants play with their own noise-free greedy
search. ``random`` always takes part: the ratings are anchored at random = 0
(:func:`jaxzero.measure.statistics.fit_elo`).

The round robin owns its compiled matches and builds each once: entrants with equal
players (one network shape, one search) share one entrant-vs-entrant match (one batched
search serving both networks) and one entrant-vs-all-fixed-opponents match
(:mod:`jaxzero.measure.evaluation`), whatever the number of checkpoints.

``on_games(a, b, games)``, if given, receives every pairing's games as host arrays
``(outcome, a_seat, actions, final_states)`` (``Match.recorded``), e.g. to write them as
SGF; the recording matches are then compiled instead of the plain ones.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jax

from envs.core import Env
from jaxzero.measure.evaluation import Evaluation, make_evaluation
from jaxzero.measure.match import Match, MatchResult, make_match
from jaxzero.measure.opponents import make_opponent, opponents
from jaxzero.measure.players import Player
from jaxzero.measure.statistics import Ratings, fit_elo

ANCHOR = "random"
ResultCallback = Callable[[str, str, MatchResult], None]
GamesCallback = Callable[[str, str, tuple], None]


class RoundRobinError(ValueError):
    """An opponent or setting the round robin cannot use; the message says why."""


@dataclasses.dataclass(frozen=True)
class Entrant:
    """A player of the round robin: a trained agent (params, and where it came from) or
    a fixed opponent (params None)."""

    name: str
    player: Player
    params: Any = None
    run_dir: Path | None = None
    iteration: int | None = None

    @property
    def fixed(self) -> bool:
        return self.params is None


@dataclasses.dataclass(frozen=True)
class RoundRobin:
    entrants: tuple[Entrant, ...]
    results: tuple[tuple[str, str, MatchResult], ...]
    ratings: Ratings
    games: int  # per pairing
    schedule: _Schedule = dataclasses.field(repr=False, compare=False)  # its compiled matches


def parse_opponents(text: str) -> tuple[str, ...]:
    """Comma-separated opponent names, checked, with the anchor ``random`` always first."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    known = opponents()
    unknown = [n for n in names if n not in known]
    if unknown:
        raise RoundRobinError(f"unknown opponent {unknown[0]!r}; choose from: {', '.join(known)}")
    return tuple(dict.fromkeys([ANCHOR, *names]))


def fixed_entrants(env: Env, names: Sequence[str]) -> list[Entrant]:
    """The named fixed opponents of ``env`` as entrants (RoundRobinError if one cannot
    play this game)."""
    entrants = []
    for name in names:
        try:
            entrants.append(Entrant(name, make_opponent(name, env)))
        except ValueError as error:
            raise RoundRobinError(str(error)) from None
    return entrants


def run_round_robin(
    env: Env,
    entrants: Sequence[Entrant],
    *,
    games: int = 100,
    opening_plies: int = 2,
    seed: int = 0,
    on_result: ResultCallback | None = None,
    on_games: GamesCallback | None = None,
) -> RoundRobin:
    """Play every pairing of ``entrants`` (the anchor ``random`` among them) and fit Elo."""
    if games < 2 or games % 2:
        raise RoundRobinError(f"--games must be an even number >= 2, got {games}")
    if ANCHOR not in [e.name for e in entrants if e.fixed]:
        raise RoundRobinError(f"the anchor {ANCHOR!r} must take part")
    schedule = _Schedule(env, games, opening_plies, on_games)
    key = jax.random.key(seed)
    results: list[tuple[str, str, MatchResult]] = []

    def record(a: str, b: str, result: MatchResult) -> None:
        results.append((a, b, result))
        if on_result is not None:
            on_result(a, b, result)

    agents = [e for e in entrants if not e.fixed]
    fixed = [e for e in entrants if e.fixed]
    for i, a in enumerate(agents):
        key, k = jax.random.split(key)
        for name, result in schedule.against_fixed(a, fixed, k).items():
            record(a.name, name, result)
        for b in agents[i + 1 :]:
            key, k = jax.random.split(key)
            record(a.name, b.name, schedule.pairing(a, b, k))
    for i, a in enumerate(fixed):
        for b in fixed[i + 1 :]:
            key, k = jax.random.split(key)
            record(a.name, b.name, schedule.pairing(a, b, k))
    rows = [(a, b, r.wins, r.draws, r.losses) for a, b, r in results]
    ratings = fit_elo(rows, anchor=ANCHOR)
    return RoundRobin(tuple(entrants), tuple(results), ratings, games, schedule)


@dataclasses.dataclass
class _Schedule:
    """The round robin's compiled matches, built on first use and kept for the rest."""

    env: Env
    games: int
    opening_plies: int
    on_games: GamesCallback | None
    matches: dict[tuple[Player, Player], Match] = dataclasses.field(default_factory=dict)
    evaluations: dict[Player, Evaluation] = dataclasses.field(default_factory=dict)

    def pairing(self, a: Entrant, b: Entrant, key: jax.Array) -> MatchResult:
        pair = (a.player, b.player)
        if pair not in self.matches:
            self.matches[pair] = make_match(self.env, *pair, self.games, self.opening_plies)
        match = self.matches[pair]
        if self.on_games is None:
            return match.result(a.params, b.params, key)
        games = jax.device_get(match.recorded(a.params, b.params, key))
        self.on_games(a.name, b.name, games)
        return MatchResult.from_games(games[0], games[1])

    def against_fixed(
        self, a: Entrant, fixed: Sequence[Entrant], key: jax.Array
    ) -> dict[str, MatchResult]:
        if a.player not in self.evaluations:
            names = tuple(e.name for e in fixed)
            evaluation = make_evaluation(self.env, a.player, names, self.games, self.opening_plies)
            if not isinstance(evaluation, Evaluation):  # the CLI refuses such games first
                raise RoundRobinError(f"a round robin needs a two-player game, not {self.env.id}")
            self.evaluations[a.player] = evaluation
        evaluation = self.evaluations[a.player]
        if self.on_games is None:
            return evaluation(a.params, key)
        out = {}
        for name, (result, games) in evaluation.recorded(a.params, key).items():
            self.on_games(a.name, name, games)
            out[name] = result
        return out
