"""The ``jaxzero`` command line: train, play, eval, analyze, gtp, export, report.

Errors a user can fix (unknown game or option, a run directory in the way, a damaged
checkpoint) print one line saying what is wrong and how to fix it, and exit with 2.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperGroup


class _OneLineErrors(TyperGroup):
    """Usage errors (an unknown option, a value of the wrong type or range) as one
    ``error:`` line naming the command's help, exit code 2, like every other error."""

    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:
        try:
            result = super().main(*args, standalone_mode=False, **kwargs)
        except typer.TyperException as error:
            if not standalone_mode:
                raise
            context = getattr(error, "ctx", None)
            command = context.command_path if context is not None else "jaxzero"
            message = " ".join(error.format_message().split())
            if message:  # (none when the help was shown for a bare command)
                _print_error(f"{message} (see `{command} --help`)")
            sys.exit(getattr(error, "exit_code", 2))
        except typer.Abort:
            if not standalone_mode:
                raise
            sys.exit(130)
        if standalone_mode:
            sys.exit(result if isinstance(result, int) else 0)
        return result


app = typer.Typer(
    cls=_OneLineErrors,
    pretty_exceptions_enable=False,
    add_completion=False,
    no_args_is_help=True,
    help="jaxzero: AlphaZero in JAX. Train an agent, play against it, measure it.",
)
console = Console(stderr=True)

DEFAULT_GAME = "connect_four"
GTP_AGENT = "go_6x6"  # `jaxzero gtp` without --checkpoint: the shipped Go 6x6 agent


@app.callback()
def _commands(
    compile_cache: Annotated[
        str | None,
        typer.Option(
            help="Folder of JAX's persistent compilation cache, or 'off' [default: "
            "$JAXZERO_COMPILE_CACHE, else ~/.cache/jaxzero/xla]",
        ),
    ] = None,
) -> None:
    """jaxzero: AlphaZero in JAX. Train an agent, play against it, measure it."""
    from jaxzero.run.compile_cache import enable_compile_cache

    # orbax logs each failure it then raises, with tracebacks; the raised error is
    # reported here in one line, so its log is noise to a user of the command line.
    logging.getLogger("absl").setLevel(logging.CRITICAL)
    try:
        enable_compile_cache(compile_cache)  # a second identical run reads its programs back
    except ValueError as error:
        _fail(str(error))


class UsageError(Exception):
    """A mistake the user can fix; printed as one line."""


def _print_error(message: str) -> None:
    console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)


def _fail(message: str) -> None:
    _print_error(message)
    raise typer.Exit(2)


SEED_MAX = 2**32 - 1


def _search_kind(kind: str | None) -> str | None:
    """``--search``: a registered search or an import path, checked before any loading."""
    if kind is None:
        return None
    from jaxzero.core.imports import is_import_path
    from jaxzero.core.policies import search_kinds

    if kind not in search_kinds() and not is_import_path(kind):
        raise typer.BadParameter(
            f"unknown search {kind!r}; choose {', '.join(search_kinds())}, or module:factory"
        )
    return kind


SearchKind = Annotated[
    str | None,
    typer.Option(
        help="Search: gumbel, puct, a registered name or module:factory [default: the run's]",
        callback=_search_kind,
    ),
]
SearchSettings = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        metavar="KEY=VALUE",
        help="Play with a search.* or evaluation.* setting changed, e.g. "
        "evaluation.average_symmetries=true",
    ),
]
TrustCodeOption = Annotated[
    bool,
    typer.Option(
        "--trust-code",
        help="Import the code that the run or agent folder names (a module:attribute game, "
        "network or search function): only for folders from someone you trust",
    ),
]


def _trusted(trust_code: bool, *named: str | None) -> bool | list[str]:
    """``load_agent``'s ``trust_code``: everything, or the import paths typed on this call."""
    return True if trust_code else [name for name in named if name]


def _check_game(name: str) -> str:
    """``name`` itself if it names a game (a registered id, a family's ``pgx/ID``, or
    ``module:Class``); UsageError saying why not otherwise."""
    import envs
    from jaxzero.core.presets import PRESETS

    if name in envs.available():
        return name
    try:
        envs.make(name)
    except (ValueError, ImportError, TypeError) as error:
        if "/" in name or ":" in name:  # a family's or an import path's own reason
            raise UsageError(str(error)) from None
        raise UsageError(
            f"unknown game {name!r}; choose a preset ({', '.join(sorted(PRESETS))}), a "
            f"game ({', '.join(envs.available())}), or your own Env as module:Class"
        ) from None
    return name


