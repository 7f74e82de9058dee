"""The arena gate and the driver's periodic evaluation: compiled matches between networks.

With the gate on (``ArenaConfig.enabled``), a frozen *best* network makes all self-play
and a *learner* trains on that data. Every ``arena.every`` iterations the learner plays
the best:

* at full strength: the agent's own noise-free greedy search (``config.search.kind``,
  ``config.search.eval_simulations`` simulations, or ``arena.simulations`` if set) on both
  sides, never a raw argmax;
* from random openings: ``num_games / 2`` openings of ``opening_plies`` uniformly random
  plies, each played twice with the colours swapped (the same env keys in both games);
* as one compiled function: all games in one ``lax.while_loop``, and one batched search
  per move in which each game's tree is evaluated with the network of the player to move
  at its root (both networks run on every node batch: twice the network cost of one
  search, the tree work once). Measured for Connect Four with a 4x64 ResNet on a 2-core
  CPU: 32 arena games at 128 simulations took 1.1x the time of one training iteration
  (256 games x 16 moves x 32 simulations), so a 200-game arena cost about 7 iterations;
  ``arena.every``, ``arena.num_games`` and ``arena.simulations`` set the price.

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
:func:`false_positive_rate` gives ``P(score >= threshold)``: 8.9% for 55% of 200 games,
2.6% for 55% of 400, 0.3% for 60% of 200. Such a promotion costs little (the new
best is as strong as the old), which is why a plain threshold is used rather than a
stricter test; raise ``num_games`` or ``threshold`` for a smaller rate. Openings should
be plentiful (``opening_plies``: 2 gives 72 tic-tac-toe and 49 Connect Four openings)
since repeated openings of deterministic players are repeated games, not new evidence.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from envs.core import Env, State
from jaxzero.core import search
from jaxzero.core.config import ArenaConfig, Config, SearchConfig
from jaxzero.core.networks import ApplyFn
from jaxzero.measure.evaluate import MatchResult, make_paired_match
from jaxzero.measure.opponents import Policy, make_opponent

Array = jax.Array
# A side of a match: (its params, states [G], key) -> int32 [G] actions.
MatchPolicy = Callable[[Any, State, Array], Array]
EVAL_OPPONENTS = ("random", "one_ply")


@functools.lru_cache(maxsize=32)
def search_policy(
    config: SearchConfig, env: Env, apply_fn: ApplyFn, num_simulations: int
) -> MatchPolicy:
    """The agent's move: noise-free search, then its greedy choice (as ``Agent.act``)."""

    def policy(params: Any, states: State, key: Array) -> Array:
        output = search.run_search(
            params, states, key, config, env, apply_fn, num_simulations=num_simulations, noise=False
        )
        return search.greedy_action(output, config.kind)

    return policy


@functools.lru_cache(maxsize=32)
def fixed_policy(policy: Policy) -> MatchPolicy:
    """A fixed opponent (``jaxzero.measure.opponents``) as a match side; its params are ignored."""

    def side(params: Any, states: State, key: Array) -> Array:
        del params
        return policy(states, key)

    return side


def make_match(
    env: Env, policy_a: MatchPolicy, policy_b: MatchPolicy, num_games: int, opening_plies: int
) -> Callable[[Any, Any, Array], tuple[Array, Array]]:
    """``match(params_a, params_b, key) -> (outcome int32 [G], a_seat int32 [G])``, jitted.

    G = ``num_games`` (even). Game ``i`` and game ``i + G/2`` share their random opening and
    their env keys; A sits in seat 0 (moves first) in the first half and seat 1 in the
    second. ``outcome`` is the sign of A's total reward (+1 win, 0 draw, -1 loss). Both
    policies are asked for every game at every move; each game takes its mover's answer.
    """

    def joint(params_a, params_b, states, a_moves, key):
        k_a, k_b = jax.random.split(key)
        return jnp.where(a_moves, policy_a(params_a, states, k_a), policy_b(params_b, states, k_b))

    return make_paired_match(env, joint, num_games, opening_plies)


