"""The search loop: jaxzero.core.mcts against mctx's own, same trees, side by side.

    python benchmarks/search_loop.py                  # Connect Four, batch 256, 32 simulations

Both sides run the same policy (``mctx.muzero_policy`` / ``mctx.gumbel_muzero_policy``
against ``mcts.puct_policy`` / ``mcts.gumbel_policy``: the same trees, see
tests/core/test_mcts.py) from the same roots with the same recurrent function, ``--moves``
searches per jitted call. Two networks:

* ``resnet``: the 2 x 32 ResNet at initialisation (near-uniform priors, shallow trees);
* ``sharp``: one random linear layer with large weights (sharp priors, the deep trees of a
  trained network), nearly free, so the table shows the search loop's own cost.

The sides take turns call by call for ``--seconds`` each; the table shows median ms per
search of the whole batch and the ratio mctx / ours (> 1: ours is faster).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import mctx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import envs  # noqa: E402
from jaxzero.core import mcts, networks, search  # noqa: E402
from jaxzero.core.config import NetworkConfig  # noqa: E402


def apply_fns(env, key, args):
    resnet = networks.make_network(  # the narrow value head its figures were measured with
        NetworkConfig(
            kind="resnet",
            num_blocks=args.blocks,
            channels=args.channels,
            value_channels=1,
            value_hidden=0,
        ),
        env,
    )
    params = networks.init_params(resnet, env, key)
    weights = 2.0 * jax.random.normal(
        key, (int(np.prod(env.observation_shape)), env.num_actions + 1)
    )

    def sharp(_, observation):
        x = observation.reshape(observation.shape[0], -1).astype(jnp.float32) @ weights
        return x[:, :-1], jnp.tanh(x[:, -1])

    return {"resnet": (resnet.apply, params), "sharp": (sharp, None)}


def policies(kind: str, simulations: int):
    if kind == "puct":
        return {
            "mctx": lambda p, k, root, f, inv: mctx.muzero_policy(
                p, k, root, f, simulations, invalid_actions=inv
            ),
            "ours": lambda p, k, root, f, inv: mcts.puct_policy(
                p, k, root, f, simulations, invalid_actions=inv
            ),
        }
    return {
        "mctx": lambda p, k, root, f, inv: mctx.gumbel_muzero_policy(
            p, k, root, f, simulations, invalid_actions=inv,
            qtransform=mctx.qtransform_completed_by_mix_value,
        ),
        "ours": lambda p, k, root, f, inv: mcts.gumbel_policy(
            p, k, root, f, simulations, invalid_actions=inv
        ),
    }  # fmt: skip


def make_call(env, apply_fn, params, policy, moves: int):
    """``call((states, key)) -> (states, key)``: ``moves`` searches, each played."""
    recurrent_fn = search.make_recurrent_fn(env, apply_fn)

    def move(states, key):
        k_search, k_step = jax.random.split(key)
        root = search.make_root(params, states, apply_fn)
        out = policy(params, k_search, root, recurrent_fn, ~states.legal_action_mask)
        batch = states.current_player.shape[0]
        nxt = jax.vmap(env.step)(states, out.action, jax.random.split(k_step, batch))
        done = nxt.terminated | nxt.truncated
        fresh = jax.vmap(env.init)(jax.random.split(k_step, batch))
        keep = lambda f, n: jnp.where(done.reshape(-1, *[1] * (n.ndim - 1)), f, n)  # noqa: E731
        return jax.tree.map(keep, fresh, nxt), None

    @jax.jit
    def call(carry):
        states, key = carry
        key, k = jax.random.split(key)
        return jax.lax.scan(move, states, jax.random.split(k, moves))[0], key

    return call


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--game", default="connect_four")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--simulations", type=int, default=32)
    parser.add_argument("--moves", type=int, default=4, help="searches per timed call")
    parser.add_argument("--blocks", type=int, default=2)
    parser.add_argument("--channels", type=int, default=32)
    parser.add_argument("--searches", nargs="+", default=["puct", "gumbel"])
    parser.add_argument("--networks", nargs="+", default=["sharp", "resnet"])
    parser.add_argument("--seconds", type=float, default=5.0, help="timed seconds per side")
    args = parser.parse_args(argv)

    env = envs.make(args.game)
    key = jax.random.key(0)
    states = jax.vmap(env.init)(jax.random.split(key, args.batch_size))
    fns = apply_fns(env, key, args)
    print(
        f"{args.game}: batch {args.batch_size}, {args.simulations} simulations, "
        f"jax {jax.__version__} on {jax.devices()[0].platform}"
    )
    print(f"{'search':<7} {'network':<8} {'mctx ms':>9} {'ours ms':>9} {'mctx/ours':>10}")
    for kind in args.searches:
        for name in args.networks:
            apply_fn, params = fns[name]
            sides = {
                side: make_call(env, apply_fn, params, policy, args.moves)
                for side, policy in policies(kind, args.simulations).items()
            }
            carries = {
                side: jax.block_until_ready(call((states, key))) for side, call in sides.items()
            }
            times: dict[str, list[float]] = {side: [] for side in sides}
            while min(sum(t) for t in times.values()) < args.seconds:
                for side, call in sides.items():
                    start = time.perf_counter()
                    carries[side] = jax.block_until_ready(call(carries[side]))
                    times[side].append(time.perf_counter() - start)
            ms = {side: 1000 * statistics.median(t) / args.moves for side, t in times.items()}
            print(
                f"{kind:<7} {name:<8} {ms['mctx']:>9.1f} {ms['ours']:>9.1f} "
                f"{ms['mctx'] / ms['ours']:>9.2f}x",
                flush=True,
            )


if __name__ == "__main__":
    main()