def _game_config(game: str):
    """The config a new run of ``game`` starts from: its preset, else
    ``jaxzero.default_config`` of the game (UsageError for an unknown game)."""
    import dataclasses

    import envs
    from jaxzero.core import presets
    from jaxzero.core.defaults import default_config

    if game in presets.PRESETS:
        return presets.get_preset(game)
    env = envs.make(_check_game(game))
    return dataclasses.replace(default_config(env), game=game)


def _run_name(game: str) -> str:
    """The folder under runs/ of a game's run: its id (a ``module:Class`` game's env id)."""
    if ":" not in game:
        return game
    import envs

    try:
        return envs.make(game).id
    except (ValueError, ImportError, TypeError) as error:
        raise UsageError(str(error)) from None


def _search_settings(items: list[str] | None) -> dict[str, str]:
    from jaxzero.run.agent import parse_settings

    try:
        return parse_settings(items or [])
    except ValueError as error:
        _fail(str(error))


@app.command()
def train(
    args: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[GAME] [KEY=VALUE]...",
            help="Game (default connect_four): a registered id (its preset, else a default "
            "config) or your own Env as module:Class; then config overrides such as "
            "search.num_simulations=16",
        ),
    ] = None,
    out: Annotated[Path | None, typer.Option(help="Run directory [default: runs/GAME]")] = None,
    seconds: Annotated[float | None, typer.Option(help="Stop after this many seconds")] = None,
    iterations: Annotated[
        int | None, typer.Option(min=1, help="Stop when the run reaches this many iterations")
    ] = None,
    resume: Annotated[bool, typer.Option(help="Continue the run in the run directory")] = False,
    force: Annotated[bool, typer.Option(help="Delete the run directory and start over")] = False,
    sgf: Annotated[
        Path | None, typer.Option(help="Write every finished self-play game here as SGF (Go)")
    ] = None,
    seeds: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Train this many seeds (seed, seed+1, ...) as one population, one compiled "
            "program; each member is RUN/members/K",
        ),
    ] = None,
    grid: Annotated[
        list[str] | None,
        typer.Option(
            help="KEY=V1,V2,... a hyperparameter's values, crossed with the seeds (repeat "
            "for several keys), e.g. optim.learning_rate=1e-3,2e-3",
        ),
    ] = None,
    trust_code: TrustCodeOption = False,
) -> None:
    """Train an agent by self-play. With no arguments: Connect Four, default preset."""
    from jaxzero.core.trust import imported_code
    from jaxzero.run.checkpoint import CheckpointError
    from jaxzero.run.driver import RunDirError, load_run_config
    from jaxzero.run.driver import train as run_training
    from jaxzero.run.files import FileProblem

    args = list(args or [])
    named = bool(args) and "=" not in args[0]
    game = args.pop(0) if named else DEFAULT_GAME
    try:
        run_dir = out if out is not None else Path("runs") / _run_name(game)
        config = _train_config(game, args, seconds, iterations, resume)
        trust = _trusted(trust_code, game if named else None)
        if resume:
            game = _resumed_game(run_dir, game if named else None, trust)
        population = _population(config, seeds, grid or [], resume, sgf)
        hooks = _sgf_hooks(sgf, config, run_dir) if sgf is not None else []
    except (UsageError, RunDirError, ValueError) as error:
        _fail(str(error))
    console.print(f"training {game} in {run_dir} (Ctrl-C stops and saves a checkpoint)")
    try:
        result = run_training(
            run_dir,
            config,
            seconds=seconds,
            iterations=iterations,
            resume=resume,
            force=force,
            on_log=lambda metrics: console.print(_progress_line(metrics), highlight=False),
            hooks=hooks,
            trust_code=trust,
            **population,
        )
    except (RunDirError, CheckpointError, FileProblem, ValueError) as error:
        _fail(str(error))
    how = "interrupted" if result.interrupted else "stopped"
    console.print(
        f"{how} at iteration {result.iterations} after {result.seconds:.0f}s; "
        f"checkpoint saved in {run_dir / 'checkpoints'}"
    )
    # A run naming the user's own code loads it only when told to (jaxzero.core.trust).
    trust = " --trust-code" if imported_code(load_run_config(run_dir)) else ""
    console.print(f"resume:  jaxzero train --resume --out {run_dir}{trust}")
    if (run_dir / "population.json").exists():
        console.print(f"report:  jaxzero report {run_dir}   (each arm across its seeds)")
        run_dir = run_dir / "members" / "0"
    console.print(f"play:    jaxzero play --checkpoint {run_dir}{trust}")
    if result.interrupted:  # saved and stopped: the shell still learns it was a signal
        raise typer.Exit(128 + (result.signal or 2))