def make_search_match(
    env: Env,
    config: SearchConfig,
    apply_fn: ApplyFn,
    num_simulations: int,
    num_games: int,
    opening_plies: int,
) -> Callable[[Any, Any, Array], tuple[Array, Array]]:
    """:func:`make_match` for two networks of one architecture playing the agent's search.

    One batched search serves both sides: tree ``g`` evaluates every node with the
    network of the player to move at its root (both networks run on every node batch and
    each tree keeps its own's output), so the tree work is done once and the compiled
    function holds one search instead of two.
    """

    def paired_apply(variables, observation):
        params_a, params_b, a_moves = variables
        logits_a, value_a = apply_fn(params_a, observation)
        logits_b, value_b = apply_fn(params_b, observation)
        return (
            jnp.where(a_moves[:, None], logits_a, logits_b),
            jnp.where(a_moves, value_a, value_b),
        )

    def joint(params_a, params_b, states, a_moves, key):
        output = search.run_search(
            (params_a, params_b, a_moves),
            states,
            key,
            config,
            env,
            paired_apply,
            num_simulations=num_simulations,
            noise=False,
        )
        return search.greedy_action(output, config.kind)

    return make_paired_match(env, joint, num_games, opening_plies)


@functools.lru_cache(maxsize=32)
def mixture_policy(policies: tuple[Policy, ...]) -> MatchPolicy:
    """Several fixed opponents as one match side: its params are the opponent index of
    each game, int32 [G] (every opponent is asked for every game; cheap next to search)."""

    def side(choice: Array, states: State, key: Array) -> Array:
        keys = jax.random.split(key, len(policies))
        actions = jnp.stack([p(states, k) for p, k in zip(policies, keys, strict=True)])
        return jnp.take_along_axis(actions, choice[None, :], axis=0)[0]  # [K, G] -> [G]

    return side


def tally(outcome: Array) -> tuple[Array, Array, Array, Array]:
    """(score float32, wins, draws, losses int32) of outcomes int32 [G] in {-1, 0, 1}."""
    wins = (outcome > 0).sum(dtype=jnp.int32)
    draws = (outcome == 0).sum(dtype=jnp.int32)
    losses = (outcome < 0).sum(dtype=jnp.int32)
    score = (wins + 0.5 * draws) / outcome.shape[0]
    return score.astype(jnp.float32), wins, draws, losses


def match_result(outcome: Any, a_seat: Any) -> MatchResult:
    """Host-side counts of a match (``evaluate.MatchResult``, with its Wilson interval)."""
    outcome, a_seat = jax.device_get((outcome, a_seat))

    def counts(o) -> tuple[int, int, int]:
        return int((o > 0).sum()), int((o == 0).sum()), int((o < 0).sum())

    wins, draws, losses = counts(outcome)
    return MatchResult(wins, draws, losses, counts(outcome[a_seat == 0]))


@dataclasses.dataclass(frozen=True, eq=False)
class Arena:
    """``arena(learner_params, best_params, key) -> (score, wins, draws, losses)``.

    One compiled function plays the whole match and tallies it on device (the learner's
    view: score float32, counts int32). ``games`` gives the per-game outcomes and the
    learner's seats of the same compiled match.
    """

    config: ArenaConfig
    run: Callable[[Any, Any, Array], tuple[Array, ...]]

    def __call__(self, learner_params: Any, best_params: Any, key: Array):
        return self.run(learner_params, best_params, key)[:4]

    def games(self, learner_params: Any, best_params: Any, key: Array) -> tuple[Array, Array]:
        return self.run(learner_params, best_params, key)[4:]

    def promotes(self, score: float, games: int) -> bool:
        return should_promote(score, games, self.config)


def make_arena(config: Config, env: Env, apply_fn: ApplyFn) -> Arena:
    """The learner-vs-best match of ``config.arena`` at ``config.search``'s eval strength."""
    arena = config.arena
    check_arena_config(arena)
    match = make_search_match(
        env,
        config.search,
        search.evaluation_apply_fn(config.search, env, apply_fn),
        arena_simulations(config),
        arena.num_games,
        arena.opening_plies,
    )

    @jax.jit
    def run(learner_params: Any, best_params: Any, key: Array):
        outcome, seat = match(learner_params, best_params, key)
        return (*tally(outcome), outcome, seat)

    return Arena(config=arena, run=run)


def arena_simulations(config: Config) -> int:
    """Simulations per move in the arena and evaluation: ``arena.simulations``, or the
    agent's ``search.eval_simulations`` when that is 0 (the default: full strength)."""
    return config.arena.simulations or config.search.eval_simulations


