"""A trained player for any caller: the CLI, the GTP engine, evaluation, tests, users.

    agent = jaxzero.load_agent("runs/connect_four")        # a run directory
    agent = jaxzero.load_agent("runs/connect_four/checkpoints/300")   # one checkpoint
    agent = jaxzero.load_agent("connect_four")    # the agent shipped in the package
    export_agent("runs/connect_four", Path("c4_agent"))   # a folder of < 1 MB that plays
    logits, value = agent.evaluate(states)                 # [B, A] masked, [B]
    actions = agent.act(states, key, num_simulations=64, search="puct")   # int32 [B]

Everything is batched over env states of the agent's game; ``act`` is greedy and
noise-free: ``agent.player`` (:class:`~jaxzero.measure.players.SearchPlayer`, at the
strength of the run's ``evaluation`` section), the same player the gate and the periodic
evaluation use. The agent keeps every player it builds, so each compiles once.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import flax.linen as nn
import jax

from envs.core import Env, State
from jaxzero.core import networks, policies
from jaxzero.core import search as search_lib
from jaxzero.core.config import Config, apply_overrides, parse_key_values
from jaxzero.core.loop import make_trainer, record_search, resolve_env, resolve_network
from jaxzero.core.model import learned_model, make_network
from jaxzero.core.model_networks import LearnedModelNetwork
from jaxzero.core.networks import ApplyFn
from jaxzero.core.policies import SearchPolicy
from jaxzero.core.population import member
from jaxzero.core.search import SearchOptions
from jaxzero.core.trust import TrustCode, UntrustedCode, check_trusted
from jaxzero.measure.players import SearchPlayer, evaluation_player
from jaxzero.measure.roots import Analysis, analyze_position
from jaxzero.run.agents import agent_files
from jaxzero.run.folder.config_file import read_config_file
from jaxzero.run.folder.layout import CHECKPOINT_DIR, CONFIG_FILE
from jaxzero.run.folder.reads import FileRefused
from jaxzero.run.life import members
from jaxzero.run.life.checkpoint import Checkpointer, CheckpointError, CheckpointRemoved

Array = jax.Array


@dataclasses.dataclass(frozen=True, eq=False)
class Agent:
    """A trained player: its config, game, network and parameters, and how it plays.

    Build one with :func:`load_agent`. ``act`` is greedy and noise-free search at the
    strength of ``config.evaluation`` (the player the gate and the periodic evaluation
    use); every player it builds is kept, so each compiles once.

    Attributes:
        config: the run's config, with the ``settings`` it was loaded with applied.
        env: the game it plays (B env states of it are what ``act`` and ``evaluate`` take).
        params: the network's variables (the run's playing network).
        network: the raw network (:class:`~jaxzero.core.networks.ApplyFn`).
        player: how it plays: a :class:`~jaxzero.measure.players.SearchPlayer` at
            ``config.evaluation``'s strength.
        iteration: the training iteration the parameters come from.
    """

    config: Config
    env: Env
    params: Any  # network variables
    network: ApplyFn  # the raw network
    player: SearchPlayer  # how it plays: config.evaluation's strength
    iteration: int  # training iteration the parameters come from
    _players: dict = dataclasses.field(default_factory=dict, repr=False)

    @property
    def apply_fn(self) -> ApplyFn:
        """The network as the agent's search sees it (symmetry-averaged if so set)."""
        return self.player.apply_fn

    @functools.cached_property
    def _evaluate(self):
        def evaluate(params: Any, states: State) -> tuple[Array, Array]:
            logits, value = self.apply_fn(params, states.observation)
            return search_lib.mask_logits(logits, states.legal_action_mask), value

        return jax.jit(evaluate)

    def evaluate(self, states: State) -> tuple[Array, Array]:
        """Raw network output for a batch: logits [B, A] (illegal masked), value [B].

        The network as the agent's search sees it (:attr:`apply_fn`), without search.

        Args:
            states: B env states of the agent's game.

        Returns:
            ``(logits float32 [B, A], value float32 [B])``: illegal actions' logits at the
            dtype's smallest finite value; the value from the mover's point of view.
        """
        return self._evaluate(self.params, states)

    def search_player(
        self,
        num_simulations: int | None = None,
        search: str | None = None,
        reuse_tree: bool | None = None,
    ) -> SearchPlayer:
        """``agent.player`` with another simulation count, search or tree reuse (kept, so
        that asking again reuses its compilation).

        Args:
            num_simulations: simulations per move; default ``evaluation.simulations``.
            search: a search kind (``search.kind``'s names: "gumbel", "puct", a registered
                name or ``module:factory``); default the agent's own policy.
            reuse_tree: carry the search tree between moves; default the config's.

        Returns:
            A :class:`~jaxzero.measure.players.SearchPlayer`.

        Raises:
            ValueError: an unknown search kind, in one line.
        """
        own = self.config.search
        sims = self.player.num_simulations if num_simulations is None else int(num_simulations)
        kind = own.kind if search is None else search
        reuse = self.player.options.reuse_tree if reuse_tree is None else bool(reuse_tree)
        if (sims, kind, reuse) not in self._players:
            policy = (
                self.player.policy
                if kind == own.kind
                else policies.make_search(policies.with_kind(own, kind))
            )
            options = dataclasses.replace(self.player.options, reuse_tree=reuse)
            player = self.player.replace(policy=policy, num_simulations=sims, options=options)
            self._players[sims, kind, reuse] = player
        return self._players[sims, kind, reuse]

    def with_env(self, env: Env) -> Agent:
        """The same agent playing ``env`` (e.g. Go with another komi).

        Args:
            env: a game the network fits (same observation shape and actions).

        Returns:
            A new :class:`Agent` with the same parameters; its players are built afresh.
        """
        return dataclasses.replace(self, env=env, player=self.player.replace(env=env), _players={})

    def act(
        self,
        states: State,
        key: Array,
        num_simulations: int | None = None,
        search: str | None = None,
    ) -> Array:
        """Greedy, noise-free search moves for a batch of states: int32 [B].

        Args:
            states: B env states of the agent's game.
            key: a PRNG key.
            num_simulations: simulations per move; default the config's
                ``evaluation.simulations``.
            search: a ``search.kind`` name ("gumbel", "puct", ...); default the agent's own
                search.

        Returns:
            int32 [B]: a legal action per state.

        Raises:
            ValueError: an unknown search kind, or ``num_simulations`` < 1.
        """
        return self.search_player(num_simulations, search).jitted(self.params, states, key)

    def analyze(
        self,
        state: State,
        key: Array | None = None,
        num_simulations: int | None = None,
        search: str | None = None,
    ) -> Analysis:
        """One noise-free search from ``state`` and its root: every legal move's prior,
        visits, Q and search policy, the values, the chosen move, and their picture on the
        board (Jupyter displays it; ``.save("root.svg")`` writes it).

        Args:
            state: one (unbatched) position of the agent's game.
            key: a PRNG key (default ``jax.random.key(0)``).
            num_simulations: simulations; default the config's ``evaluation.simulations``.
            search: a ``search.kind`` name; default the agent's own search.

        Returns:
            A :class:`~jaxzero.measure.roots.Analysis` (``.root`` holds the numbers).
        """
        player = self.search_player(num_simulations, search)
        key = jax.random.key(0) if key is None else key
        return Analysis(self.env, state, analyze_position(player, self.params, state, key))