def _train_config(game, overrides, seconds, iterations, resume):
    """The config of a new run (None when resuming); UsageError / ValueError for a bad
    budget, override or game, before anything is written."""
    from jaxzero.core import config as config_lib

    if seconds is not None and not seconds > 0:
        raise UsageError(f"--seconds must be > 0, got {seconds:g}")
    parsed = config_lib.parse_key_values(overrides, example="search.num_simulations=16")
    if resume:
        if parsed:
            raise UsageError("overrides cannot change a run being resumed; drop them")
        return None
    return config_lib.apply_overrides(_game_config(game), parsed)


def _population(config, seeds: int | None, grid: list[str], resume: bool, sgf) -> dict:
    """``train``'s ``seeds`` and ``hyper`` for ``--seeds N`` and ``--grid KEY=V1,V2``:
    every grid point crossed with N seeds (config.seed, config.seed + 1, ...), grid-major.
    {} for a single run; UsageError when they cannot go with the other options."""
    import itertools

    from jaxzero.core import config as config_lib
    from jaxzero.core.population import check_hyperparameter

    if seeds is None and not grid:
        return {}
    if resume:
        raise UsageError("--seeds and --grid define a new population; a resumed one keeps its own")
    if sgf is not None:
        raise UsageError("--sgf records one run's games; it cannot go with --seeds or --grid")
    points: dict[str, list[float]] = {}
    example = "optim.learning_rate=1e-3,2e-3"
    keys = [config_lib.parse_key_values([item], "--grid", example).popitem()[0] for item in grid]
    repeated = sorted({key for key in keys if keys.count(key) > 1})
    if repeated:  # else the last would silently win
        raise UsageError(f"--grid {repeated[0]} is given twice: list its values once, K=V1,V2,...")
    for key, text in config_lib.parse_key_values(grid, "--grid", example).items():
        check_hyperparameter(key)
        values = [v.strip() for v in text.split(",")]
        if not any(values):
            raise UsageError(f"--grid {key}= names no value: give KEY=V1,V2,... ({example})")
        if not all(values):  # "1e-3,,2e-3": a value lost to a typo
            raise UsageError(f"--grid {key}={text} has an empty value: give KEY=V1,V2,...")
        section, name = key.split(".")
        parsed = [config_lib.apply_overrides(config, {key: v}) for v in values]  # checked
        points[key] = [getattr(getattr(c, section), name) for c in parsed]
    count = seeds or 1
    if config.seed + count - 1 > config_lib.MAX_SEED:  # jax.random.key(2**32) is key(0)
        raise UsageError(
            f"--seeds {count} from seed {config.seed} reaches seed {config.seed + count - 1}, "
            f"past {config_lib.MAX_SEED} (jax.random.key's range): give a lower seed"
        )
    crossed = list(itertools.product(*points.values())) or [()]
    members = [(point, config.seed + s) for point in crossed for s in range(count)]
    hyper = {key: [point[i] for point, _ in members] for i, key in enumerate(points)}
    return {"seeds": [seed for _, seed in members], "hyper": hyper}


def _resumed_game(run_dir: Path, game: str | None, trust_code: bool | list[str]) -> str:
    """The game of the run ``jaxzero train [GAME] --resume`` continues; UsageError when
    there is none or GAME names another, UntrustedCode (a ValueError) when its config
    names code not trusted (before anything, ``--sgf``'s game check included, imports it)."""
    from jaxzero.core.trust import check_trusted
    from jaxzero.run.config_file import CONFIG_FILE
    from jaxzero.run.driver import holds_run, load_run_config, refuse_foreign

    if not holds_run(run_dir):
        raise UsageError(f"nothing to resume in {run_dir}: start a new run without --resume")
    refuse_foreign(run_dir)
    config = load_run_config(run_dir)
    check_trusted(config, run_dir / CONFIG_FILE, trust_code=trust_code)
    held = config.game
    if game is not None and held != game:
        raise UsageError(
            f"{run_dir} holds a {held} run, not {game}: drop the game to resume it "
            f"(jaxzero train --resume --out {run_dir})"
        )
    return held


