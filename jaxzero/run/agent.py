"""A trained player for any caller: the CLI, the GTP engine, evaluation, tests, users.

    agent = jaxzero.load_agent("runs/connect_four")        # a run directory
    agent = jaxzero.load_agent("runs/connect_four/checkpoints/300")   # one checkpoint
    logits, value = agent.evaluate(states)                 # [B, A] masked, [B]
    actions = agent.act(states, key, num_simulations=64, search="puct")   # int32 [B]

Everything is batched over env states of the agent's game; ``act`` is greedy and
noise-free (the same search the arena and evaluation use).
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jax

from envs.core import Env, State
from jaxzero.core import search as search_lib
from jaxzero.core.config import Config, apply_overrides, config_from_dict, parse_key_values
from jaxzero.core.loop import make_trainer
from jaxzero.core.networks import ApplyFn
from jaxzero.run.checkpoint import CHECKPOINT_DIR, Checkpointer, CheckpointError

Array = jax.Array


@dataclasses.dataclass(frozen=True, eq=False)
class Agent:
    config: Config
    env: Env
    params: Any  # network variables
    apply_fn: ApplyFn
    iteration: int  # training iteration the parameters come from

    def evaluate(self, states: State) -> tuple[Array, Array]:
        """Raw network output for a batch: logits [B, A] (illegal masked), value [B]."""
        return _evaluate(self.params, states, self.apply_fn)

    def act(
        self,
        states: State,
        key: Array,
        num_simulations: int | None = None,
        search: str | None = None,
    ) -> Array:
        """Greedy, noise-free search moves for a batch of states: int32 [B].

        ``num_simulations`` defaults to the config's ``eval_simulations``; ``search``
        ("gumbel" or "puct") to the kind the agent was trained with.
        """
        config = self.config.search
        if search is not None:
            if search not in ("gumbel", "puct"):
                raise ValueError(f"unknown search {search!r}; choose gumbel or puct")
            config = dataclasses.replace(config, kind=search)
        n = config.eval_simulations if num_simulations is None else int(num_simulations)
        return search_lib.search_actions(
            self.params, states, key, config, self.env, self.apply_fn, n
        )


@functools.partial(jax.jit, static_argnames=("apply_fn",))
def _evaluate(params: Any, states: State, apply_fn: ApplyFn) -> tuple[Array, Array]:
    logits, value = apply_fn(params, states.observation)
    return search_lib.mask_logits(logits, states.legal_action_mask), value


def search_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """``settings`` checked to be ``search.*`` keys (ValueError naming the offender)."""
    for key in settings:
        if not key.startswith("search."):
            raise ValueError(
                f"{key!r} cannot change for a trained agent; only search.* settings can "
                "(e.g. search.eval_simulations, search.kind, search.average_symmetries)"
            )
    return dict(settings)


def parse_settings(items: Sequence[str]) -> dict[str, str]:
    """``--set`` items: ``["search.kind=puct", ...]`` -> ``{"search.kind": "puct"}``,
    checked to be KEY=VALUE pairs of ``search.*`` keys (ValueError otherwise)."""
    return search_settings(parse_key_values(list(items), "--set"))


def _locate(path: Path) -> tuple[Path, int | None]:
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


def load_agent(
    path: str | Path, *, step: int | None = None, search: Mapping[str, Any] | None = None
) -> Agent:
    """The agent of a run directory (latest checkpoint) or of one checkpoint directory.

    ``search`` changes how it plays, not what it learned: ``search.*`` config keys such as
    ``{"search.average_symmetries": "true", "search.eval_simulations": 800}``."""
    path = Path(path)
    if not path.exists():
        raise CheckpointError(f"{path} does not exist; pass the --out directory of a run")
    run_dir, found_step = _locate(path)
    step = found_step if step is None else step
    try:
        config = config_from_dict(json.loads((run_dir / "config.json").read_text()))
    except (OSError, ValueError) as error:
        raise CheckpointError(f"{run_dir / 'config.json'} is unreadable ({error})") from None
    config = apply_overrides(config, search_settings(search or {}))
    # One device whatever mesh the run trained on (orbax reshards the restored arrays).
    trainer = make_trainer(apply_overrides(config, {"train.num_devices": 1}))
    abstract = jax.eval_shape(trainer.init, jax.random.key(0))
    with Checkpointer(run_dir) as checkpointer:
        state = checkpointer.restore_fields(abstract, ["best_params", "iteration"], step)
    return Agent(
        config=config,
        env=trainer.env,
        params=state["best_params"],  # the playing network (the learner unless the gate is on)
        apply_fn=search_lib.evaluation_apply_fn(config.search, trainer.env, trainer.apply_fn),
        iteration=int(state["iteration"]),
    )