def search_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """``settings`` checked to be keys a trained agent may change: ``search.*`` and
    ``evaluation.*`` (ValueError naming the offender)."""
    for key in settings:
        if not key.startswith(("search.", "evaluation.")):
            raise ValueError(
                f"{key!r} cannot change for a trained agent; only search.* and evaluation.* "
                "settings can (e.g. evaluation.simulations, search.kind, "
                "evaluation.average_symmetries)"
            )
    return dict(settings)


def parse_settings(items: Sequence[str]) -> dict[str, str]:
    """``--set`` items: ``["search.kind=puct", ...]`` -> ``{"search.kind": "puct"}``,
    checked to be KEY=VALUE pairs of ``search.*`` / ``evaluation.*`` keys."""
    return search_settings(parse_key_values(list(items), "--set"))


def locate(path: Path) -> tuple[Path, int | None]:
    """(run directory, checkpoint step or None for the latest) from a user's path."""
    if (path / CONFIG_FILE).exists():
        return path, None
    if path.name.isdigit() and path.parent.name == CHECKPOINT_DIR:
        return path.parent.parent, int(path.name)
    if path.name == CHECKPOINT_DIR:
        return path.parent, None
    raise CheckpointError(
        f"{path} is neither a run directory (with config.json) nor a checkpoint "
        f"(RUN/{CHECKPOINT_DIR}/N); pass the --out directory of a `jaxzero train` run"
    )


