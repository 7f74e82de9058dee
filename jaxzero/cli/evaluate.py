"""``jaxzero eval``: a round robin between checkpoints and fixed opponents, rated in Elo
(a single-player game's checkpoints: their mean scores beside random and greedy play)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from jaxzero.cli.app import UsageError, console, fail
from jaxzero.cli.options import SEED_MAX, SearchSettings, TrustCodeOption, search_settings

if TYPE_CHECKING:
    from envs import Env
    from jaxzero import Player
    from jaxzero.measure.match import MatchResult
    from jaxzero.measure.round_robin import GamesCallback, RoundRobin
    from jaxzero.run.agents.agent import Agent

    # (name, agent, run directory or None) of each checkpoint: run.agent.load_agents
    Loaded = list[tuple[str, Agent, Path | None]]


def eval_(
    paths: Annotated[
        list[Path],
        typer.Argument(
            metavar="RUN_OR_CKPT",
            help="Run directories (all their checkpoints), checkpoints RUN/checkpoints/N, "
            "agent folders, or games with a shipped agent (connect_four)",
        ),
    ],
    opponents: Annotated[
        str, typer.Option(help="Fixed opponents, comma-separated (random is always in)")
    ] = "random,one_ply,pure_mcts",
    games: Annotated[int, typer.Option(min=2, help="Games per pairing (even)")] = 100,
    simulations: Annotated[
        int | None,
        typer.Option(min=1, help="Search simulations per move [default: evaluation.simulations]"),
    ] = None,
    every: Annotated[int, typer.Option(min=1, help="Take every K-th checkpoint of a run")] = 1,
    seed: Annotated[
        int, typer.Option(min=0, max=SEED_MAX, help="Seed of the openings and opponents")
    ] = 0,
    sgf: Annotated[
        Path | None, typer.Option(help="Go: write every game into this directory as SGF")
    ] = None,
    set_: SearchSettings = None,
    trust_code: TrustCodeOption = False,
) -> None:
    """Round robin between checkpoints and fixed opponents; Elo table (random = 0).

    A single-player game (pgx/2048) has no opponent: each checkpoint's mean score over
    --games games is printed beside random and greedy play's, from the same starts.

    Writes RUN/elo.json into each run directory (not into agent folders), which
    `jaxzero report` plots; an earlier RUN/elo.json is renamed RUN/elo-DATE-TIME.json
    first, never overwritten.

    Go: --sgf DIR also writes every game there as SGF (A_vs_B_001.sgf, ...) for Sabaki."""
    from jaxzero.measure.round_robin import RoundRobinError
    from jaxzero.measure.statistics import format_table
    from jaxzero.run.folder.files import FileProblem, os_reason
    from jaxzero.run.life.checkpoint import CheckpointError
    from jaxzero.run.reports.elo_files import write_elo_files

    written: list[Path] = []
    try:
        from jaxzero.run.agents.agent import load_agents

        settings = search_settings(set_)
        loaded = load_agents(paths, every=every, settings=settings, trust_code=trust_code)
        _check_games_fit(loaded, simulations, games)
        if loaded[0][1].env.num_players == 1:
            _solo_eval(loaded, games, simulations, seed)
            return
        table = _round_robin(loaded, opponents, games, simulations, seed, sgf, written)
    except (UsageError, RoundRobinError, CheckpointError, FileProblem, ValueError) as error:
        fail(str(error))
    print(format_table(table.ratings))
    try:
        files = write_elo_files(table)
    except OSError as error:
        fail(f"the ratings above could not be written: {os_reason(error)}")
    for path, kept in files:
        console.print(f"ratings written to {path}", highlight=False)
        if kept is not None:
            console.print(f"the previous ratings are kept as {kept}", highlight=False)
    if sgf is not None:
        console.print(
            f"{len(written)} games written to {sgf} as SGF", highlight=False, soft_wrap=True
        )


def _check_games_fit(loaded: Loaded, simulations: int | None, games: int) -> None:
    """ValueError unless ``games`` search trees (a match plays its games at once) fit in
    the memory free, at the largest simulation count of the loaded agents."""
    from jaxzero.core.memory import check_search_memory

    sims = max(agent.search_player(simulations).num_simulations for _, agent, _ in loaded)
    setting = "--simulations" if simulations is not None else "evaluation.simulations"
    check_search_memory(loaded[0][1].env, sims, setting, games=games)


def _solo_eval(loaded: Loaded, games: int, simulations: int | None, seed: int) -> None:
    """A single-player game's ``jaxzero eval``: each loaded checkpoint's scores beside
    random and greedy play's, printed (no ratings: there is no opponent)."""
    import jax

    from jaxzero.core.games import game_kit
    from jaxzero.measure.evaluation import SOLO_OPPONENTS
    from jaxzero.measure.opponents import make_opponent
    from jaxzero.measure.solo import make_solo

    env = loaded[0][1].env
    players: list[tuple[str, Player, Any]] = [
        (name, agent.search_player(simulations), agent.params) for name, agent, _ in loaded
    ]
    players += [(name, make_opponent(name, env), None) for name in SOLO_OPPONENTS]
    summary = game_kit(env.id).score_summary
    key = jax.random.key(seed)  # the same key for all: the same starting positions
    for name, player, params in players:
        result = make_solo(env, player, games)(params, key)
        line = f"{name}: {result}, {result.lengths.mean():.0f} moves a game"
        if summary is not None:
            line += f"; {summary(result)}"
        console.print(line, highlight=False, soft_wrap=True)