def _sgf_hooks(sgf: Path, config, run_dir: Path) -> list:
    """The self-play recorder of ``--sgf`` (Go only: refused before anything is written)."""
    import envs
    from jaxzero.go.records import SelfPlayRecorder, require_go
    from jaxzero.run.driver import load_run_config

    if config is None:
        config = load_run_config(run_dir)
    env = require_go(envs.make(config.game), "self-play SGF records")
    return [SelfPlayRecorder(env, sgf)]


def _load(checkpoint: Path, settings: list[str] | None, trust_code: bool, game: str | None = None):
    """The agent of ``checkpoint`` with ``--set`` settings, importing only the code that
    ``--trust-code`` or the typed ``game`` allows; UsageError if it plays another game
    than ``game``."""
    from jaxzero.run.agent import load_agent

    trust = _trusted(trust_code, game)
    agent = load_agent(checkpoint, settings=_search_settings(settings), trust_code=trust)
    if game is not None and game not in (agent.config.game, agent.env.id):
        raise UsageError(f"{checkpoint} holds a {agent.config.game} agent, not {game}")
    return agent


@app.command()
def play(
    game: Annotated[str | None, typer.Argument(help="Game (default: the checkpoint's)")] = None,
    checkpoint: Annotated[
        Path | None,
        typer.Option(
            help="Run directory, checkpoint or agent folder [default: runs/GAME, else "
            "the shipped agent of GAME]"
        ),
    ] = None,
    human: Annotated[
        Literal["first", "second"], typer.Option(help="Play first or second")
    ] = "first",
    simulations: Annotated[
        int | None, typer.Option(min=1, help="Search simulations per agent move")
    ] = None,
    search: SearchKind = None,
    seed: Annotated[
        int, typer.Option(min=0, max=SEED_MAX, help="Seed of the game's randomness")
    ] = 0,
    set_: SearchSettings = None,
    trust_code: TrustCodeOption = False,
) -> None:
    """Play a game against a trained agent (works through a pipe too).

    Without --checkpoint, GAME's agent is your own run in runs/GAME (the folder
    `jaxzero train GAME` writes, relative to where you are), else the shipped one; like
    every folder, it imports no code it names without --trust-code."""
    from jaxzero.play import InputEnded, play_game
    from jaxzero.run.checkpoint import CheckpointError

    try:
        if game is not None:
            _check_game(game)
        checkpoint = checkpoint or _default_agent(game)
        agent = _load(checkpoint, set_, trust_code, game)
        player = agent.search_player(simulations, search)
    except (UsageError, CheckpointError, ValueError) as error:
        _fail(str(error))
    _say_which(checkpoint, agent)
    for stream in (sys.stdin, sys.stdout):  # bytes the locale cannot decode: an invalid move
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="replace")
    try:
        play_game(
            agent,
            player,
            human=0 if human == "first" else 1,
            seed=seed,
            stdin=sys.stdin,
            stdout=sys.stdout,
        )
    except (InputEnded, ValueError) as error:
        _fail(str(error))


def _default_agent(game: str | None) -> Path:
    """The agent ``jaxzero play GAME`` plays: the user's own ``runs/GAME`` if it exists,
    else the one shipped in the package for GAME."""
    from jaxzero.run.agent_files import shipped_agent

    if game is None:
        raise UsageError("say which agent to play: jaxzero play GAME, or --checkpoint RUN_DIR")
    run = Path("runs") / _run_name(game)
    if run.exists():
        return run
    shipped = shipped_agent(game)
    if shipped is None:
        raise UsageError(
            f"no agent in {run} and none shipped for {game}: train one with "
            f"`jaxzero train {game}`, or pass --checkpoint RUN_DIR"
        )
    return shipped


def _say_which(checkpoint: Path, agent) -> None:
    """One line on stderr naming the agent a command plays with."""
    from jaxzero.run.agent_files import describe, find_agent

    console.print(
        f"agent: {describe(find_agent(checkpoint))}, iteration {agent.iteration}",
        highlight=False,
        soft_wrap=True,
    )