def read_config(run_dir: Path) -> Config:
    """The run's config.json (an older layout is read in today's)."""
    try:
        return read_config_file(run_dir / CONFIG_FILE)
    except FileRefused as error:  # names the file and what is wrong with it
        raise CheckpointError(f"{error}; it is no config.json that jaxzero wrote") from None
    except (OSError, ValueError) as error:
        raise CheckpointError(f"{run_dir / 'config.json'} is unreadable ({error})") from None


def load_agent(
    path: str | Path,
    *,
    step: int | None = None,
    settings: Mapping[str, Any] | None = None,
    env: Env | None = None,
    network: nn.Module | None = None,
    search: SearchPolicy | None = None,
    like: Sequence[Agent] = (),
    trust_code: TrustCode = False,
) -> Agent:
    """The agent of a run directory, a checkpoint, an agent folder, or a shipped game.

    Args:
        path: a run directory (its latest checkpoint), one checkpoint directory
            (``RUN/checkpoints/N``), an agent folder (``jaxzero export``), or a game name
            with a shipped agent (``"connect_four"``).
        step: the checkpoint of a run directory to load.
        settings: how it plays, not what it learned: ``search.*`` and ``evaluation.*``
            keys such as ``{"evaluation.simulations": 800}``.
        env: the game, when the run's ``game`` cannot be imported here.
        network: the network module, when the run's ``network.kind`` names a module that
            cannot be imported or rebuilt here.
        search: the search policy, when the run's ``search`` names functions that cannot
            be imported here (or to play with another one).
        like: agents loaded before; this one shares the network and player of the first
            that plays alike (same game, network, search and evaluation settings), so that
            their matches compile once.
        trust_code: import the code the folder's config names (a game, network or search
            function as ``module:attribute``): True trusts whoever wrote the folder, a
            collection allows those import paths alone. By default a folder names code
            only by registered names (:mod:`jaxzero.core.trust`); ``env``, ``network`` and
            ``search`` given need no trust.

    Returns:
        The :class:`Agent`.

    Raises:
        CheckpointError: one line saying what is missing or damaged and what to pass, or
            that the folder names code not trusted.
    """
    path = agent_files.find_agent(path)
    settings = search_settings(settings or {})
    if trust_code is not True:  # what the caller names on this call is the caller's
        trust_code = {*(trust_code or ()), *(str(v) for v in settings.values())}
    given = (env, network, search, trust_code)
    if agent_files.is_agent_folder(path):
        if step is not None:
            raise CheckpointError(f"{path} is an exported agent, one network: drop the step")
        config, env, apply_fn, params, iteration, search, options = _from_agent_folder(
            path, settings, given
        )
    else:
        config, env, apply_fn, params, iteration, search, options = _from_checkpoint(
            path, step, settings, given
        )
    twin = next((agent for agent in like if _plays_alike(agent.config, config)), None)
    if twin is not None:
        env, apply_fn, player = twin.env, twin.network, twin.player
    else:
        player = evaluation_player(config, env, apply_fn, search, options)
    return Agent(config, env, params, apply_fn, player, iteration)


def _rebuild(where: Path, config: Config, given: tuple) -> tuple:
    """(env, network, search, config) of a saved config, each the one given or rebuilt
    from its name; CheckpointError naming what to pass when one cannot be rebuilt, or
    when its name is code the caller did not trust."""
    env, network, search, trust_code = given
    names = ("env", "network", "search")
    passed = [name for name, obj in zip(names, given[:3], strict=True) if obj is not None]
    try:
        check_trusted(config, where / CONFIG_FILE, trust_code=trust_code, given=passed)
    except UntrustedCode as error:
        raise CheckpointError(str(error)) from None
    try:
        env, config = resolve_env(config, env)
    except (ValueError, ImportError) as error:
        raise _cannot_rebuild(where, error, "env") from None
    try:
        network, config = resolve_network(config, env, network)
    except ValueError as error:
        raise _cannot_rebuild(where, error, "network") from None
    try:
        if search is None:
            search = policies.make_search(config.search)
        else:
            config = record_search(config, search)
    except ValueError as error:
        raise _cannot_rebuild(where, error, "search") from None
    return env, network, search, config


