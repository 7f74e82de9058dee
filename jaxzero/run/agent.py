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
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jax

import envs
from envs.core import Env, State
from jaxzero.core import networks
from jaxzero.core import search as search_lib
from jaxzero.core.config import Config, apply_overrides, config_from_dict, parse_key_values
from jaxzero.core.loop import make_trainer
from jaxzero.core.networks import ApplyFn
from jaxzero.measure.players import SearchPlayer, evaluation_player
from jaxzero.run import agent_files
from jaxzero.run.checkpoint import CHECKPOINT_DIR, Checkpointer, CheckpointError

Array = jax.Array
SEARCH_KINDS = ("gumbel", "puct")


@dataclasses.dataclass(frozen=True, eq=False)
class Agent:
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
        """Raw network output for a batch: logits [B, A] (illegal masked), value [B]."""
        return self._evaluate(self.params, states)

    def search_player(
        self,
        num_simulations: int | None = None,
        search: str | None = None,
        reuse_tree: bool | None = None,
    ) -> SearchPlayer:
        """``agent.player`` with another simulation count, search kind or tree reuse (kept,
        so that asking again reuses its compilation)."""
        if search is not None and search not in SEARCH_KINDS:
            raise ValueError(f"unknown search {search!r}; choose gumbel or puct")
        sims = self.player.num_simulations if num_simulations is None else int(num_simulations)
        kind = self.player.config.kind if search is None else search
        reuse = self.player.config.reuse_tree if reuse_tree is None else bool(reuse_tree)
        if (sims, kind, reuse) not in self._players:
            config = dataclasses.replace(self.player.config, kind=kind, reuse_tree=reuse)
            player = self.player.replace(config=config, num_simulations=sims)
            self._players[sims, kind, reuse] = player
        return self._players[sims, kind, reuse]

    def with_env(self, env: Env) -> Agent:
        """The same agent playing ``env`` (e.g. Go with another komi)."""
        return dataclasses.replace(self, env=env, player=self.player.replace(env=env), _players={})

    def act(
        self,
        states: State,
        key: Array,
        num_simulations: int | None = None,
        search: str | None = None,
    ) -> Array:
        """Greedy, noise-free search moves for a batch of states: int32 [B].

        ``num_simulations`` defaults to the config's ``evaluation.simulations``; ``search``
        ("gumbel" or "puct") to the kind the agent was trained with.
        """
        return self.search_player(num_simulations, search).jitted(self.params, states, key)


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
    if (path / "config.json").exists():
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
    """The run's config.json (an old layout is read in today's, config_from_dict)."""
    try:
        return config_from_dict(json.loads((run_dir / "config.json").read_text()))
    except (OSError, ValueError) as error:
        raise CheckpointError(f"{run_dir / 'config.json'} is unreadable ({error})") from None


def load_agent(
    path: str | Path,
    *,
    step: int | None = None,
    search: Mapping[str, Any] | None = None,
    like: Sequence[Agent] = (),
) -> Agent:
    """The agent of a run directory (latest checkpoint), of one checkpoint directory, of an
    agent folder (``jaxzero export``), or shipped for a game (``load_agent("connect_four")``:
    a name that is not a path).

    ``search`` changes how it plays, not what it learned: ``search.*`` and
    ``evaluation.*`` keys such as ``{"evaluation.average_symmetries": "true",
    "evaluation.simulations": 800}``. ``like``: agents loaded before; this one shares the
    network and player of the first that plays alike (same game, network, search and
    evaluation settings), so that their matches compile once."""
    path = agent_files.find_agent(path)
    settings = search_settings(search or {})
    if agent_files.is_agent_folder(path):
        if step is not None:
            raise CheckpointError(f"{path} is an exported agent, one network: drop the step")
        config, env, apply_fn, params, iteration = _from_agent_folder(path, settings)
    else:
        config, env, apply_fn, params, iteration = _from_checkpoint(path, step, settings)
    twin = next((agent for agent in like if _plays_alike(agent.config, config)), None)
    if twin is not None:
        env, apply_fn, player = twin.env, twin.network, twin.player
    else:
        player = evaluation_player(config, env, apply_fn)
    return Agent(config, env, params, apply_fn, player, iteration)


def _from_checkpoint(path: Path, step: int | None, settings: Mapping[str, Any]):
    """(config, env, apply_fn, params, iteration) of a run's checkpoint (the latest if
    neither ``path`` nor ``step`` names one)."""
    run_dir, found_step = locate(path)
    config = apply_overrides(read_config(run_dir), settings)
    # One device whatever mesh the run trained on (orbax reshards the restored arrays).
    trainer = make_trainer(dataclasses.replace(config, num_devices=1))
    abstract = jax.eval_shape(trainer.init, jax.random.key(0))
    with Checkpointer(run_dir, read_only=True) as checkpointer:
        step = found_step if step is None else step
        state = checkpointer.restore_fields(abstract, ["best_params", "iteration"], step)
    # the playing network: the learner's, unless a gate kept an earlier best
    params, iteration = state["best_params"], int(state["iteration"])
    return config, trainer.env, trainer.apply_fn, params, iteration


def _from_agent_folder(folder: Path, settings: Mapping[str, Any]):
    """(config, env, apply_fn, params, iteration) of an exported or shipped agent."""
    facts = agent_files.read_facts(folder)
    config = apply_overrides(read_config(folder), settings)
    if facts["game"] != config.game:
        raise CheckpointError(
            f"{folder}: agent.json says {facts['game']}, config.json {config.game}; "
            "the files come from different agents: export the agent again"
        )
    env = envs.make(config.game)
    network = networks.make_network(config.network, env)
    template = jax.eval_shape(
        lambda key: networks.init_params(network, env, key), jax.random.key(0)
    )
    params = agent_files.read_params(folder, template)
    return config, env, networks.make_apply_fn(network), params, int(facts["iteration"])


