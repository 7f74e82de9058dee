"""Self-play throughput: our self-play against a pgx + mctx reference, same settings.

    python benchmarks/selfplay_throughput.py                       # Connect Four, B 256, 32 sims
    python benchmarks/selfplay_throughput.py --game tic_tac_toe --seconds 5

A position is one move of one game, searched and played. Both sides use the same Flax
network (``jaxzero.core.networks.ResNet``, ``--blocks`` x ``--channels``, default 2 x 32), the
same batch, the same number of simulations, the same mctx policy (``muzero_policy`` for
PUCT with Dirichlet root noise, ``gumbel_muzero_policy`` for Gumbel), and the same PRNG
implementation, and each runs ``--moves`` moves per jitted call as one ``lax.scan``.

* ours: ``jaxzero.core.selfplay.make_selfplay_fn`` unchanged, i.e. including what the training
  loop does around the search (trajectory bookkeeping, outcome labels, replay writes,
  auto-reset, metrics).
* reference: the recipe of pgx's own AlphaZero example: a pgx env, a recurrent function
  that steps it under ``vmap`` (discount -1, 0 at the end), ``policy_output.action`` played,
  auto-reset, the trajectory (observation, search policy, reward, done) as scan output.

* network alone: the same network applied ``simulations + 1`` times per move (the root and
  one expansion per simulation) to the same batch, nothing else. No self-play with this
  network and budget can be faster, so ``ceiling = network alone / reference`` bounds the
  ratio any implementation can reach against the reference; on a CPU the network is most
  of the time and the ceiling is low.

* ours without the replay write (``--without-write``): ours with ``replay.add`` traced as
  a no-op, to show what writing finished games' positions costs.

Every side takes the network's parameters as an argument, as the training iteration does
(they change every iteration). Closed over, they would be compile-time constants, which
XLA:CPU lays out ahead of time: the network alone ran about 7% faster that way on one
core (2026-12-03), a speed no training run's self-play has.

The sides take turns call by call for ``--seconds`` each after compilation and a warm-up
call; every timed call ends in ``block_until_ready``; the table shows median rates.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import time
from pathlib import Path
from unittest import mock

import jax
import jax.numpy as jnp
import mctx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import envs  # noqa: E402
from jaxzero.core import networks, replay, selfplay  # noqa: E402
from jaxzero.core.config import (  # noqa: E402
    Config,
    NetworkConfig,
    ReplayConfig,
    SearchConfig,
    SelfPlayConfig,
)
from jaxzero.core.policies import make_search  # noqa: E402
from jaxzero.core.search import SearchOptions  # noqa: E402


def resnet_config(args) -> NetworkConfig:
    """The benchmark's ResNet, with the narrow value head (one channel into ``channels``
    units) that its figures in docs/benchmarks.md were measured with."""
    return NetworkConfig(
        kind="resnet",
        num_blocks=args.blocks,
        channels=args.channels,
        value_channels=1,
        value_hidden=0,
    )


def ours(game: str, kind: str, args, key, write: bool = True):
    """A jitted ``call(carry) -> carry`` playing ``args.moves`` moves with jaxzero; with
    ``write`` False the replay write is traced as a no-op (what the write costs)."""
    env = envs.make(game)
    config = Config(
        game=game,
        network=resnet_config(args),
        search=SearchConfig(kind=kind, num_simulations=args.simulations),
        selfplay=SelfPlayConfig(batch_size=args.batch_size, moves_per_iteration=args.moves),
        # min_size only gates the learner, which this benchmark does not run; 0 keeps the
        # self-checking ReplayConfig valid for any batch (it must not exceed capacity).
        replay=ReplayConfig(capacity=args.batch_size * env.max_steps * 4, min_size=0),
    )
    network = networks.make_network(config.network, env)
    params = networks.init_params(network, env, key)
    options = SearchOptions.of(config.search)
    play = selfplay.make_selfplay_fn(
        config.selfplay, env, network.apply, make_search(config.search), options,
        num_simulations=args.simulations,
    )  # fmt: skip

    @jax.jit
    def call(carry):
        params, sp, buffer, key = carry
        key, k = jax.random.split(key)
        sp, buffer, _, _ = play(params, sp, buffer, k)
        return params, sp, buffer, key

    carry = (
        params,
        selfplay.init_selfplay(env, args.batch_size, key),
        replay.init_replay(env, config.replay.capacity),
        key,
    )
    if write:
        return call, carry

    def unwritten(carry):  # traced (first call) with replay.add a no-op
        with mock.patch.object(selfplay.replay_lib, "add", lambda buffer, *_: buffer):
            return call(carry)

    return unwritten, carry


def reference(game: str, kind: str, args, key):
    """The pgx + mctx recipe (pgx's AlphaZero example), same network and settings."""
    import pgx

    env = pgx.make(game)
    ours_env = envs.make(game)  # the network's action count and board shape
    network = networks.make_network(resnet_config(args), ours_env)
    # Sized by pgx's own observation: its Go has 17 planes (8 positions of history) to our
    # 9, so the reference's first convolution is pgx's, the rest the same network.
    params = network.init(key, env.init(key).observation[None].astype(jnp.float32))
    batch = args.batch_size

    def recurrent_fn(params, key, action, state):
        del key
        player = state.current_player
        state = jax.vmap(env.step)(state, action)
        logits, value = network.apply(params, state.observation)
        logits = logits - jnp.max(logits, axis=-1, keepdims=True)
        logits = jnp.where(state.legal_action_mask, logits, jnp.finfo(logits.dtype).min)
        reward = state.rewards[jnp.arange(batch), player]
        value = jnp.where(state.terminated, 0.0, value)
        discount = jnp.where(state.terminated, 0.0, -1.0 * jnp.ones_like(value))
        return mctx.RecurrentFnOutput(
            reward=reward, discount=discount, prior_logits=logits, value=value
        ), state

    def move(params, state, key):
        k_search, k_reset = jax.random.split(key)
        logits, value = network.apply(params, state.observation)
        root = mctx.RootFnOutput(prior_logits=logits, value=value, embedding=state)
        if kind == "puct":
            out = mctx.muzero_policy(
                params,
                k_search,
                root,
                recurrent_fn,
                args.simulations,
                invalid_actions=~state.legal_action_mask,
            )
        else:
            out = mctx.gumbel_muzero_policy(
                params,
                k_search,
                root,
                recurrent_fn,
                args.simulations,
                invalid_actions=~state.legal_action_mask,
                qtransform=mctx.qtransform_completed_by_mix_value,
            )
        player = state.current_player
        nxt = jax.vmap(env.step)(state, out.action)
        done = nxt.terminated | nxt.truncated
        fresh = jax.vmap(env.init)(jax.random.split(k_reset, batch))
        nxt = jax.tree.map(
            lambda f, n: jnp.where(done.reshape(-1, *[1] * (n.ndim - 1)), f, n), fresh, nxt
        )
        record = (
            state.observation,
            out.action_weights,
            nxt.rewards[jnp.arange(batch), player],
            done,
        )
        return nxt, record

    @jax.jit
    def call(carry):
        params, state, key = carry
        key, k = jax.random.split(key)
        state, trajectory = jax.lax.scan(
            functools.partial(move, params), state, jax.random.split(k, args.moves)
        )
        return params, state, key

    return call, (params, jax.vmap(env.init)(jax.random.split(key, batch)), key)


def network_alone(game: str, args, key):
    """The network's share of self-play: ``(simulations + 1) * moves`` applications."""
    env = envs.make(game)
    network = networks.make_network(resnet_config(args), env)
    params = networks.init_params(network, env, key)
    observation = jax.vmap(env.init)(jax.random.split(key, args.batch_size)).observation

    @jax.jit
    def call(carry):
        params, observation = carry

        def apply(obs, _):
            logits, value = network.apply(params, obs)
            # Feed a (never true) data dependency on both heads back, so that XLA can
            # elide neither an application nor the policy head.
            never = (value + jnp.max(logits, axis=-1)) > 1e30
            return obs ^ never.reshape(-1, *[1] * (obs.ndim - 1)), None

        length = (args.simulations + 1) * args.moves
        return params, jax.lax.scan(apply, observation, None, length=length)[0]

    return call, (params, observation)


def timed(call, carry):
    start = time.perf_counter()
    carry = jax.block_until_ready(call(carry))
    return carry, time.perf_counter() - start


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--game", default="connect_four")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--simulations", type=int, default=32)
    parser.add_argument("--moves", type=int, default=8, help="moves per timed call")
    parser.add_argument("--blocks", type=int, default=2)
    parser.add_argument("--channels", type=int, default=32)
    parser.add_argument("--searches", nargs="+", default=["puct", "gumbel"])
    parser.add_argument("--seconds", type=float, default=10.0, help="timed seconds per side")
    parser.add_argument("--prng", default="threefry2x32", help="jax_default_prng_impl")
    parser.add_argument(
        "--without-write", action="store_true",
        help="also time ours with the replay write removed: what the write costs",
    )  # fmt: skip
    args = parser.parse_args(argv)
    jax.config.update("jax_default_prng_impl", args.prng)

    print(
        f"{args.game}: batch {args.batch_size}, {args.simulations} simulations, "
        f"{args.blocks}x{args.channels} ResNet, {args.moves} moves/call, "
        f"jax {jax.__version__} on {jax.devices()[0].platform}"
    )
    print(
        f"{'search':<8} {'ours pos/s':>12} {'pgx+mctx pos/s':>15} {'ratio':>7} "
        f"{'network alone':>14} {'ceiling':>8} {'ours/network':>13}"
    )
    for kind in args.searches:
        key = jax.random.key(0)
        sides = {"ours": ours(args.game, kind, args, key)}
        sides["reference"] = reference(args.game, kind, args, key)
        sides["network"] = network_alone(args.game, args, key)
        if args.without_write:
            sides["unwritten"] = ours(args.game, kind, args, key, write=False)
        carries = {}
        for name, (call, carry) in sides.items():
            carry, _ = timed(call, carry)  # compile
            carries[name], _ = timed(call, carry)  # warm-up
        times: dict[str, list[float]] = {name: [] for name in sides}
        while min(sum(t) for t in times.values()) < args.seconds:
            for name, (call, _) in sides.items():
                carries[name], seconds = timed(call, carries[name])
                times[name].append(seconds)
        positions = args.batch_size * args.moves
        rate = {name: positions / statistics.median(t) for name, t in times.items()}
        print(
            f"{kind:<8} {rate['ours']:>12,.0f} {rate['reference']:>15,.0f} "
            f"{rate['ours'] / rate['reference']:>6.2f}x {rate['network']:>14,.0f} "
            f"{rate['network'] / rate['reference']:>7.2f}x "
            f"{rate['ours'] / rate['network']:>12.2f}x",
            flush=True,
        )
        if args.without_write:
            print(
                f"{'':<8} ours without the replay write {rate['unwritten']:,.0f} pos/s: the "
                f"write costs {1 - rate['ours'] / rate['unwritten']:.1%} of ours",
                flush=True,
            )


if __name__ == "__main__":
    main()