@app.command()
def gtp(
    checkpoint: Annotated[
        Path | None,
        typer.Option(
            help="Run directory, checkpoint or agent folder of a Go agent [default: "
            f"runs/{GTP_AGENT}, else the shipped {GTP_AGENT} agent]"
        ),
    ] = None,
    simulations: Annotated[
        int | None, typer.Option(min=1, help="Search simulations per move")
    ] = None,
    search: SearchKind = None,
    resign: Annotated[
        float,
        typer.Option(min=-1.0, max=1.0, help="Resign when the value estimate is below this"),
    ] = -0.95,
    set_: SearchSettings = None,
    trust_code: TrustCodeOption = False,
) -> None:
    """Speak the Go Text Protocol on stdin/stdout (for GoGui, Sabaki, GNU Go, gomill)."""
    from jaxzero.go.gtp import GtpEngine
    from jaxzero.run.checkpoint import CheckpointError

    try:
        checkpoint = checkpoint or _default_agent(GTP_AGENT)
        agent = _load(checkpoint, set_, trust_code)
        engine = GtpEngine(
            agent, num_simulations=simulations, search=search, resign_threshold=resign
        )
    except (UsageError, CheckpointError, ValueError) as error:
        _fail(str(error))
    _say_which(checkpoint, agent)  # stderr: stdout speaks only GTP
    engine.serve(sys.stdin, sys.stdout)


@app.command()
def export(
    checkpoint: Annotated[
        Path, typer.Argument(help="Run directory (latest checkpoint) or RUN/checkpoints/N")
    ],
    out: Annotated[Path, typer.Option(help="New folder to write the agent into")],
    trust_code: TrustCodeOption = False,
) -> None:
    """Write a run's playing network as a small agent folder: config, parameters and a
    model card. `jaxzero play/eval/analyze/gtp --checkpoint FOLDER` and
    `jaxzero.load_agent(FOLDER)` read it."""
    from jaxzero.run.agent import export_agent
    from jaxzero.run.checkpoint import CheckpointError

    try:
        agent = export_agent(checkpoint, out, trust_code=trust_code)
    except FileExistsError:
        _fail(f"{out} already exists: pick a new --out folder (nothing was written)")
    except (CheckpointError, ValueError) as error:
        _fail(str(error))
    size = sum(f.stat().st_size for f in out.iterdir())
    console.print(
        f"exported {checkpoint} (iteration {agent.iteration}) into {out}: {size / 1e3:.0f} kB; "
        f"its model card is {out / 'MODEL_CARD.md'}",
        highlight=False,
        soft_wrap=True,
    )


@app.command()
def report(run_dir: Annotated[Path, typer.Argument(help="A run directory")]) -> None:
    """Write figures (PNG) and a markdown summary of a run into RUN_DIR/report."""
    from jaxzero.run.report import ReportError, write_report

    try:
        out = write_report(run_dir)
    except ReportError as error:
        _fail(str(error))
    console.print(f"report written to {out / 'summary.md'}", highlight=False)


@app.command(name="eval")
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
    from jaxzero.run.checkpoint import CheckpointError
    from jaxzero.run.elo_files import write_elo_files
    from jaxzero.run.files import FileProblem, os_reason

    written: list[Path] = []
    try:
        from jaxzero.run.agent import load_agents

        settings = _search_settings(set_)
        loaded = load_agents(paths, every=every, settings=settings, trust_code=trust_code)
        _check_games_fit(loaded, simulations, games)
        if loaded[0][1].env.num_players == 1:
            _solo_eval(loaded, games, simulations, seed)
            return
        table = _round_robin(loaded, opponents, games, simulations, seed, sgf, written)
    except (UsageError, RoundRobinError, CheckpointError, FileProblem, ValueError) as error:
        _fail(str(error))
    print(format_table(table.ratings))
    try:
        files = write_elo_files(table)
    except OSError as error:
        _fail(f"the ratings above could not be written: {os_reason(error)}")
    for path, kept in files:
        console.print(f"ratings written to {path}", highlight=False)
        if kept is not None:
            console.print(f"the previous ratings are kept as {kept}", highlight=False)
    if sgf is not None:
        console.print(
            f"{len(written)} games written to {sgf} as SGF", highlight=False, soft_wrap=True
        )


