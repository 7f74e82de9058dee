"""What jaxzero's search does with chance, measured where the exact value is known.

    python experiments/chance_bias.py                 # 4,096 searches per row

jaxzero's search plans with the game itself, and a stochastic game's chance event (dice,
a tile spawn) is drawn from the env's step key. mctx expands each tree edge once and
stores the state it reached, so every later simulation through that edge meets the same
outcome: a child keeps its first sampled chance event. This script measures what that
costs on ``Gamble``, a one-move game with an exactly computable answer:

* action 0 pays ``sure`` (0.6) for certain;
* action 1 flips a fair coin from the step key: it pays 1 or 0 (expected 0.5).

The right move is 0 (0.6 > 0.5). For each simulation budget the script runs a batch of
noise-free searches (PUCT and Gumbel, a uniform prior and a zero value: no network bias),
each with its own key, and reports the mean and spread of the search's Q(1) against the
exact 0.5, its best Q (max over both actions) against the exact 0.6, and how often it
picks the gamble. With the step key as the chance event, more
simulations cannot help: the gamble's child holds one coin flip however often it is
visited. ``Gamble`` also lists its two outcomes, so each row is measured a second time
with explicit chance nodes (``search.chance_nodes``): the gamble's chance node then
visits heads and tails in turn, and its value tends to 0.5 as it is visited.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from envs import symmetry  # noqa: E402
from envs.core import Env, State  # noqa: E402
from jaxzero.core import search  # noqa: E402
from jaxzero.core.config import SearchConfig  # noqa: E402
from jaxzero.core.policies import make_search  # noqa: E402


class Gamble(Env):
    """One move: a sure ``sure`` (action 0) or a fair coin's 1 or 0 (action 1)."""

    id = "gamble"
    num_players = 1
    num_actions = 2
    observation_shape = (1,)
    max_steps = 1
    symmetries = symmetry.identity(1, 2)

    def __init__(self, sure: float = 0.6):
        self.sure = sure

    def _init(self, key):
        del key
        return State(
            current_player=jnp.int32(0),
            observation=jnp.zeros(1),
            legal_action_mask=jnp.ones(2, jnp.bool_),
            rewards=jnp.zeros(1),
            terminated=jnp.bool_(False),
            truncated=jnp.bool_(False),
            step_count=jnp.int32(0),
        )

    num_chance_outcomes = 2  # the coin: 0 pays 0, 1 pays 1

    def _step(self, state, action, key):
        return self._step_outcome(state, action, jax.random.bernoulli(key).astype(jnp.int32))

    def _chance_probs(self, state, action):
        return jnp.where(action == 0, jnp.array([1.0, 0.0]), jnp.array([0.5, 0.5]))

    def _step_outcome(self, state, action, outcome):
        reward = jnp.where(action == 0, self.sure, outcome.astype(jnp.float32))
        return state.replace(rewards=reward[None], terminated=jnp.bool_(True))

    def _observe(self, state, player):
        return jnp.zeros(1)


def uniform(params, observation):
    """No knowledge: a uniform prior and a value of 0."""
    batch = observation.shape[0]
    return jnp.zeros((batch, 2)), jnp.zeros((batch,))


def measure(
    kind: str, simulations: int, searches: int, seed: int = 0, chance_nodes: bool = False
) -> dict[str, float]:
    env = Gamble()
    config = SearchConfig(
        kind=kind,
        num_simulations=simulations,
        max_num_considered_actions=2,
        chance_nodes=chance_nodes,
    )
    policy = make_search(config)

    @jax.jit
    def run(key):
        states = jax.vmap(env.init)(jax.random.split(key, searches))
        output = search.run_search(
            None, states, key, env, uniform, policy, options=search.SearchOptions.of(config),
            num_simulations=simulations, noise=False,
        )  # fmt: skip
        tree = output.search_tree
        q = tree.qvalues(jnp.full((searches,), tree.ROOT_INDEX))  # [N, 2]
        choice = policy.greedy_action(output)
        return q[:, 1], q.max(-1), choice

    gamble_q, best_q, choice = (np.asarray(x) for x in run(jax.random.key(seed)))
    return {
        "q_mean": float(gamble_q.mean()),
        "q_abs_error": float(np.abs(gamble_q - 0.5).mean()),
        "best_q": float(best_q.mean()),
        "picks_gamble": float((choice == 1).mean()),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--searches", type=int, default=4096)
    parser.add_argument("--simulations", type=int, nargs="+", default=[4, 16, 64])
    args = parser.parse_args(argv)
    print(f"Gamble: sure 0.6 or a fair coin of 1/0; {args.searches} searches a row")
    print("exact: Q(gamble) 0.5, best Q 0.6, the gamble never picked\n")
    print("| search | chance | simulations | mean Q(gamble) | mean abs error of Q(gamble) | "
          "mean best Q | picks the gamble |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for chance_nodes in (False, True):
        for kind in ("puct", "gumbel"):
            for sims in args.simulations:
                m = measure(kind, sims, args.searches, chance_nodes=chance_nodes)
                mode = "chance nodes" if chance_nodes else "step key"
                print(
                    f"| {kind} | {mode} | {sims} | {m['q_mean']:.3f} | {m['q_abs_error']:.3f} | "
                    f"{m['best_q']:.3f} | {m['picks_gamble']:.1%} |"
                )


if __name__ == "__main__":
    main()
