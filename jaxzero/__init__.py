"""jaxzero: AlphaZero machinery over the `envs` API.

    import jaxzero
    agent = jaxzero.load_agent("connect_four")        # the agent shipped in the package
    agent = jaxzero.load_agent("runs/connect_four")   # or one you trained
    trainer = jaxzero.make_trainer(jaxzero.get_preset("tic_tac_toe"))

Your own game, network and search rule are arguments (mctx's style)::

    trainer = jaxzero.make_trainer(
        jaxzero.default_config(MyGame()),     # a starting config for any envs.Env
        env=MyGame(),
        network=MyNet(num_actions=7),         # any flax Module: obs -> (logits, value)
        search=jaxzero.PuctSearch(interior_selection=my_rule),
    )
    jaxzero.train("runs/mine", trainer=trainer, iterations=100)
    jaxzero.register_game(jaxzero.GameKit("my_game", env=MyGame, preset=config))  # by name

Planning with a learned model (MuZero) instead of the rules, on the same loop::

    config = jaxzero.apply_overrides(jaxzero.get_preset("tic_tac_toe"), {"model.kind": "learned"})
    trainer = jaxzero.make_trainer(config)    # network: a LearnedModelNetwork (h, g, f)

Many seeds and hyperparameters as one compiled program (a population axis)::

    population = jaxzero.make_population(config, seeds=range(8),
                                         hyper={"optim.learning_rate": [1e-3] * 4 + [3e-3] * 4})
    jaxzero.train("runs/sweep", trainer=population, iterations=100)   # runs/sweep/members/K

Names are imported on first use, so ``import jaxzero`` (and the CLI's start-up) stays
cheap; type checkers and ``help(jaxzero)`` see them all.
"""

from __future__ import annotations

import importlib
from importlib import metadata
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jaxzero.core.config import Config, apply_overrides
    from jaxzero.core.defaults import default_config
    from jaxzero.core.games import GameKit, register_game
    from jaxzero.core.loop import Trainer, TrainState, make_trainer
    from jaxzero.core.model import LearnedModel
    from jaxzero.core.model_networks import LearnedModelNetwork
    from jaxzero.core.networks import ApplyFn, make_network, register_network
    from jaxzero.core.policies import (
        GumbelSearch,
        PuctSearch,
        SearchPolicy,
        make_search,
        register_search,
    )
    from jaxzero.core.population import Population, make_population, member
    from jaxzero.core.presets import get_preset
    from jaxzero.core.search import SearchOptions
    from jaxzero.measure.match import MatchResult, make_match, play_match
    from jaxzero.measure.opponents import make_opponent, register_opponent
    from jaxzero.measure.players import Player, RawPolicyPlayer, SearchPlayer
    from jaxzero.measure.positions import optimal_move_share
    from jaxzero.run.agents.agent import Agent, export_agent, load_agent
    from jaxzero.run.life.compile_cache import enable_compile_cache
    from jaxzero.run.life.driver import train
    from jaxzero.run.life.hooks import Hook, Step
    from jaxzero.run.life.ways import use_host_cores
    from jaxzero.run.reports.wandb_hook import WandbLogger
    from jaxzero.run.studies.comparison import write_study_report
    from jaxzero.run.studies.study import Study, make_study, train_study

_EXPORTS = {
    # configs (jaxzero.core)
    "Config": "jaxzero.core.config",
    "apply_overrides": "jaxzero.core.config",
    "default_config": "jaxzero.core.defaults",
    "get_preset": "jaxzero.core.presets",
    "GameKit": "jaxzero.core.games",
    "register_game": "jaxzero.core.games",
    # the compiled iteration and its extension points
    "make_trainer": "jaxzero.core.loop",
    "Trainer": "jaxzero.core.loop",
    "TrainState": "jaxzero.core.loop",
    "make_population": "jaxzero.core.population",
    "Population": "jaxzero.core.population",
    "member": "jaxzero.core.population",
    "ApplyFn": "jaxzero.core.networks",
    "make_network": "jaxzero.core.networks",
    "register_network": "jaxzero.core.networks",
    "SearchPolicy": "jaxzero.core.policies",
    "PuctSearch": "jaxzero.core.policies",
    "GumbelSearch": "jaxzero.core.policies",
    "make_search": "jaxzero.core.policies",
    "register_search": "jaxzero.core.policies",
    "SearchOptions": "jaxzero.core.search",
    "LearnedModel": "jaxzero.core.model",
    "LearnedModelNetwork": "jaxzero.core.model_networks",
    # measuring (jaxzero.measure)
    "Player": "jaxzero.measure.players",
    "SearchPlayer": "jaxzero.measure.players",
    "RawPolicyPlayer": "jaxzero.measure.players",
    "make_opponent": "jaxzero.measure.opponents",
    "register_opponent": "jaxzero.measure.opponents",
    "make_match": "jaxzero.measure.match",
    "play_match": "jaxzero.measure.match",
    "MatchResult": "jaxzero.measure.match",
    "optimal_move_share": "jaxzero.measure.positions",
    # running (jaxzero.run)
    "train": "jaxzero.run.life.driver",
    "Study": "jaxzero.run.studies.study",
    "make_study": "jaxzero.run.studies.study",
    "train_study": "jaxzero.run.studies.study",
    "write_study_report": "jaxzero.run.studies.comparison",
    "Hook": "jaxzero.run.life.hooks",
    "Step": "jaxzero.run.life.hooks",
    "WandbLogger": "jaxzero.run.reports.wandb_hook",  # optional: jaxzero[wandb]
    "Agent": "jaxzero.run.agents.agent",
    "load_agent": "jaxzero.run.agents.agent",
    "export_agent": "jaxzero.run.agents.agent",
    "use_host_cores": "jaxzero.run.life.ways",
    "enable_compile_cache": "jaxzero.run.life.compile_cache",
}

try:
    __version__ = metadata.version("jaxzero")
except metadata.PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0+unknown"

__all__ = [
    "Agent",
    "ApplyFn",
    "Config",
    "GameKit",
    "GumbelSearch",
    "Hook",
    "LearnedModel",
    "LearnedModelNetwork",
    "MatchResult",
    "Player",
    "Population",
    "PuctSearch",
    "RawPolicyPlayer",
    "SearchOptions",
    "SearchPlayer",
    "SearchPolicy",
    "Step",
    "Study",
    "TrainState",
    "Trainer",
    "WandbLogger",
    "__version__",
    "apply_overrides",
    "default_config",
    "enable_compile_cache",
    "export_agent",
    "get_preset",
    "load_agent",
    "make_match",
    "make_network",
    "make_opponent",
    "make_population",
    "make_search",
    "make_study",
    "make_trainer",
    "member",
    "optimal_move_share",
    "play_match",
    "register_game",
    "register_network",
    "register_opponent",
    "register_search",
    "train",
    "train_study",
    "use_host_cores",
    "write_study_report",
]


assert set(__all__) == {*_EXPORTS, "__version__"}  # one list of names, kept in step


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'jaxzero' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value  # imported once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