def _cannot_rebuild(where: Path, error: Exception, argument: str) -> CheckpointError:
    return CheckpointError(
        f"{where} cannot be rebuilt here ({error}); or pass it: load_agent(..., {argument}=...)"
    )


def _from_checkpoint(path: Path, step: int | None, settings: Mapping[str, Any], given: tuple):
    """(config, env, apply_fn, params, iteration, search, options) of a run's checkpoint
    (the latest if neither ``path`` nor ``step`` names one)."""
    run_dir, found_step = locate(path)
    if members.is_population(run_dir):
        size = len(members.read_population(run_dir)[0])
        raise CheckpointError(
            f"{run_dir} holds a population of {size} members, each its own agent: name one, "
            f"{members.member_folder(run_dir, 0)} to {members.member_folder(run_dir, size - 1)}"
        )
    if refusal := members.diverged_refusal(run_dir, found_step if step is None else step):
        raise CheckpointError(refusal)
    config = apply_overrides(read_config(run_dir), settings)
    env, network, search, config = _rebuild(run_dir, config, given)
    # One device whatever mesh the run trained on (orbax reshards the restored arrays).
    trainer = make_trainer(
        dataclasses.replace(config, num_devices=1), env=env, network=network, search=search
    )
    abstract = jax.eval_shape(trainer.init, jax.random.key(0))
    at = found_step if step is None else step
    population = members.member_of(run_dir)
    if population is None:
        state = _read_playing_network(run_dir, abstract, at)
    else:  # RUN/members/K: member K's slice of the population's checkpoints
        folder, k = population
        size = len(members.read_population(folder)[0])
        if k >= size:
            raise CheckpointError(f"{run_dir}: the population in {folder} has {size} members")
        stacked = jax.tree.map(lambda x: jax.ShapeDtypeStruct((size, *x.shape), x.dtype), abstract)
        state = member(_read_playing_network(folder, stacked, at), k)
    # the playing network: the learner's, unless a gate kept an earlier best
    params, iteration = state["best_params"], int(state["iteration"])
    return config, trainer.env, trainer.apply_fn, params, iteration, trainer.search, trainer.options


def _read_playing_network(run_dir: Path, abstract: Any, step: int | None) -> dict[str, Any]:
    """``best_params`` and ``iteration`` of checkpoint ``step``; of the latest for None,
    read again from the new latest should the run, still training, remove it meanwhile."""
    attempts = 3 if step is None else 1
    for attempt in range(1, attempts + 1):
        try:
            with Checkpointer(run_dir, read_only=True) as checkpointer:
                return checkpointer.restore_fields(abstract, ["best_params", "iteration"], step)
        except CheckpointRemoved:
            if attempt == attempts:
                raise
    raise AssertionError("unreachable")


def _from_agent_folder(folder: Path, settings: Mapping[str, Any], given: tuple):
    """(config, env, apply_fn, params, iteration, search, options) of an exported or
    shipped agent."""
    facts = agent_files.read_facts(folder)
    config = apply_overrides(read_config(folder), settings)
    if facts["game"] != config.game:
        raise CheckpointError(
            f"{folder}: agent.json says {facts['game']}, config.json {config.game}; "
            "the files come from different agents: export the agent again"
        )
    env, network, search, config = _rebuild(folder, config, given)
    template = jax.eval_shape(
        lambda key: networks.init_params(network, env, key), jax.random.key(0)
    )
    params = agent_files.read_params(folder, template)
    apply_fn = networks.make_apply_fn(network)
    options = SearchOptions.of(config.search, learned_model(config, env, network))
    return config, env, apply_fn, params, int(facts["iteration"]), search, options


