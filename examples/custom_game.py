"""A new game from scratch: Take-away, checked by envs.check_env, trained, and measured.

Take-away is Nim with one pile: 15 stones, a move takes 1, 2 or 3, and whoever takes the
last stone wins. Leaving a multiple of four wins, so what the network learned can be
checked exactly. The game is a pure-functional ``envs.Env`` (three functions: ``_init``,
``_step``, ``_observe``); ``envs.check_env`` plays it batched and alone against the
contract; ``jaxzero.default_config`` sizes a first run for it (an MLP: the observation is
a vector); ``jaxzero.train`` trains it; ``jaxzero.load_agent`` loads the run, which plays
the random player (``jaxzero.play_match``: paired openings, both colours).

    python examples/custom_game.py                 # about a minute on a 2-core CPU
    python examples/custom_game.py --smoke         # toy sizes, seconds (CI)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import jax
import jax.numpy as jnp

import envs
import jaxzero

PILE, MOST = 15, 3  # stones at the start; the most a move may take
SMOKE = {  # evaluation.simulations: how the agent plays the match
    "selfplay.batch_size": 8, "selfplay.moves_per_iteration": 4, "search.num_simulations": 4,
    "evaluation.simulations": 4, "replay.capacity": 256, "replay.min_size": 16,
    "optim.minibatch_size": 16, "optim.updates_per_iteration": 2, "network.hidden_size": 16,
    "train.log_every": 1,
}  # fmt: skip


@envs.state_dataclass
class TakeAwayState(envs.State):
    stones: jax.Array  # int32 []  stones left in the pile


class TakeAway(envs.Env[TakeAwayState]):
    """Action a takes a + 1 stones; the observation is the pile, one-hot, the same for both."""

    id = "take_away"
    num_actions = MOST
    observation_shape = (PILE + 1,)
    max_steps = PILE  # every move takes at least one stone

    def _init(self, key: jax.Array) -> TakeAwayState:
        return self.position(jnp.int32(PILE))

    def _step(self, state: TakeAwayState, action: jax.Array, key: jax.Array) -> TakeAwayState:
        stones = state.stones - (action + 1)
        mover = state.current_player
        won = jnp.where(jnp.arange(2) == mover, 1.0, -1.0)  # the mover took the last stone
        after = self.position(stones, player=1 - mover)
        return after.replace(rewards=jnp.where(stones == 0, won, 0.0))

    def _observe(self, state: TakeAwayState, player: jax.Array) -> jax.Array:
        return jax.nn.one_hot(state.stones, PILE + 1)

    def position(self, stones: jax.Array, player: int | jax.Array = 0) -> TakeAwayState:
        """The state with ``stones`` left and ``player`` to move (step_count: env.step's)."""
        stones = jnp.asarray(stones, jnp.int32)
        return TakeAwayState(
            current_player=jnp.asarray(player, jnp.int32),
            observation=jax.nn.one_hot(stones, PILE + 1),
            legal_action_mask=jnp.arange(MOST) < stones,
            rewards=jnp.zeros(2, jnp.float32),
            terminated=stones <= 0,
            truncated=jnp.bool_(False),
            step_count=jnp.int32(0),
            stones=stones,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="toy sizes: a CI check, seconds")
    parser.add_argument("--out", type=Path, default=Path("runs/examples/custom_game"))
    parser.add_argument("--force", action="store_true", help="replace the run in --out")
    args = parser.parse_args()

    game = TakeAway()
    envs.check_env(game, num_games=4 if args.smoke else 16)  # AssertionError naming the rule
    config = jaxzero.default_config(game)  # then change what you like:
    config = jaxzero.apply_overrides(config, {"evaluation.every": 0, "train.log_every": 10})
    if args.smoke:
        config = jaxzero.apply_overrides(config, SMOKE)
    iterations, games = (3, 8) if args.smoke else (150, 200)  # games against random

    def log(row: dict[str, float]) -> None:
        print(
            f"iteration {row['iteration']:4.0f}  policy loss {row['policy_loss']:.3f}  "
            f"value loss {row['value_loss']:.3f}  game length {row['game_length']:.1f}"
        )

    trainer = jaxzero.make_trainer(config, env=game)
    jaxzero.train(args.out, trainer=trainer, iterations=iterations, force=args.force, on_log=log)

    agent = jaxzero.load_agent(args.out, env=game)  # the newest checkpoint's network
    opponent = jaxzero.make_opponent("random", game)
    key = jax.random.key(config.seed)
    result = jaxzero.play_match(game, agent.player, opponent, games, key, params_a=agent.params)
    print(f"against random ({config.evaluation.simulations} simulations a move): {result}")

    piles = jnp.arange(1, PILE + 1)  # a position for each pile
    logits, _ = agent.evaluate(jax.vmap(game.position)(piles))
    winning = piles % 4 != 0  # a winning move exists: take piles % 4, leave a multiple of 4
    right, total = int(((jnp.argmax(logits, -1) + 1 == piles % 4) & winning).sum()), winning.sum()
    print(f"the raw network's move wins in {right} of the {total} piles that can be won")


if __name__ == "__main__":
    try:
        main()
    except (OSError, RuntimeError, ValueError) as error:  # a read-only --out, a run in the way
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
