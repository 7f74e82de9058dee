"""Learner step cost: K AlphaZero updates in one ``lax.scan``, with our convolution
(``jaxzero.core.networks.conv_general_dilated``) against Flax's stock ``nn.Conv``.

    python benchmarks/learner_step.py                       # connect_four preset net, K 8
    python benchmarks/learner_step.py --game go_9x9 --updates 4

Both sides are the same ResNet (the preset's blocks and channels), the same minibatch, the
same loss, optimizer and parameters; only the convolution's backward pass differs (ours
is written as a forward convolution, slices and matmuls). Each side is timed two ways:

* in a loop: the K updates as a ``lax.scan``, as ``jaxzero.core.loop`` runs them;
* unrolled: the same K updates in straight-line code (``unroll=True``), which XLA
  compiles without a while loop (compile time grows with K).

On XLA's CPU backend a convolution's gradients are several times slower inside a while
loop than unrolled; the ``stock loop / ours loop`` ratio is what the training loop gains.
The sides take turns call by call, each until it has run ``--seconds``, after a warm-up
call; the table shows median milliseconds per update.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import flax.linen as nn
import jax
import jax.numpy as jnp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import envs  # noqa: E402
from jaxzero.core import learner, networks, replay  # noqa: E402
from jaxzero.core.presets import get_preset  # noqa: E402


def make_updates(apply_fn, optimizer, optim, batches, unroll: bool):
    """A jitted ``call((params, opt_state)) -> (params, opt_state)``: K updates."""
    update = learner.make_update_fn(apply_fn, optimizer, optim)

    @jax.jit
    def call(carry):
        def step(carry, batch):
            params, opt_state, _ = update(*carry, batch)
            return (params, opt_state), None

        return jax.lax.scan(step, carry, batches, unroll=unroll)[0]

    return call


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--game", default="connect_four", help="a preset with a ResNet")
    parser.add_argument("--updates", type=int, default=8, help="K updates per call")
    parser.add_argument("--seconds", type=float, default=5.0, help="timing per side")
    parser.add_argument("--minibatch", type=int, default=0, help="N (0: the preset's)")
    args = parser.parse_args(argv)

    config = get_preset(args.game)
    env = envs.make(config.game)
    ours = networks.make_network(config.network, env)
    stock_net = ours.clone(conv=nn.Conv)  # the same module tree, Flax's own convolution

    key = jax.random.key(0)
    params = networks.init_params(ours, env, key)
    optimizer = learner.make_optimizer(config.optim)
    n, k = args.minibatch or config.optim.minibatch_size, args.updates
    obs = jax.eval_shape(lambda: env.init(key).observation)
    keys = jax.random.split(key, 3)
    batches = replay.Batch(  # [K, N, ...]
        observation=jax.random.bernoulli(keys[0], 0.3, (k, n, *obs.shape)).astype(obs.dtype),
        policy=jax.nn.softmax(jax.random.normal(keys[1], (k, n, env.num_actions))),
        value_target=jax.random.uniform(keys[2], (k, n), minval=-1, maxval=1),
        legal_action_mask=jnp.ones((k, n, env.num_actions), jnp.bool_),
    )
    sides = {
        f"{name} {way}": make_updates(net.apply, optimizer, config.optim, batches, unroll)
        for name, net in (("ours", ours), ("stock", stock_net))
        for way, unroll in (("loop", False), ("unrolled", True))
    }
    carry = (params, optimizer.init(params))
    compile_s = {}
    for name, call in sides.items():
        start = time.perf_counter()
        jax.block_until_ready(call(carry))
        compile_s[name] = time.perf_counter() - start
    times: dict[str, list[float]] = {name: [] for name in sides}
    while waiting := [name for name, t in times.items() if sum(t) < args.seconds]:
        for name in waiting:  # in turns, each side until it has its seconds
            start = time.perf_counter()
            jax.block_until_ready(sides[name](carry))
            times[name].append(time.perf_counter() - start)

    ms = {name: 1e3 * statistics.median(t) / k for name, t in times.items()}
    print(
        f"{args.game}: {config.network.num_blocks} x {config.network.channels} ResNet, "
        f"minibatch {n}, K = {k} updates per call, {jax.devices()[0].platform}"
    )
    print(f"{'side':16} {'ms/update':>10} {'first call s':>13}")
    for name in sides:
        print(f"{name:16} {ms[name]:10.1f} {compile_s[name]:13.1f}")
    print(f"stock loop / ours loop: {ms['stock loop'] / ms['ours loop']:.2f}x")
    print(f"stock loop / stock unrolled: {ms['stock loop'] / ms['stock unrolled']:.2f}x")
    print(f"ours loop / stock unrolled: {ms['ours loop'] / ms['stock unrolled']:.2f}x")


if __name__ == "__main__":
    main()