def export_agent(
    path: str | Path, out: Path, *, step: int | None = None, trust_code: TrustCode = False
) -> Agent:
    """Write the agent of a run (or checkpoint) into the new folder ``out`` as an agent
    folder (:mod:`jaxzero.run.agents.agent_files`): its config, playing network and a model card
    of what is known about its training.

    Args:
        path: a run directory (its latest checkpoint) or one checkpoint directory
            (``RUN/checkpoints/N``); not an agent folder (nor a shipped agent's name).
        out: the folder to write; it must not exist yet, or be empty. Written whole or
            not at all.
        step: the checkpoint of a run directory to export; default the latest.
        trust_code: as :func:`load_agent` takes it.

    Returns:
        The exported :class:`Agent`, as :func:`load_agent` loaded it.

    Raises:
        FileExistsError: ``out`` holds anything.
        CheckpointError: ``path`` is an agent folder already, cannot be loaded, or ``out``
            cannot be written, in one line.
    """
    path = agent_files.find_agent(path)
    if agent_files.is_agent_folder(path):
        raise CheckpointError(f"{path} is an agent folder already: copy it instead")
    agent = load_agent(path, step=step, trust_code=trust_code)
    run_dir, _ = locate(path)
    progress = _progress_at(run_dir, agent.iteration)
    facts = {
        "game": agent.config.game,
        "iteration": agent.iteration,
        "positions": int(progress.get("positions_written") or 0) or None,
        "seconds": round(progress["elapsed"]) if progress.get("elapsed") is not None else None,
        "parameters": sum(int(x.size) for x in jax.tree.leaves(agent.params)),
        "network": _trunk(make_network(agent.config, agent.env)),
        "model": agent.config.model.kind,
        "source": f"{run_dir}/{CHECKPOINT_DIR}/{agent.iteration}",
    }
    card = agent_files.model_card(agent.config, facts)
    agent_files.write_agent(out, agent.config, agent.params, facts, card)
    return agent


def _progress_at(run_dir: Path, iteration: int) -> dict[str, float]:
    """The last row of the run's metrics.jsonl at or before ``iteration`` ({} if none)."""
    from jaxzero.run.reports.rows import ReportError, read_metrics

    try:
        rows, _ = read_metrics(run_dir)
    except ReportError:
        return {}
    before = [row for row in rows if row["iteration"] <= iteration]
    return before[-1] if before else {}


def _trunk(network: nn.Module) -> str:
    """The class name of a network's trunk: a learned model's representation's (ResNet,
    MLP), else the network's own."""
    if isinstance(network, LearnedModelNetwork):
        return type(network.representation).__name__.removesuffix("Representation")
    return type(network).__name__


def untrained_agent(config: Config, key: Array) -> Agent:
    """A freshly initialised network of ``config`` as an agent (iteration 0)."""
    env, config = resolve_env(config)
    network, config = resolve_network(config, env)
    search = policies.make_search(config.search)
    apply_fn = networks.make_apply_fn(network)
    params = networks.init_params(network, env, key)
    options = SearchOptions.of(config.search, learned_model(config, env, network))
    player = evaluation_player(config, env, apply_fn, search, options)
    return Agent(config, env, params, apply_fn, player, iteration=0)


def _plays_alike(a: Config, b: Config) -> bool:
    same = ("game", "network", "search", "evaluation")
    return all(getattr(a, name) == getattr(b, name) for name in same)


def checkpoint_steps(run_dir: Path) -> list[int]:
    """The finished checkpoints of a run, oldest first (orbax's temporary folders excluded);
    of a population's member (``RUN/members/K``), its population's."""
    population = members.member_of(run_dir)
    folder = (run_dir if population is None else population[0]) / CHECKPOINT_DIR
    if not folder.is_dir():
        return []
    return sorted(int(p.name) for p in folder.iterdir() if p.is_dir() and p.name.isdigit())


def find_checkpoints(paths: Sequence[Path], every: int = 1) -> list[tuple[Path, int | None]]:
    """(run directory, checkpoint step) for each path: a run directory gives every
    ``every``-th of its checkpoints counted back from the latest (always included); a
    checkpoint directory ``RUN/checkpoints/N`` gives itself; an agent folder (exported or
    shipped, by game name) gives (folder, None). Duplicates are dropped."""
    return [(run_dir, step) for run_dir, step, _ in _found_checkpoints(paths, every)]