def _check_games_fit(loaded, simulations: int | None, games: int) -> None:
    """ValueError unless ``games`` search trees (a match plays its games at once) fit in
    the memory free, at the largest simulation count of the loaded agents."""
    from jaxzero.core.memory import check_search_memory

    sims = max(agent.search_player(simulations).num_simulations for _, agent, _ in loaded)
    setting = "--simulations" if simulations is not None else "evaluation.simulations"
    check_search_memory(loaded[0][1].env, sims, setting, games=games)


def _solo_eval(loaded, games, simulations, seed) -> None:
    """A single-player game's ``jaxzero eval``: each loaded checkpoint's scores beside
    random and greedy play's, printed (no ratings: there is no opponent)."""
    import jax

    from jaxzero.measure.evaluation import SOLO_OPPONENTS
    from jaxzero.measure.games import game_extras
    from jaxzero.measure.opponents import make_opponent
    from jaxzero.measure.solo import make_solo

    env = loaded[0][1].env
    players = [(name, agent.search_player(simulations), agent.params) for name, agent, _ in loaded]
    players += [(name, make_opponent(name, env), None) for name in SOLO_OPPONENTS]
    summary = game_extras(env.id).score_summary
    key = jax.random.key(seed)  # the same key for all: the same starting positions
    for name, player, params in players:
        result = make_solo(env, player, games)(params, key)
        line = f"{name}: {result}, {result.lengths.mean():.0f} moves a game"
        if summary is not None:
            line += f"; {summary(result)}"
        console.print(line, highlight=False, soft_wrap=True)


def _round_robin(loaded, opponents, games, simulations, seed, sgf, written):
    """Build the entrants of the loaded checkpoints and play ``jaxzero eval``'s round
    robin; with ``sgf``, every game is written there (the files appended to ``written``)."""
    from jaxzero.measure import round_robin
    from jaxzero.run.files import check_writable

    names = round_robin.parse_opponents(opponents)
    if games < 2 or games % 2:
        raise UsageError(f"--games must be an even number >= 2, got {games}")
    if simulations is not None and simulations < 1:
        raise UsageError(f"--simulations must be >= 1, got {simulations}")
    for run in dict.fromkeys(run for _, _, run in loaded if run is not None):
        check_writable(run, "the ratings (elo.json)")  # before hours of games
    env = loaded[0][1].env
    on_games = None if sgf is None else _sgf_writer(env, sgf, written)
    entrants = [
        round_robin.Entrant(
            name, agent.search_player(simulations), agent.params, run, agent.iteration
        )
        for name, agent, run in loaded
    ]
    entrants += round_robin.fixed_entrants(env, names)

    def show(a: str, b: str, result) -> None:
        console.print(f"{a} vs {b}: {result}", highlight=False)

    return round_robin.run_round_robin(
        env, entrants, games=games, seed=seed, on_result=show, on_games=on_games
    )


def _sgf_writer(env, sgf: Path, written: list[Path]):
    """``on_games`` of the round robin writing each pairing's games as SGF (Go only)."""
    from jaxzero.go import records

    try:
        records.require_go(env, "--sgf game records")
    except ValueError as error:
        raise UsageError(str(error)) from None

    def write(a: str, b: str, games) -> None:
        outcome, seat, actions, final = games
        found = records.match_records(env, actions, seat, outcome, final, (a, b))
        written.extend(records.write_records(found, sgf, prefix=f"{a}_vs_{b}"))

    return write


