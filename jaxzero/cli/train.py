"""``jaxzero train``: a new run, a resumed one, or a population of seeds and grid points,
with a progress line per logged iteration."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from jaxzero.cli.app import UsageError, console, fail
from jaxzero.cli.games import game_config, run_name
from jaxzero.cli.options import TrustCodeOption, trusted
from jaxzero.cli.progress import progress_line, wandb_hooks
from jaxzero.run.folder.layout import POPULATION_FILE, member_folder

if TYPE_CHECKING:
    from jaxzero.core.config import Config
    from jaxzero.run.studies.study import Study

DEFAULT_GAME = "connect_four"


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
            "program; each member is RUN/members/K (in a study: RUN/arms/NAME/members/K)",
        ),
    ] = None,
    grid: Annotated[
        list[str] | None,
        typer.Option(
            help="KEY=V1,V2,... a setting's values, crossed with the seeds (repeat for "
            "several keys), e.g. optim.learning_rate=1e-3,2e-3; a key that fixes a shape or "
            "the code (search.kind, simulations, the network) makes a study, an arm a value",
        ),
    ] = None,
    members_at_once: Annotated[
        int | None,
        typer.Option(
            min=0,
            help="A population's members vmapped together on each device (1: one at a "
            "time, 0: all) [default: the fastest, measured once on this machine]",
        ),
    ] = None,
    jobs: Annotated[
        int, typer.Option(min=1, help="A study's arms trained at once, each on its own cores")
    ] = 1,
    arm: Annotated[str | None, typer.Option(hidden=True)] = None,  # one arm of the study at --out
    wandb: Annotated[
        str | None,
        typer.Option(help="Also log to this Weights & Biases project (pip install jaxzero[wandb])"),
    ] = None,
    trust_code: TrustCodeOption = False,
    # the code a study's command line named, for its arms' processes (jaxzero.run.studies.study)
    trusted_code: Annotated[list[str] | None, typer.Option("--trusted", hidden=True)] = None,
) -> None:
    """Train an agent by self-play. With no arguments: Connect Four, default preset."""
    from jaxzero.cli.study import study_command
    from jaxzero.run.folder.files import FileProblem
    from jaxzero.run.life.checkpoint import CheckpointError
    from jaxzero.run.life.driver import RunDirError
    from jaxzero.run.life.driver import train as run_training
    from jaxzero.run.studies.study import is_study

    args = list(args or [])
    named = bool(args) and "=" not in args[0]
    game = args.pop(0) if named else DEFAULT_GAME
    try:
        run_dir = out if out is not None else Path("runs") / run_name(game)
        config = _train_config(game, args, seconds, resume)
        trust = trusted(trust_code, game if named else None, *(trusted_code or []))
        if arm is not None and not is_study(run_dir):
            raise UsageError(f"--arm trains an arm of a study, and {run_dir} holds none")
        budget = {"seconds": seconds, "iterations": iterations}
        arms = (budget, force, members_at_once, trust, jobs, arm, wandb)  # how a study trains
        if (resume or arm is not None) and is_study(run_dir):  # its arms resumed
            return study_command(run_dir, None, *arms)
        if resume:
            game = _resumed_game(run_dir, game if named else None, trust)
        study = _study(config, seeds, grid or [], resume, sgf)
        if study is not None and any(study.arms.values()):  # arms of their own settings
            return study_command(run_dir, study, *arms)
        population = _population_of(study)
        if jobs > 1:  # (a study's arms returned above)
            raise UsageError(
                "--jobs trains a study's arms at once: add --grid KEY=V1,V2 with a setting "
                "that fixes a shape or the code (search.kind=puct,gumbel)"
            )
        if members_at_once is not None and not population and not resume:
            raise UsageError("--members-at-once is for a population: add --seeds N or --grid")
        hooks = _sgf_hooks(sgf, config, run_dir) if sgf is not None else []
        hooks += wandb_hooks(wandb, run_dir)
    except (UsageError, RunDirError, ValueError) as error:
        fail(str(error))
    if population or resume and (run_dir / POPULATION_FILE).exists():
        from jaxzero.run.life.ways import use_host_cores

        use_host_cores()  # a CPU's cores as devices: the members split over them
    console.print(f"training {game} in {run_dir} (Ctrl-C stops and saves a checkpoint)")
    try:
        result = run_training(
            run_dir,
            config,
            seconds=seconds,
            iterations=iterations,
            resume=resume,
            force=force,
            on_log=lambda metrics: console.print(progress_line(metrics), highlight=False),
            hooks=hooks,
            trust_code=trust,
            members_at_once=members_at_once,
            **population,
        )
    except (RunDirError, CheckpointError, FileProblem, ValueError) as error:
        fail(str(error))
    _say_next(run_dir, result)


def _say_next(run_dir: Path, result: Any) -> None:
    """How the run stopped, and the commands that go on from it (exit 128 + the signal
    when one stopped it: saved and stopped, the shell still learns it was a signal)."""
    from jaxzero.core.trust import imported_code
    from jaxzero.run.life.driver import load_run_config

    how = "interrupted" if result.interrupted else "stopped"
    console.print(
        f"{how} at iteration {result.iterations} after {result.seconds:.0f}s; "
        f"checkpoint saved in {run_dir / 'checkpoints'}"
    )
    # A run naming the user's own code loads it only when told to (jaxzero.core.trust).
    flag = " --trust-code" if imported_code(load_run_config(run_dir)) else ""
    console.print(f"resume:  jaxzero train --resume --out {run_dir}{flag}")
    if (run_dir / POPULATION_FILE).exists():
        console.print(f"report:  jaxzero report {run_dir}   (each arm across its seeds)")
        run_dir = member_folder(run_dir, 0)
    console.print(f"play:    jaxzero play --checkpoint {run_dir}{flag}")
    if result.interrupted:
        raise typer.Exit(128 + (result.signal or 2))


def _command() -> str:
    """The command line as typed: ``jaxzero train ...``."""
    import shlex
    import sys

    return "jaxzero " + shlex.join(sys.argv[1:])


def _train_config(
    game: str, overrides: list[str], seconds: float | None, resume: bool
) -> Config | None:
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
    return config_lib.apply_overrides(game_config(game), parsed)


def _study(
    config: Config | None, seeds: int | None, grid: list[str], resume: bool, sgf: Path | None
) -> Study | None:
    """The study of ``--seeds N`` and ``--grid KEY=V1,V2`` (None for a single run), built
    by :func:`jaxzero.run.studies.study.make_study`: every grid point of the traced keys
    crossed with N seeds (config.seed, config.seed + 1, ...), grid-major, one arm for each
    combination of the keys that fix a shape or the code (one arm without settings, a
    population, when none does). UsageError / ValueError when the options cannot go
    together or a key or value is refused, before anything is written."""
    from jaxzero.core import config as config_lib
    from jaxzero.run.studies.study import make_study

    if seeds is None and not grid:
        return None
    if resume or config is None:  # (no config: a resumed run's)
        raise UsageError("--seeds and --grid define a new population; a resumed one keeps its own")
    if sgf is not None:
        raise UsageError("--sgf records one run's games; it cannot go with --seeds or --grid")
    values = _grid_values(grid)
    count = seeds or 1
    if config.seed + count - 1 > config_lib.MAX_SEED:  # jax.random.key(2**32) is key(0)
        raise UsageError(
            f"--seeds {count} from seed {config.seed} reaches seed {config.seed + count - 1}, "
            f"past {config_lib.MAX_SEED} (jax.random.key's range): give a lower seed"
        )
    return make_study(config, count, values, command=_command())


def _population_of(study: Study | None) -> dict[str, Any]:
    """``train``'s ``seeds`` and ``hyper`` for a study of one arm without settings (a
    population); {} for a single run (None)."""
    return {} if study is None else {"seeds": study.seeds, "hyper": study.hyper}


def _grid_values(grid: list[str]) -> dict[str, list[str]]:
    """Each ``--grid KEY=V1,V2,...``'s key and its values as typed; UsageError /
    ValueError for a key given twice or naming no hyperparameter, or a value missing."""
    from jaxzero.core import config as config_lib
    from jaxzero.core.population import check_hyperparameter

    example = "optim.learning_rate=1e-3,2e-3"
    keys = [config_lib.parse_key_values([item], "--grid", example).popitem()[0] for item in grid]
    repeated = sorted({key for key in keys if keys.count(key) > 1})
    if repeated:  # else the last would silently win
        raise UsageError(f"--grid {repeated[0]} is given twice: list its values once, K=V1,V2,...")
    values: dict[str, list[str]] = {}
    for key, text in config_lib.parse_key_values(grid, "--grid", example).items():
        if key not in config_lib.valid_keys() or key == "seed":
            check_hyperparameter(key)  # the name of nothing, or the seeds: refused
        values[key] = [v.strip() for v in text.split(",")]
        if not any(values[key]):
            raise UsageError(f"--grid {key}= names no value: give KEY=V1,V2,... ({example})")
        if not all(values[key]):  # "1e-3,,2e-3": a value lost to a typo
            raise UsageError(f"--grid {key}={text} has an empty value: give KEY=V1,V2,...")
    return values


def _resumed_game(run_dir: Path, game: str | None, trust_code: bool | list[str]) -> str:
    """The game of the run ``jaxzero train [GAME] --resume`` continues; UsageError when
    there is none or GAME names another, UntrustedCode (a ValueError) when its config
    names code not trusted (before anything, ``--sgf``'s game check included, imports it)."""
    from jaxzero.core.trust import check_trusted
    from jaxzero.run.folder.layout import CONFIG_FILE
    from jaxzero.run.life.driver import holds_run, load_run_config, refuse_foreign

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


def _sgf_hooks(sgf: Path, config: Config | None, run_dir: Path) -> list:
    """The self-play recorder of ``--sgf`` (Go only: refused before anything is written)."""
    import envs
    from jaxzero.go.records import SelfPlayRecorder, require_go
    from jaxzero.run.life.driver import load_run_config

    if config is None:
        config = load_run_config(run_dir)
    env = require_go(envs.make(config.game), "self-play SGF records")
    return [SelfPlayRecorder(env, sgf)]
