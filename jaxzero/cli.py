"""The ``jaxzero`` command line: train, play, eval, analyze, gtp, report.

Errors a user can fix (unknown game or option, a run directory in the way, a damaged
checkpoint) print one line saying what is wrong and how to fix it, and exit with 2.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

app = typer.Typer(
    pretty_exceptions_enable=False,
    add_completion=False,
    no_args_is_help=True,
    help="jaxzero: AlphaZero in JAX. Train an agent, play against it, measure it.",
)
console = Console(stderr=True)

DEFAULT_GAME = "connect_four"


@app.callback()
def _commands() -> None:
    """jaxzero: AlphaZero in JAX. Train an agent, play against it, measure it."""


class UsageError(Exception):
    """A mistake the user can fix; printed as one line."""


def _fail(message: str) -> None:
    console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(2)


SearchSettings = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        metavar="KEY=VALUE",
        help="Play with a search.* setting changed, e.g. search.average_symmetries=true",
    ),
]


def _game_ids(name: str) -> tuple[str, ...]:
    """The games a name on the command line stands for: its preset's game (what ``jaxzero
    train NAME`` trains, e.g. star_duel -> star_duel_short), then the game of that id."""
    import envs
    from jaxzero.core.config import PRESETS

    games = [PRESETS[name].game] if name in PRESETS else []
    games += [name] if name in envs.available() and name not in games else []
    if games:
        return tuple(games)
    raise UsageError(
        f"unknown game {name!r}; choose a preset ({', '.join(sorted(PRESETS))}) "
        f"or a game ({', '.join(envs.available())})"
    )


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
            help="Game preset (default connect_four), then config overrides such as "
            "search.num_simulations=16",
        ),
    ] = None,
    out: Annotated[Path | None, typer.Option(help="Run directory [default: runs/GAME]")] = None,
    seconds: Annotated[float | None, typer.Option(help="Stop after this many seconds")] = None,
    iterations: Annotated[
        int | None, typer.Option(help="Stop when the run reaches this many iterations")
    ] = None,
    resume: Annotated[bool, typer.Option(help="Continue the run in the run directory")] = False,
    force: Annotated[bool, typer.Option(help="Delete the run directory and start over")] = False,
    sgf: Annotated[
        Path | None, typer.Option(help="Write every finished self-play game here as SGF (Go)")
    ] = None,
) -> None:
    """Train an agent by self-play. With no arguments: Connect Four, default preset."""
    from jaxzero.core import config as config_lib
    from jaxzero.run.checkpoint import CheckpointError
    from jaxzero.run.driver import RunDirError
    from jaxzero.run.driver import train as run_training

    args = list(args or [])
    game = args.pop(0) if args and "=" not in args[0] else DEFAULT_GAME
    run_dir = out if out is not None else Path("runs") / game
    try:
        if seconds is not None and not seconds > 0:
            raise UsageError(f"--seconds must be > 0, got {seconds:g}")
        if iterations is not None and iterations < 1:
            raise UsageError(f"--iterations must be >= 1, got {iterations}")
        parsed = config_lib.parse_key_values(args, example="search.num_simulations=16")
        if resume:
            if parsed:
                raise UsageError("overrides cannot change a run being resumed; drop them")
            config = None
        else:
            config = config_lib.apply_overrides(config_lib.get_preset(game), parsed)
    except (UsageError, ValueError) as error:
        _fail(str(error))

    def show(metrics: dict[str, float]) -> None:
        console.print(_progress_line(metrics), highlight=False)

    console.print(f"training {game} in {run_dir} (Ctrl-C stops and saves a checkpoint)")
    try:
        result = run_training(
            run_dir,
            config,
            seconds=seconds,
            iterations=iterations,
            resume=resume,
            force=force,
            on_log=show,
            sgf=sgf,
        )
    except (RunDirError, CheckpointError, ValueError) as error:
        _fail(str(error))
    how = "interrupted" if result.interrupted else "stopped"
    console.print(
        f"{how} at iteration {result.iterations} after {result.seconds:.0f}s; "
        f"checkpoint saved in {run_dir / 'checkpoints'}"
    )
    console.print(f"resume:  jaxzero train --resume --out {run_dir}")
    console.print(f"play:    jaxzero play --checkpoint {run_dir}")


@app.command()
def play(
    game: Annotated[
        str | None, typer.Argument(help="Game or preset (default: the checkpoint's)")
    ] = None,
    checkpoint: Annotated[
        Path | None, typer.Option(help="Run directory or checkpoint [default: runs/GAME]")
    ] = None,
    human: Annotated[str, typer.Option(help="Play first or second")] = "first",
    simulations: Annotated[
        int | None, typer.Option(help="Search simulations per agent move")
    ] = None,
    search: Annotated[str | None, typer.Option(help="gumbel or puct")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the game's randomness")] = 0,
    set_: SearchSettings = None,
) -> None:
    """Play a game against a trained agent (works through a pipe too)."""
    from jaxzero.play import InputEnded, play_game
    from jaxzero.run.agent import load_agent
    from jaxzero.run.checkpoint import CheckpointError

    if human not in ("first", "second"):
        _fail(f"--human must be first or second, not {human!r}")
    try:
        wanted = () if game is None else _game_ids(game)
    except UsageError as error:
        _fail(str(error))
    if checkpoint is None:
        if game is None:
            _fail("say which agent to play: jaxzero play GAME, or --checkpoint RUN_DIR")
        checkpoint = Path("runs") / game
        if not checkpoint.exists():
            _fail(
                f"no agent in {checkpoint}: train one with `jaxzero train {game}`, "
                "or pass --checkpoint RUN_DIR"
            )
    try:
        agent = load_agent(checkpoint, search=_search_settings(set_))
    except CheckpointError as error:
        _fail(str(error))
    if wanted and agent.config.game not in wanted:
        _fail(f"{checkpoint} holds a {agent.config.game} agent, not {' or '.join(wanted)}")
    try:
        play_game(
            agent.env,
            agent,
            human=0 if human == "first" else 1,
            num_simulations=simulations or agent.config.search.eval_simulations,
            search=search or agent.config.search.kind,
            seed=seed,
            stdin=sys.stdin,
            stdout=sys.stdout,
        )
    except InputEnded as error:
        _fail(str(error))
    except ValueError as error:
        _fail(str(error))


@app.command()
def gtp(
    checkpoint: Annotated[Path, typer.Option(help="Run directory or checkpoint of a Go agent")],
    simulations: Annotated[int | None, typer.Option(help="Search simulations per move")] = None,
    search: Annotated[str | None, typer.Option(help="gumbel or puct")] = None,
    resign: Annotated[
        float, typer.Option(help="Resign when the value estimate is below this")
    ] = -0.95,
    set_: SearchSettings = None,
) -> None:
    """Speak the Go Text Protocol on stdin/stdout (for GoGui, Sabaki, GNU Go, gomill)."""
    from jaxzero.go.gtp import GtpEngine
    from jaxzero.run.agent import load_agent
    from jaxzero.run.checkpoint import CheckpointError

    try:
        engine = GtpEngine(
            load_agent(checkpoint, search=_search_settings(set_)),
            num_simulations=simulations,
            search=search,
            resign_threshold=resign,
        )
    except (CheckpointError, ValueError) as error:
        _fail(str(error))
    engine.serve(sys.stdin, sys.stdout)


@app.command()
def report(run_dir: Annotated[Path, typer.Argument(help="A run directory")]) -> None:
    """Write figures (PNG) and a markdown summary of a run into RUN_DIR/report."""
    from jaxzero.run.report import ReportError, write_report

    try:
        out = write_report(run_dir)
    except ReportError as error:
        _fail(str(error))
    console.print(f"report written to {out / 'summary.md'}")


@app.command(name="eval")
def eval_(
    paths: Annotated[
        list[Path],
        typer.Argument(
            metavar="RUN_OR_CKPT",
            help="Run directories (all their checkpoints) or checkpoints RUN/checkpoints/N",
        ),
    ],
    opponents: Annotated[
        str, typer.Option(help="Fixed opponents, comma-separated (random is always in)")
    ] = "random,one_ply,pure_mcts",
    games: Annotated[int, typer.Option(help="Games per pairing (even)")] = 100,
    simulations: Annotated[
        int | None, typer.Option(help="Search simulations per move [default: eval_simulations]")
    ] = None,
    every: Annotated[int, typer.Option(help="Take every K-th checkpoint of a run")] = 1,
    seed: Annotated[int, typer.Option(help="Seed of the openings and opponents")] = 0,
    sgf: Annotated[
        Path | None, typer.Option(help="Go: write every game into this directory as SGF")
    ] = None,
    set_: SearchSettings = None,
) -> None:
    """Round robin between checkpoints and fixed opponents; Elo table (random = 0).

    Writes RUN/elo.json into each run directory, which `jaxzero report` plots; an earlier
    RUN/elo.json is renamed RUN/elo-DATE-TIME.json first, never overwritten.

    Go: --sgf DIR also writes every game there as SGF (A_vs_B_001.sgf, ...) for Sabaki."""
    from jaxzero.measure import elo
    from jaxzero.measure import round_robin as ladder
    from jaxzero.run.checkpoint import CheckpointError

    def show(a: str, b: str, result) -> None:
        console.print(f"{a} vs {b}: {result}", highlight=False)

    try:
        names = ladder.parse_opponents(opponents)
        search = _search_settings(set_)
        result = ladder.run_ladder(
            paths,
            names,
            games=games,
            simulations=simulations,
            every=every,
            seed=seed,
            sgf_dir=sgf,
            on_result=show,
            search=search,
        )
    except (ladder.LadderError, CheckpointError, ValueError) as error:
        _fail(str(error))
    print(elo.format_table(result.ratings))
    for path, kept in ladder.write_elo_files(result):
        console.print(f"ratings written to {path}", highlight=False)
        if kept is not None:
            console.print(f"the previous ratings are kept as {kept}", highlight=False)
    if sgf is not None:
        console.print(
            f"{len(result.sgf_files)} games written to {sgf} as SGF",
            highlight=False,
            soft_wrap=True,
        )


@app.command()
def analyze(
    game: Annotated[str, typer.Argument(help="Game or preset, e.g. tic_tac_toe")],
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
        typer.Option(help="Run directory or checkpoint [default: runs/GAME, else untrained]"),
    ] = None,
    simulations: Annotated[
        int | None, typer.Option(help="Search simulations [default: eval_simulations]")
    ] = None,
    search: Annotated[str | None, typer.Option(help="gumbel or puct")] = None,
    dot: Annotated[Path | None, typer.Option(help="Write the search tree as Graphviz")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the search and of chance events")] = 0,
    set_: SearchSettings = None,
) -> None:
    """Show a position and the root of a search over it: prior, visits, Q per move.

    The position: the game after --moves, or (Go) the end of an SGF record's main line."""
    import dataclasses

    import jax

    import envs
    from jaxzero import analysis
    from jaxzero.run.agent import load_agent
    from jaxzero.run.checkpoint import CheckpointError

    try:
        wanted = _game_ids(game)
        if sgf is not None:  # a bad record is reported before any network is loaded
            if moves:
                raise UsageError("give --moves or --sgf, not both")
            sgf_env = envs.make(wanted[0])
            state, record = analysis.position_from_sgf(sgf_env, sgf)
        if checkpoint is None and (Path("runs") / game).exists():
            checkpoint = Path("runs") / game
        if checkpoint is not None:
            agent = load_agent(checkpoint, search=_search_settings(set_))
            if agent.config.game not in wanted:
                raise UsageError(
                    f"{checkpoint} holds a {agent.config.game} agent, not {' or '.join(wanted)}"
                )
            config, env, params, apply_fn = agent.config, agent.env, agent.params, agent.apply_fn
            source = f"{checkpoint} (iteration {agent.iteration})"
        else:
            config, env, params, apply_fn = _untrained(game, seed)
            source = "an untrained network (pass --checkpoint RUN for a trained one)"
        search_config = config.search
        if search is not None:
            if search not in ("gumbel", "puct"):
                raise UsageError(f"--search must be gumbel or puct, not {search!r}")
            search_config = dataclasses.replace(search_config, kind=search)
        sims = search_config.eval_simulations if simulations is None else simulations
        if sims < 1:
            raise UsageError(f"--simulations must be >= 1, got {sims}")
        key = jax.random.key(seed)
        if sgf is not None:
            if env != sgf_env:
                state, record = analysis.position_from_sgf(env, sgf)
            setup = len(record.black_setup) + len(record.white_setup)
            stones = f" after {setup} setup stone{'s' * (setup > 1)}" if setup else ""
            console.print(
                f"{sgf}: {len(record.moves)} moves{stones}; komi {record.komi:g} in the "
                f"record, {env.komi:g} in the search",
                highlight=False,
                soft_wrap=True,
            )
        else:
            state = analysis.position_from_moves(env, moves, key)
        root = analysis.analyze_position(params, state, search_config, env, apply_fn, sims, key)
    except (UsageError, CheckpointError, ValueError) as error:
        _fail(str(error))
    try:
        picture = env.render(state)
    except TypeError:
        picture = f"(no text picture for {game})"
    print(picture)
    print(
        f"player {int(state.current_player)} to move; {source}; {sims} {search_config.kind} "
        f"simulations"
    )
    print(analysis.format_root(root, env))
    if dot is not None:
        dot.write_text(analysis.tree_to_dot(root.tree, env))
        console.print(f"search tree written to {dot}", highlight=False)


def _untrained(game: str, seed: int):
    """(config, env, params, apply_fn) of a freshly initialised network for ``game``."""
    import jax

    import envs
    from jaxzero.core import config as config_lib
    from jaxzero.core import networks

    try:
        config = config_lib.get_preset(game)
    except ValueError:
        config = config_lib.Config(game=game)
    env = envs.make(config.game)
    network = networks.make_network(config.network, env)
    params = networks.init_params(network, env, jax.random.key(seed))
    return config, env, params, networks.make_apply_fn(network)


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
    for name, label in [("eval/vs_random", "vs random"), ("eval/vs_one_ply", "vs one-ply")]:
        if name in m:
            parts.append(f"{label} {m[name]:.2f}")
    return "  ".join(parts)


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