def check_arena_config(arena: ArenaConfig) -> None:
    """ValueError naming the first arena knob out of range."""
    if arena.num_games < 2 or arena.num_games % 2:
        raise ValueError(f"arena.num_games must be an even number >= 2, got {arena.num_games}")
    if not 0.5 < arena.threshold <= 1.0:
        raise ValueError(f"arena.threshold must be in (0.5, 1], got {arena.threshold}")
    if arena.every < 1:
        raise ValueError(f"arena.every must be >= 1, got {arena.every}")
    if arena.eval_every < 0:
        raise ValueError(f"arena.eval_every must be >= 0 (0 = off), got {arena.eval_every}")
    if arena.eval_games < 2 or arena.eval_games % 2:
        raise ValueError(f"arena.eval_games must be an even number >= 2, got {arena.eval_games}")
    if arena.opening_plies < 0:
        raise ValueError(f"arena.opening_plies must be >= 0, got {arena.opening_plies}")
    if arena.simulations < 0:
        raise ValueError("arena.simulations must be >= 0 (0 = eval_simulations)")


def should_promote(score: float, games: int, arena: ArenaConfig) -> bool:
    """The gate: at least ``num_games`` games and a score of at least ``threshold``."""
    return games >= arena.num_games and score >= arena.threshold


def false_positive_rate(num_games: int, threshold: float) -> float:
    """P(promotion) of an equally strong learner whose games are independent fair coin
    flips: ``P(X >= ceil(threshold * n))`` for ``X ~ Binomial(n, 1/2)``, exactly."""
    need = math.ceil(threshold * num_games - 1e-9)
    return sum(math.comb(num_games, k) for k in range(need, num_games + 1)) / 2.0**num_games


def copy_variables(variables: Any) -> Any:
    """A copy of every array of a network's variables pytree (all collections: ``params``
    and any normalisation statistics), sharing no buffer with the original."""
    return jax.tree.map(jnp.copy, variables)


@dataclasses.dataclass(frozen=True, eq=False)
class Evaluator:
    """``evaluator(params, key) -> {opponent: MatchResult}``: the agent's greedy search
    against each fixed opponent, ``games`` games each with paired random openings, all in
    one compiled match (one search; each game's opponent picked by index)."""

    opponents: tuple[str, ...]
    games: int
    match: Callable[[Any, Any, Array], tuple[Array, Array]]
    choice: Array  # int32 [K * games]  the opponent of each game

    def __call__(self, params: Any, key: Array) -> dict[str, MatchResult]:
        outcome, seat = jax.device_get(self.match(params, self.choice, key))
        choice = jax.device_get(self.choice)
        return {
            name: match_result(outcome[choice == i], seat[choice == i])
            for i, name in enumerate(self.opponents)
        }

    @staticmethod
    def metrics(results: dict[str, MatchResult]) -> dict[str, float]:
        """``eval/vs_NAME`` (score, draws count half) and ``eval/vs_NAME_wins`` (win rate)."""
        out = {}
        for name, result in results.items():
            out[f"eval/vs_{name}"] = result.score
            out[f"eval/vs_{name}_wins"] = result.wins / max(result.games, 1)
        return out


def agent_vs_fixed(
    env: Env,
    agent: MatchPolicy,
    opponents: tuple[str, ...],
    games: int,
    opening_plies: int,
) -> Evaluator:
    """An :class:`Evaluator` of the match policy ``agent`` against named fixed opponents."""
    if games < 2 or games % 2:
        raise ValueError(f"games per opponent must be an even number >= 2, got {games}")
    side = mixture_policy(tuple(_opponent(name, env) for name in opponents))
    count = len(opponents)
    pairs = count * games // 2
    pair_choice = (jnp.arange(pairs) * count) // pairs  # each opponent gets games/2 pairs
    choice = jnp.concatenate([pair_choice, pair_choice]).astype(jnp.int32)
    match = _cached_match(env, agent, side, count * games, opening_plies)
    return Evaluator(tuple(opponents), games, match, choice)


def make_evaluator(
    config: Config, env: Env, apply_fn: ApplyFn, opponents: tuple[str, ...] = EVAL_OPPONENTS
) -> Evaluator:
    """The driver's periodic evaluation: eval-strength search against ``opponents``."""
    arena = config.arena
    check_arena_config(arena)
    apply_fn = search.evaluation_apply_fn(config.search, env, apply_fn)
    agent = search_policy(config.search, env, apply_fn, arena_simulations(config))
    return agent_vs_fixed(env, agent, tuple(opponents), arena.eval_games, arena.opening_plies)


@functools.lru_cache(maxsize=32)
def _cached_match(env: Env, policy_a: MatchPolicy, policy_b: MatchPolicy, games: int, plies: int):
    return make_match(env, policy_a, policy_b, games, plies)


@functools.lru_cache(maxsize=32)
def _opponent(name: str, env: Env) -> Policy:
    return make_opponent(name, env)
