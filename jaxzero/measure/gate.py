"""The arena gate: the learner against the best network, and the promotion rule.

With the gate on (``GateConfig.enabled``), a frozen *best* network makes all self-play
and a *learner* trains on that data. Every ``gate.every`` iterations the learner plays
the best:

* at full strength: the agent's own noise-free greedy search (``config.search.kind``,
  ``config.evaluation.simulations`` simulations) on both sides, never a raw argmax;
* from random openings: ``num_games / 2`` openings of ``evaluation.opening_plies``
  uniformly random plies, each played twice with the colours swapped (the same env keys
  in both games);
* as one compiled match (:mod:`jaxzero.measure.match`): all games in one
  ``lax.while_loop``, and one batched search per move in which each game's tree is
  evaluated with the network of the player to move at its root (both networks run on
  every node batch: twice the network cost of one search, the tree work once).
  ``gate.every``, ``gate.num_games`` and ``evaluation.simulations`` set its price
  (docs/benchmarks.md, "Measuring costs").

**Promotion rule.** The learner's score is ``(wins + draws / 2) / games`` over
``num_games`` games; it is promoted iff ``games >= num_games`` and ``score >= threshold``
(AlphaGo Zero's 55% of 400, here 55% of 200 by default). Promotion copies every variable
of the network (:func:`copy_variables`: the whole variables pytree, normalisation
statistics included had the net any).

*False positives.* An identical copy of the best is never promoted: noise-free search is
deterministic and both games of an opening use the same env keys, so the two games are
the same game with the seats swapped and the score is exactly 0.5 (the tests pin this).
For a learner that is *different but exactly as strong*, treating the games as
independent fair coin flips with no draws (draws only shrink the variance),
:func:`jaxzero.measure.statistics.false_positive_rate` gives ``P(score >= threshold)``:
8.9% for 55% of 200 games, 2.6% for 55% of 400, 0.3% for 60% of 200. Such a promotion
costs little (the new best is as strong as the old), which is why a plain threshold is
used rather than a stricter test; raise ``num_games`` or ``threshold`` for a smaller
rate. Openings should be plentiful (``evaluation.opening_plies``: 2 gives 72 tic-tac-toe
and 49 Connect Four openings) since repeated openings of deterministic players are
repeated games, not new evidence.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from envs.core import Env
from jaxzero.core.config import Config, GateConfig
from jaxzero.core.networks import ApplyFn
from jaxzero.core.policies import SearchPolicy
from jaxzero.core.search import SearchOptions
from jaxzero.measure.match import Match, MatchResult, make_match
from jaxzero.measure.players import evaluation_player

Array = jax.Array


@dataclasses.dataclass(frozen=True)
class Verdict:
    """One gate match, from the learner's point of view."""

    result: MatchResult
    score: float  # (wins + draws / 2) / games, computed in float32 as on a device
    promoted: bool

    def metrics(self) -> dict[str, float]:
        return {
            "arena/score": self.score,
            "arena/games": float(self.result.games),
            "arena/promoted": float(self.promoted),
        }


@dataclasses.dataclass(frozen=True, eq=False)
class Gate:
    """``gate(learner_params, best_params, key) -> Verdict``: one compiled match (the
    learner is player A) and the promotion rule."""

    config: GateConfig
    match: Match

    def __call__(self, learner_params: Any, best_params: Any, key: Array) -> Verdict:
        result = self.match.result(learner_params, best_params, key)
        score = float(np.float32(result.wins + 0.5 * result.draws) / np.float32(result.games))
        return Verdict(result, score, should_promote(score, result.games, self.config))


def make_gate(
    config: Config,
    env: Env,
    apply_fn: ApplyFn,
    policy: SearchPolicy,
    options: SearchOptions | None = None,
) -> Gate:
    """The learner-vs-best match of ``config.gate`` at ``config.evaluation``'s strength,
    searching with ``policy`` as ``options`` say (a learned model's: ``trainer.options``)."""
    player = evaluation_player(config, env, apply_fn, policy, options)
    match = make_match(env, player, player, config.gate.num_games, config.evaluation.opening_plies)
    return Gate(config.gate, match)


def should_promote(score: float, games: int, gate: GateConfig) -> bool:
    """The rule: at least ``num_games`` games and a score of at least ``threshold``."""
    return games >= gate.num_games and score >= gate.threshold


def copy_variables(variables: Any) -> Any:
    """A copy of every array of a network's variables pytree (all collections: ``params``
    and any normalisation statistics), sharing no buffer with the original."""
    return jax.tree.map(jnp.copy, variables)