def export_agent(path: str | Path, out: Path, *, step: int | None = None) -> Agent:
    """Write the agent of a run (or checkpoint) into the new folder ``out`` as an agent
    folder (:mod:`jaxzero.run.agent_files`): its config, playing network and a model card
    of what is known about its training. FileExistsError if ``out`` holds anything."""
    path = agent_files.find_agent(path)
    if agent_files.is_agent_folder(path):
        raise CheckpointError(f"{path} is an agent folder already: copy it instead")
    agent = load_agent(path, step=step)
    run_dir, _ = locate(path)
    progress = _progress_at(run_dir, agent.iteration)
    facts = {
        "game": agent.config.game,
        "iteration": agent.iteration,
        "positions": int(progress.get("positions_written", 0)) or None,
        "seconds": round(progress["elapsed"]) if "elapsed" in progress else None,
        "parameters": sum(int(x.size) for x in jax.tree.leaves(agent.params)),
        "network": type(networks.make_network(agent.config.network, agent.env)).__name__,
        "source": f"{run_dir}/{CHECKPOINT_DIR}/{agent.iteration}",
    }
    card = agent_files.model_card(agent.config, facts)
    agent_files.write_agent(out, agent.config, agent.params, facts, card)
    return agent


def _progress_at(run_dir: Path, iteration: int) -> dict[str, float]:
    """The last row of the run's metrics.jsonl at or before ``iteration`` ({} if none)."""
    from jaxzero.run.report import ReportError, read_metrics  # (matplotlib: export only)

    try:
        rows, _ = read_metrics(run_dir)
    except ReportError:
        return {}
    before = [row for row in rows if row["iteration"] <= iteration]
    return before[-1] if before else {}


def untrained_agent(config: Config, key: Array) -> Agent:
    """A freshly initialised network of ``config`` as an agent (iteration 0)."""
    env = envs.make(config.game)
    network = networks.make_network(config.network, env)
    apply_fn = networks.make_apply_fn(network)
    params = networks.init_params(network, env, key)
    player = evaluation_player(config, env, apply_fn)
    return Agent(config, env, params, apply_fn, player, iteration=0)


def _plays_alike(a: Config, b: Config) -> bool:
    same = ("game", "network", "search", "evaluation")
    return all(getattr(a, name) == getattr(b, name) for name in same)


def checkpoint_steps(run_dir: Path) -> list[int]:
    """The finished checkpoints of a run, oldest first (orbax's temporary folders excluded)."""
    folder = run_dir / CHECKPOINT_DIR
    if not folder.is_dir():
        return []
    return sorted(int(p.name) for p in folder.iterdir() if p.is_dir() and p.name.isdigit())


def find_checkpoints(paths: Sequence[Path], every: int = 1) -> list[tuple[Path, int | None]]:
    """(run directory, checkpoint step) for each path: a run directory gives every
    ``every``-th of its checkpoints counted back from the latest (always included); a
    checkpoint directory ``RUN/checkpoints/N`` gives itself; an agent folder (exported or
    shipped, by game name) gives (folder, None). Duplicates are dropped."""
    if every < 1:
        raise CheckpointError(f"--every must be >= 1, got {every}")
    found: list[tuple[Path, int]] = []
    for path in map(agent_files.find_agent, paths):
        if agent_files.is_agent_folder(path):
            found.append((path, None))  # an exported or shipped agent: one network
            continue
        run_dir, step = locate(path)
        if step is not None:
            found.append((run_dir, step))
            continue
        steps = checkpoint_steps(run_dir)
        if not steps:
            raise CheckpointError(f"{run_dir} has no checkpoints yet; train it first")
        found += [(run_dir, s) for s in steps[::-1][::every][::-1]]
    seen: set[tuple[Path, int]] = set()
    unique = []
    for run_dir, step in found:
        if (run_dir.resolve(), step) not in seen:
            seen.add((run_dir.resolve(), step))
            unique.append((run_dir, step))
    return unique


def load_agents(
    paths: Sequence[Path], *, every: int = 1, search: Mapping[str, Any] | None = None
) -> list[tuple[str, Agent, Path | None]]:
    """(name ``RUN@STEP``, agent, run directory) of every checkpoint :func:`find_checkpoints`
    finds; agents that play alike share one network and player. All must play one game.
    An agent folder (exported or shipped) has no run directory: None."""
    found = find_checkpoints(paths, every)
    agents: list[Agent] = []
    for run_dir, step in found:
        agents.append(load_agent(run_dir, step=step, search=search, like=agents))
    games = sorted({a.config.game for a in agents})
    if len(games) > 1:
        raise CheckpointError(
            f"the checkpoints play different games ({', '.join(games)}); pick one"
        )
    if not games:
        raise CheckpointError("give at least one run directory or checkpoint to rate")
    steps = [agent.iteration for agent in agents]
    short = [f"{run.name}@{step}" for (run, _), step in zip(found, steps, strict=True)]
    if len(set(short)) < len(short):
        short = [f"{run}@{step}" for (run, _), step in zip(found, steps, strict=True)]
    runs = [None if agent_files.is_agent_folder(run) else run for run, _ in found]
    return list(zip(short, agents, runs, strict=True))