def _round_robin(
    loaded: Loaded,
    opponents: str,
    games: int,
    simulations: int | None,
    seed: int,
    sgf: Path | None,
    written: list[Path],
) -> RoundRobin:
    """Build the entrants of the loaded checkpoints and play ``jaxzero eval``'s round
    robin; with ``sgf``, every game is written there (the files appended to ``written``)."""
    from jaxzero.measure import round_robin
    from jaxzero.run.folder import nolink
    from jaxzero.run.folder.layout import ELO_FILE

    names = round_robin.parse_opponents(opponents)
    if games < 2 or games % 2:
        raise UsageError(f"--games must be an even number >= 2, got {games}")
    if simulations is not None and simulations < 1:
        raise UsageError(f"--simulations must be >= 1, got {simulations}")
    for run in dict.fromkeys(run for _, _, run in loaded if run is not None):
        nolink.check(run, run / ELO_FILE)  # before hours of games: no link, writable
        nolink.check_writable(run, run, "the ratings (elo.json)")
    env = loaded[0][1].env
    on_games = None if sgf is None else _sgf_writer(env, sgf, written)
    entrants = [
        round_robin.Entrant(
            name, agent.search_player(simulations), agent.params, run, agent.iteration
        )
        for name, agent, run in loaded
    ]
    entrants += round_robin.fixed_entrants(env, names)

    def show(a: str, b: str, result: MatchResult) -> None:
        console.print(f"{a} vs {b}: {result}", highlight=False)

    return round_robin.run_round_robin(
        env, entrants, games=games, seed=seed, on_result=show, on_games=on_games
    )


def _sgf_writer(env: Env, sgf: Path, written: list[Path]) -> GamesCallback:
    """``on_games`` of the round robin writing each pairing's games as SGF (Go only)."""
    from jaxzero.go import records

    try:
        records.require_go(env, "--sgf game records")
    except ValueError as error:
        raise UsageError(str(error)) from None

    def write(a: str, b: str, games: tuple) -> None:
        outcome, seat, actions, final = games
        found = records.match_records(env, actions, seat, outcome, final, (a, b))
        written.extend(records.write_records(found, sgf, prefix=f"{a}_vs_{b}"))

    return write
