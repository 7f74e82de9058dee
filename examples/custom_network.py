"""Your own network: a small board transformer of yours trains tic-tac-toe in jaxzero's loop.

A network is any ``flax.linen.Module`` that maps a batch of observations [B, ...] to
``(logits [B, A], value [B])``, the value from the mover's point of view in [-1, 1];
pass it as ``make_trainer(config, network=...)``. Here every board cell is a token (its
planes embedded, plus a learned position), a few pre-norm self-attention blocks mix them,
the policy head reads the flattened tokens and the value head their mean. The run records
the module's import path and arguments (``network.kind``, ``network.args``); a module
defined in a script, as here, cannot be imported by another process, so ``load_agent``
is given it back (``network=``). At the end the raw network's move is scored on every
solved tic-tac-toe position.

    python examples/custom_network.py              # about five minutes on a 2-core CPU
    python examples/custom_network.py --smoke      # toy sizes, seconds (CI)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import flax.linen as nn
import jax
import jax.numpy as jnp

import envs
import jaxzero

SMOKE = {
    "selfplay.batch_size": 8,
    "selfplay.moves_per_iteration": 4,
    "search.num_simulations": 4,
    "replay.capacity": 256,
    "replay.min_size": 16,
    "optim.minibatch_size": 16,
    "optim.updates_per_iteration": 2,
    "train.log_every": 1,
}


class BoardTransformer(nn.Module):
    """Cells as tokens: [B, H, W, C] -> (logits [B, A], value [B])."""

    num_actions: int
    width: int = 32
    depth: int = 2
    heads: int = 4

    @nn.compact
    def __call__(self, observation: jax.Array) -> tuple[jax.Array, jax.Array]:
        batch, planes = observation.shape[0], observation.shape[-1]
        tokens = observation.astype(jnp.float32).reshape(batch, -1, planes)  # [B, cells, C]
        cells = tokens.shape[1]
        position = self.param("position", nn.initializers.normal(0.02), (cells, self.width))
        x = nn.Dense(self.width)(tokens) + position  # [B, cells, width]
        for _ in range(self.depth):
            x = x + nn.MultiHeadDotProductAttention(num_heads=self.heads)(nn.LayerNorm()(x))
            x = x + nn.Dense(self.width)(nn.gelu(nn.Dense(2 * self.width)(nn.LayerNorm()(x))))
        x = nn.LayerNorm()(x)
        logits = nn.Dense(self.num_actions)(x.reshape(batch, -1))
        value = jnp.tanh(nn.Dense(1)(x.mean(axis=1))[:, 0])
        return logits, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="toy sizes: a CI check, seconds")
    parser.add_argument("--out", type=Path, default=Path("runs/examples/custom_network"))
    parser.add_argument("--force", action="store_true", help="replace the run in --out")
    args = parser.parse_args()

    env = envs.make("tic_tac_toe")
    width, depth = (8, 1) if args.smoke else (32, 2)
    network = BoardTransformer(num_actions=env.num_actions, width=width, depth=depth)
    config = jaxzero.apply_overrides(jaxzero.get_preset("tic_tac_toe"), {"evaluation.every": 0})
    if args.smoke:
        config = jaxzero.apply_overrides(config, SMOKE)
    iterations = 3 if args.smoke else 400

    def log(row: dict[str, float]) -> None:
        print(
            f"iteration {row['iteration']:4.0f}  policy loss {row['policy_loss']:.3f}  "
            f"value loss {row['value_loss']:.3f}  {row['positions_per_second']:,.0f} positions/s"
        )

    trainer = jaxzero.make_trainer(config, network=network)
    print(f"network.kind={trainer.config.network.kind} args={dict(trainer.config.network.args)}")
    jaxzero.train(args.out, trainer=trainer, iterations=iterations, force=args.force, on_log=log)

    agent = jaxzero.load_agent(args.out, network=network)
    quality = jaxzero.optimal_move_share(
        jaxzero.RawPolicyPlayer(agent.network), env, params=agent.params
    )
    print(f"raw network after {agent.iteration} iterations: {quality}")


if __name__ == "__main__":
    try:
        main()
    except (OSError, RuntimeError, ValueError) as error:  # a read-only --out, a run in the way
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
