"""``jaxzero analyze``: a position and the root of a search over it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, cast

import typer

from jaxzero.cli.agents import default_agent, load
from jaxzero.cli.app import UsageError, console, fail
from jaxzero.cli.games import check_game, game_config, run_name
from jaxzero.cli.options import SEED_MAX, SearchKind, SearchSettings, TrustCodeOption

if TYPE_CHECKING:
    from jax import Array

    from envs import Env, State
    from envs.go import Go
    from jaxzero.run.agents.agent import Agent


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
    svg: Annotated[
        Path | None,
        typer.Option(help="Write the position with the search's numbers on it as SVG"),
    ] = None,
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
    from jaxzero.run.life.checkpoint import CheckpointError

    key = jax.random.key(seed)
    try:
        agent, source = _analysis_agent(game, moves, sgf, checkpoint, set_, seed, trust_code)
        player = agent.search_player(simulations, search)
        state = _analysis_position(agent.env, moves, sgf, key)
        root = analysis.analyze_position(player, agent.params, state, key)
    except (UsageError, CheckpointError, ValueError) as error:
        fail(str(error))
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
    written = []
    try:
        if dot is not None:
            dot.write_text(analysis.tree_to_dot(root.tree, agent.env))
            written.append(f"search tree written to {dot}")
        if svg is not None:
            svg.write_text(analysis.root_svg(agent.env, state, root))
            written.append(f"picture written to {svg}")
    except OSError as error:
        fail(f"cannot write {error.filename}: {error.strerror}; give another path")
    for line in written:
        console.print(line, highlight=False, soft_wrap=True)


def _analysis_agent(
    game: str,
    moves: str,
    sgf: Path | None,
    checkpoint: Path | None,
    settings: list[str] | None,
    seed: int,
    trust_code: bool,
) -> tuple[Agent, str]:
    """(agent, where it comes from) of ``jaxzero analyze``: the checkpoint's, else
    ``runs/GAME``'s, else an untrained network. A bad record fails before any loading."""
    import jax

    import envs
    from jaxzero import analysis
    from jaxzero.run.agents.agent import untrained_agent
    from jaxzero.run.agents.agent_files import describe, find_agent, shipped_agent

    check_game(game)
    if sgf is not None:
        if moves:
            raise UsageError("give --moves or --sgf, not both")
        analysis.position_from_sgf(envs.make(game), sgf)
    if checkpoint is None and ((Path("runs") / run_name(game)).exists() or shipped_agent(game)):
        checkpoint = default_agent(game)
    if checkpoint is not None:
        agent = load(checkpoint, settings, trust_code, game)
        return agent, f"{describe(find_agent(checkpoint))} (iteration {agent.iteration})"
    config = game_config(game)
    source = "an untrained network (pass --checkpoint RUN for a trained one)"
    return untrained_agent(config, jax.random.key(seed)), source


def _analysis_position(env: Env, moves: str, sgf: Path | None, key: Array) -> State:
    """The position ``jaxzero analyze`` searches: after ``moves``, or at the end of ``sgf``."""
    from jaxzero import analysis

    if sgf is None:
        return analysis.position_from_moves(env, moves, key)
    state, record = analysis.position_from_sgf(env, sgf)
    go = cast("Go", env)  # position_from_sgf refuses any other game
    setup = len(record.black_setup) + len(record.white_setup)
    stones = f" after {setup} setup stone{'s' * (setup > 1)}" if setup else ""
    console.print(
        f"{sgf}: {len(record.moves)} moves{stones}; komi {record.komi:g} in the "
        f"record, {go.komi:g} in the search",
        highlight=False,
        soft_wrap=True,
    )
    return state