@app.command()
def analyze(
    game: Annotated[str, typer.Argument(help="Game, e.g. tic_tac_toe")],
    moves: Annotated[
        str,
        typer.Option(
            help="Moves from the start in the game's notation, separated by spaces or "
            "commas, e.g. '5 1 9' or 'play scout, end'"
        ),
    ] = "",
    sgf: Annotated[
        Path | None,
        typer.Option(help="Go: analyse the position at the end of this SGF record's main line"),
    ] = None,
    checkpoint: Annotated[
        Path | None,
        typer.Option(
            help="Run directory, checkpoint or agent folder [default: runs/GAME, else the "
            "shipped agent of GAME, else untrained]"
        ),
    ] = None,
    simulations: Annotated[
        int | None,
        typer.Option(min=1, help="Search simulations [default: evaluation.simulations]"),
    ] = None,
    search: SearchKind = None,
    dot: Annotated[Path | None, typer.Option(help="Write the search tree as Graphviz")] = None,
    seed: Annotated[
        int, typer.Option(min=0, max=SEED_MAX, help="Seed of the search and of chance events")
    ] = 0,
    set_: SearchSettings = None,
    trust_code: TrustCodeOption = False,
) -> None:
    """Show a position and the root of a search over it: prior, visits, Q per move.

    The position: the game after --moves, or (Go) the end of an SGF record's main line."""
    import jax

    from jaxzero import analysis
    from jaxzero.run.checkpoint import CheckpointError

    key = jax.random.key(seed)
    try:
        agent, source = _analysis_agent(game, moves, sgf, checkpoint, set_, seed, trust_code)
        player = agent.search_player(simulations, search)
        state = _analysis_position(agent.env, moves, sgf, key)
        root = analysis.analyze_position(player, agent.params, state, key)
    except (UsageError, CheckpointError, ValueError) as error:
        _fail(str(error))
    try:
        picture = agent.env.render(state)
    except TypeError:
        picture = f"(no text picture for {game})"
    print(picture)
    print(
        f"player {int(state.current_player)} to move; {source}; {player.num_simulations} "
        f"{search or agent.config.search.kind} simulations"
    )
    print(analysis.format_root(root, agent.env))
    if dot is not None:
        dot.write_text(analysis.tree_to_dot(root.tree, agent.env))
        console.print(f"search tree written to {dot}", highlight=False)


def _analysis_agent(game, moves, sgf, checkpoint, settings, seed, trust_code):
    """(agent, where it comes from) of ``jaxzero analyze``: the checkpoint's, else
    ``runs/GAME``'s, else an untrained network. A bad record fails before any loading."""
    import jax

    import envs
    from jaxzero import analysis
    from jaxzero.run.agent import untrained_agent
    from jaxzero.run.agent_files import describe, find_agent, shipped_agent

    _check_game(game)
    if sgf is not None:
        if moves:
            raise UsageError("give --moves or --sgf, not both")
        analysis.position_from_sgf(envs.make(game), sgf)
    if checkpoint is None and ((Path("runs") / _run_name(game)).exists() or shipped_agent(game)):
        checkpoint = _default_agent(game)
    if checkpoint is not None:
        agent = _load(checkpoint, settings, trust_code, game)
        return agent, f"{describe(find_agent(checkpoint))} (iteration {agent.iteration})"
    config = _game_config(game)
    source = "an untrained network (pass --checkpoint RUN for a trained one)"
    return untrained_agent(config, jax.random.key(seed)), source


def _analysis_position(env, moves: str, sgf: Path | None, key):
    """The position ``jaxzero analyze`` searches: after ``moves``, or at the end of ``sgf``."""
    from jaxzero import analysis

    if sgf is None:
        return analysis.position_from_moves(env, moves, key)
    state, record = analysis.position_from_sgf(env, sgf)
    setup = len(record.black_setup) + len(record.white_setup)
    stones = f" after {setup} setup stone{'s' * (setup > 1)}" if setup else ""
    console.print(
        f"{sgf}: {len(record.moves)} moves{stones}; komi {record.komi:g} in the "
        f"record, {env.komi:g} in the search",
        highlight=False,
        soft_wrap=True,
    )
    return state


def _progress_line(m: dict[str, float]) -> str:
    parts = [f"it {int(m['iteration']):>5}", f"{m['elapsed']:>6.0f}s"]
    for name, label, fmt in [
        ("positions_per_second", "pos/s", ".0f"),
        ("policy_loss", "policy", ".3f"),
        ("value_loss", "value", ".3f"),
        ("kl_search_prior", "KL", ".3f"),
        ("buffer_fill", "buffer", ".0%"),
    ]:
        if name in m:
            parts.append(f"{label} {m[name]:{fmt}}")
    if "arena/score" in m:
        verdict = "promoted" if m.get("arena/promoted") else "kept best"
        parts.append(f"arena {m['arena/score']:.2f} ({verdict})")
    if "eval/raw_optimal" in m:  # the raw policy on the game's solved positions
        parts.append(f"raw optimal {m['eval/raw_optimal']:.1%}")
    for name, label in [("eval/vs_random", "vs random"), ("eval/vs_one_ply", "vs one-ply")]:
        if name in m:
            parts.append(f"{label} {m[name]:.2f}")
    return "  ".join(parts)


def main() -> None:
    from jaxzero.run import signals

    signals.install()  # (already, when started as `jaxzero`: jaxzero.entry)
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