def _found_checkpoints(paths: Sequence[Path], every: int) -> list[tuple[Path, int | None, bool]]:
    """:func:`find_checkpoints`' pairs, each with whether it was listed from a run
    directory (a live run's retention may remove it before it is read)."""
    if every < 1:
        raise CheckpointError(f"--every must be >= 1, got {every}")
    found: list[tuple[Path, int | None, bool]] = []
    for path in map(agent_files.find_agent, paths):
        if agent_files.is_agent_folder(path):
            found.append((path, None, False))  # an exported or shipped agent: one network
            continue
        run_dir, step = locate(path)
        if step is not None:
            found.append((run_dir, step, False))
            continue
        steps = checkpoint_steps(run_dir)
        if not steps:
            raise CheckpointError(f"{run_dir} has no checkpoints yet; train it first")
        found += [(run_dir, s, True) for s in steps[::-1][::every][::-1]]
    seen: set[tuple[Path, int | None]] = set()
    unique: list[tuple[Path, int | None, bool]] = []
    for run_dir, step, listed in found:
        if (run_dir.resolve(), step) not in seen:
            seen.add((run_dir.resolve(), step))
            unique.append((run_dir, step, listed))
    return unique


def _removed(run_dir: Path, step: int, error: CheckpointError) -> bool:
    """Whether ``error``, reading the listed ``step``, comes of its removal meanwhile
    (a member's checkpoints are its population's)."""
    population = members.member_of(run_dir)
    folder = run_dir if population is None else population[0]
    gone = not (folder / CHECKPOINT_DIR / str(step)).is_dir()
    return isinstance(error, CheckpointRemoved) or gone


def _load_found(
    paths: Sequence[Path], every: int, settings: Mapping[str, Any] | None, trust_code: TrustCode
) -> tuple[list[Agent], list[tuple[Path, int | None]], list[int]]:
    """(agents, their (run directory, step), steps skipped) of :func:`load_agents`."""
    agents: list[Agent] = []
    found: list[tuple[Path, int | None]] = []
    skipped = []
    for run_dir, step, listed in _found_checkpoints(paths, every):
        try:
            agent = load_agent(
                run_dir, step=step, settings=settings, like=agents, trust_code=trust_code
            )
        except CheckpointError as error:
            if not (listed and step is not None and _removed(run_dir, step, error)):
                raise
            skipped.append(step)
            print(
                f"checkpoint {step} in {run_dir / CHECKPOINT_DIR} was removed while reading "
                "(the run is still training): skipped",
                file=sys.stderr,
                flush=True,
            )
            continue
        agents.append(agent)
        found.append((run_dir, step))
    return agents, found, skipped


def load_agents(
    paths: Sequence[Path],
    *,
    every: int = 1,
    settings: Mapping[str, Any] | None = None,
    trust_code: TrustCode = False,
) -> list[tuple[str, Agent, Path | None]]:
    """(name ``RUN@STEP``, agent, run directory) of every checkpoint :func:`find_checkpoints`
    finds; agents that play alike share one network and player. All must play one game.
    An agent folder (exported or shipped) has no run directory: None.

    A checkpoint listed from a run directory that the run, still training, removes
    before it is read (its retention) is skipped, named in a line on stderr; should
    every one go so, the run directories are listed again. ``trust_code``: as
    :func:`load_agent` takes it."""
    for _ in range(3):
        agents, found, skipped = _load_found(paths, every, settings, trust_code)
        if agents or not skipped:
            break
    games = sorted({a.config.game for a in agents})
    if len(games) > 1:
        raise CheckpointError(
            f"the checkpoints play different games ({', '.join(games)}); pick one"
        )
    if not games and skipped:
        raise CheckpointError(
            "every checkpoint listed, three times, was removed while reading (the run is "
            "still training and saves faster than they load): try again"
        )
    if not games:
        raise CheckpointError("give at least one run directory or checkpoint to rate")
    steps = [agent.iteration for agent in agents]
    short = [f"{run.name}@{step}" for (run, _), step in zip(found, steps, strict=True)]
    if len(set(short)) < len(short):
        short = [f"{run}@{step}" for (run, _), step in zip(found, steps, strict=True)]
    runs = [None if agent_files.is_agent_folder(run) else run for run, _ in found]
    return list(zip(short, agents, runs, strict=True))
