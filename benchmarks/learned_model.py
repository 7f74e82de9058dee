"""Planning and learning with a learned model (MuZero): what they cost beyond the networks.

    python benchmarks/learned_model.py                     # Connect Four, B 256, 32 sims, K 5
    python benchmarks/learned_model.py --game tic_tac_toe --seconds 3 --repeats 3
    python benchmarks/learned_model.py --smoke             # tiny settings: mostly compiling

Both parts use the preset's network section (``jaxzero.get_preset(game).network``), the
learned model built from it (``model.kind=learned``) beside the rules network of the same
section, and take the parameters as an argument, as the training iteration does.

(a) The search's overhead over its network calls, measured as the rules search's figure in
docs/benchmarks.md ("ours / network alone", ``benchmarks/selfplay_throughput.py``), in
positions (one move of one game, searched and played) per second:

* self-play: ``jaxzero.core.selfplay.make_selfplay_fn`` with the trainer's learned model
  (``make_trainer(...).options.model``), what the training loop runs;
* search: ``run_search`` with that model, the move played and finished games restarted,
  nothing else (``benchmarks/search_loop.py``'s call);
* networks alone: per move the root's ``represent`` + ``predict`` and S simulations of
  ``step`` + ``predict``, on the same batch, nothing else. No search with these networks and
  budget can be faster, so ``self-play / networks`` is the share of the time spent in them;
* rules (``--no-rules`` drops them): self-play with the rules network and its network alone
  (applied S + 1 times a move), the figure docs/benchmarks.md quotes, in the same process.

A learned model's search also steps the true game beside each expansion (its
``model/off_rules`` diagnostic; ``jaxzero.core.model``), which the networks alone do not.

(b) The learner's step: one update of ``unroll_loss_fn`` (``make_unroll_update_fn``) on a
sampled ``Unroll`` at K = ``--unroll-steps`` and at K = 1, and the rules learner's update
(``jaxzero.core.learner.make_update_fn``) on the first positions of the same rows, the same
minibatch and optimizer; ``--updates`` updates a call in one ``lax.scan``, as the loop runs
them. The replay they sample is synthetic (random positions, games of ``GAME_LENGTH``
moves): the cost does not depend on the values.

Sides take turns call by call, each until it has run ``--seconds``, after compilation and
a warm-up call; every call ends in ``block_until_ready``; a side's figure is its median
call. ``--repeats`` runs each race again and prints each run and the median of the ratios.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import jax
import jax.numpy as jnp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from envs.core import Env, State  # noqa: E402
from jaxzero.core import learner, networks, replay, search, selfplay, unroll  # noqa: E402
from jaxzero.core.config import (  # noqa: E402
    Config,
    ModelConfig,
    ReplayConfig,
    SelfPlayConfig,
)
from jaxzero.core.loop import Trainer, make_trainer  # noqa: E402
from jaxzero.core.model_networks import predict, represent, step  # noqa: E402
from jaxzero.core.presets import get_preset  # noqa: E402

GAME_LENGTH = 16  # moves of every game in the synthetic replay of part (b)
SMOKE = {
    "batch_size": 4,
    "simulations": 2,
    "moves": 1,
    "searches": ["gumbel"],
    "minibatch": 8,
    "unroll_steps": 2,
    "updates": 1,
    "seconds": 0.01,
    "repeats": 1,
}

Side = tuple[Callable, tuple]  # a jitted call(carry) -> carry, and its first carry


def config_for(args, kind: str, learned: bool) -> Config:
    """The preset with the benchmark's self-play batch and search, planning with a learned
    model (``learned``) or the rules."""
    config = get_preset(args.game)
    return dataclasses.replace(
        config,
        model=ModelConfig(kind="learned" if learned else "rules", unroll_steps=args.unroll_steps),
        search=dataclasses.replace(
            config.search, kind=kind, num_simulations=args.simulations, reuse_tree=False
        ),
        selfplay=SelfPlayConfig(batch_size=args.batch_size, moves_per_iteration=args.moves),
        # min_size gates only the learner, which part (a) does not run
        replay=ReplayConfig(capacity=args.batch_size * args.moves * 4, min_size=0),
        num_devices=1,
    )


def selfplay_side(trainer: Trainer, params, key) -> Side:
    """``moves`` moves of self-play as the training loop plays them (the trainer's pieces)."""
    config, env = trainer.config, trainer.env
    learned = config.model.learned
    play = selfplay.make_selfplay_fn(
        config.selfplay, env, trainer.apply_fn, trainer.search, trainer.options,
        num_simulations=config.search.num_simulations,
    )  # fmt: skip

    @jax.jit
    def call(carry):
        params, sp, buffer, key = carry
        key, k = jax.random.split(key)
        sp, buffer, _, _ = play(params, sp, buffer, k)
        return params, sp, buffer, key

    @jax.jit  # one compiled program, not a few hundred small ones on a loaded machine
    def start(key):
        sp = selfplay.init_selfplay(env, config.selfplay.batch_size, key, record_moves=learned)
        return sp, replay.init_replay(env, config.replay.capacity, sequences=learned)

    return call, (params, *start(key), key)


def search_side(trainer: Trainer, params, key) -> Side:
    """``moves`` learned-model searches (``run_search``), each move played, finished games
    restarted: the search alone."""
    config, env = trainer.config, trainer.env
    b, moves = config.selfplay.batch_size, config.selfplay.moves_per_iteration

    def move(params, states, key):
        k_search, k_step = jax.random.split(key)
        out = search.run_search(
            params, states, k_search, env, trainer.apply_fn, trainer.search,
            num_simulations=config.search.num_simulations, options=trainer.options,
        )  # fmt: skip
        nxt = jax.vmap(env.step)(states, out.action, jax.random.split(k_step, b))
        done = nxt.terminated | nxt.truncated
        fresh = jax.vmap(env.init)(jax.random.split(k_step, b))
        keep = lambda f, n: jnp.where(done.reshape(-1, *[1] * (n.ndim - 1)), f, n)  # noqa: E731
        return jax.tree.map(keep, fresh, nxt), None

    @jax.jit
    def call(carry):
        params, states, key = carry
        key, k = jax.random.split(key)
        body = lambda s, k: move(params, s, k)  # noqa: E731
        return params, jax.lax.scan(body, states, jax.random.split(k, moves))[0], key

    return call, (params, start_states(env, b, key), key)


def start_states(env: Env, batch: int, key) -> State:
    """B fresh games, in one compiled program."""
    return jax.jit(lambda key: jax.vmap(env.init)(jax.random.split(key, batch)))(key)


def networks_side(trainer: Trainer, params, key) -> Side:
    """The networks of ``moves`` searches and nothing else: per move, a learned model's
    root (``represent`` + ``predict``) and S ``step`` + ``predict``; the rules network
    applied S + 1 times."""
    config, env, network = trainer.config, trainer.env, trainer.network
    b, sims = config.selfplay.batch_size, config.search.num_simulations
    actions = jnp.arange(b, dtype=jnp.int32) % env.num_actions  # a move per game, as a search's

    def never(logits, value, reward=0.0):
        # A (never true) data dependency on every head fed back, so that XLA can elide
        # neither a call nor a head (selfplay_throughput.py's network alone does the same).
        return (value + reward + jnp.max(logits, axis=-1)) > 1e30

    def learned_move(params, observation):
        latent = represent(network, params, observation)
        first = never(*predict(network, params, latent))

        def simulation(carry, _):
            latent, flag = carry
            latent, reward = step(network, params, latent, actions)
            return (latent, flag | never(*predict(network, params, latent), reward)), None

        return jax.lax.scan(simulation, (latent, first), None, length=sims)[0][1]

    def rules_move(params, observation):
        def apply(flag, _):
            return flag | never(*network.apply(params, observation ^ flag.reshape(shape))), None

        shape = (-1, *[1] * (observation.ndim - 1))
        return jax.lax.scan(apply, jnp.zeros((b,), bool), None, length=sims + 1)[0]

    one_move = learned_move if config.model.learned else rules_move

    @jax.jit
    def call(carry):
        params, observation = carry

        def move(obs, _):
            flag = one_move(params, obs)
            return obs ^ flag.reshape(-1, *[1] * (obs.ndim - 1)), None

        moves = config.selfplay.moves_per_iteration
        return params, jax.lax.scan(move, observation, None, length=moves)[0]

    return call, (params, start_states(env, b, key).observation)


def synthetic_replay(env: Env, key, capacity: int) -> replay.ReplayBuffer:
    """A full sequence buffer of random positions, games of ``GAME_LENGTH`` moves laid end
    to end (each slot's ``remaining`` counts down to its game's last position)."""
    a = env.num_actions
    buffer = replay.init_replay(env, capacity, sequences=True)
    k_obs, k_pol, k_val, k_act, k_rew = jax.random.split(key, 5)
    slot = jnp.arange(capacity, dtype=jnp.int32)
    obs = buffer.observation
    return buffer.replace(
        observation=jax.random.bernoulli(k_obs, 0.3, obs.shape).astype(obs.dtype),
        policy=jax.nn.softmax(jax.random.normal(k_pol, (capacity, a))),
        value_target=jax.random.uniform(k_val, (capacity,), minval=-1, maxval=1),
        legal_action_mask=jnp.ones((capacity, a), bool),
        written=jnp.ones((capacity,), bool),
        action=jax.random.randint(k_act, (capacity,), 0, a, jnp.int32),
        reward=jax.random.uniform(k_rew, (capacity,), minval=-1, maxval=1),
        remaining=(GAME_LENGTH - 1) - slot % GAME_LENGTH,
        size=jnp.int32(capacity),
    )


def learner_sides(args, key) -> dict[str, Side]:
    """The learner's update, ``args.updates`` a call: unrolled K = ``unroll_steps`` and
    K = 1 (the same learned model), and the rules learner's on the rows' first positions."""
    learned = make_trainer(config_for(args, "gumbel", learned=True))
    rules = make_trainer(config_for(args, "gumbel", learned=False))
    env, optim = rules.env, rules.config.optim
    n, k = args.minibatch or optim.minibatch_size, args.unroll_steps
    value = networks.value_transform(rules.config.network)

    @functools.partial(jax.jit, static_argnums=0)
    def unrolls(steps: int, key) -> unroll.Unroll:  # [U, N, ...], the same rows for any K
        buffer = synthetic_replay(env, key, max(4 * n, 2 * GAME_LENGTH))
        keys = jax.random.split(key, args.updates)
        return jax.vmap(lambda kk: unroll.sample_unroll(buffer, kk, n, steps))(keys)

    model_update = unroll.make_unroll_update_fn(
        learned.network, learned.optimizer, optim, value=value
    )
    sides = {
        f"K={steps}": (scanned(model_update), (*start_learner(learned, key), unrolls(steps, key)))
        for steps in dict.fromkeys((k, 1))
    }
    first = unrolls(k, key)  # their first positions, for the rules learner
    batches = replay.Batch(
        observation=first.observation[:, :, 0],
        policy=first.policy[:, :, 0],
        value_target=first.value_target[:, :, 0],
        legal_action_mask=first.legal_action_mask[:, :, 0],
    )
    rules_update = learner.make_update_fn(rules.apply_fn, rules.optimizer, optim, value=value)
    sides["rules"] = (scanned(rules_update), (*start_learner(rules, key), batches))
    return sides


def start_learner(trainer: Trainer, key) -> tuple:
    """Initial parameters and optimizer state, ``(params, opt_state)``."""

    @jax.jit
    def start(key):
        params = networks.init_params(trainer.network, trainer.env, key)
        return params, trainer.optimizer.init(params)

    return start(key)


def scanned(update: Callable) -> Callable:
    """A jitted ``call((params, opt_state, batches [U, ...])) -> same``: U updates."""

    @jax.jit
    def call(carry):
        params, opt_state, batches = carry

        def one(carry, batch):
            params, opt_state, _ = update(*carry, batch)
            return (params, opt_state), None

        return (*jax.lax.scan(one, (params, opt_state), batches)[0], batches)

    return call


def timed(call: Callable, carry):
    start = time.perf_counter()
    carry = jax.block_until_ready(call(carry))
    return carry, time.perf_counter() - start


def race(sides: dict[str, Side], seconds: float, repeats: int) -> list[dict[str, float]]:
    """Per repeat, each side's median seconds per call: the sides take turns call by
    call, each until it has run ``seconds`` (compiled and warmed up once, first)."""
    carries = {}
    for name, (call, carry) in sides.items():
        carry, _ = timed(call, carry)  # compile
        carries[name], _ = timed(call, carry)  # warm-up
    runs = []
    for _ in range(repeats):
        times: dict[str, list[float]] = {name: [] for name in sides}
        while waiting := [name for name, t in times.items() if sum(t) < seconds]:
            for name in waiting:
                carries[name], elapsed = timed(sides[name][0], carries[name])
                times[name].append(elapsed)
        runs.append({name: statistics.median(t) for name, t in times.items()})
    return runs


def median_row(rows: list[list[float]]) -> list[float]:
    return [statistics.median(column) for column in zip(*rows, strict=True)]


def search_overhead(args) -> None:
    """Part (a): positions per second and their ratios, a row per repeat and search."""
    rules = not args.no_rules
    head = ["self-play", "search", "networks", "self-play/net", "search/net"]
    head += ["rules self-play", "rules net", "rules sp/net"] if rules else []
    print(f"{'search':<7} {'run':>6} " + " ".join(f"{h:>15}" for h in head))
    for kind in args.searches:
        key = jax.random.key(0)
        learned = make_trainer(config_for(args, kind, learned=True))
        params = start_learner(learned, key)[0]
        sides = {
            "self-play": selfplay_side(learned, params, key),
            "search": search_side(learned, params, key),
            "networks": networks_side(learned, params, key),
        }
        if rules:
            plain = make_trainer(config_for(args, kind, learned=False))
            params = start_learner(plain, key)[0]
            sides["rules self-play"] = selfplay_side(plain, params, key)
            sides["rules net"] = networks_side(plain, params, key)
        positions = args.batch_size * args.moves
        rows = []
        for seconds in race(sides, args.seconds, args.repeats):
            rate = {name: positions / s for name, s in seconds.items()}
            row = [rate["self-play"], rate["search"], rate["networks"]]
            row += [rate["self-play"] / rate["networks"], rate["search"] / rate["networks"]]
            if rules:
                rate_sp, rate_net = rate["rules self-play"], rate["rules net"]
                row += [rate_sp, rate_net, rate_sp / rate_net]
            rows.append(row)
            print_row(kind, str(len(rows)), row, ratios=(3, 4, 7))
        if args.repeats > 1:
            print_row(kind, "median", median_row(rows), ratios=(3, 4, 7))


def print_row(kind: str, run: str, row: list[float], ratios: tuple[int, ...]) -> None:
    cells = [f"{x:>14.2f}x" if i in ratios else f"{x:>15,.0f}" for i, x in enumerate(row)]
    print(f"{kind:<7} {run:>6} " + " ".join(cells), flush=True)


def learner_cost(args) -> None:
    """Part (b): milliseconds per update and their ratios, a row per repeat."""
    sides = learner_sides(args, jax.random.key(1))
    k = f"K={args.unroll_steps}"
    names = list(dict.fromkeys([k, "K=1", "rules"]))
    pairs = [(k, "K=1"), (k, "rules"), ("K=1", "rules")] if k != "K=1" else [(k, "rules")]
    print(
        f"{'run':>6} " + " ".join(f"{n + ' ms':>10}" for n in names) + " "
        + " ".join(f"{a + '/' + b:>10}" for a, b in pairs)
    )  # fmt: skip
    rows = []
    for seconds in race(sides, args.seconds, args.repeats):
        ms = {name: 1e3 * s / args.updates for name, s in seconds.items()}
        rows.append([ms[n] for n in names] + [ms[a] / ms[b] for a, b in pairs])
        print_ms(str(len(rows)), rows[-1], len(names))
    if args.repeats > 1:
        print_ms("median", median_row(rows), len(names))


def print_ms(run: str, row: list[float], times: int) -> None:
    cells = [f"{x:>10.1f}" if i < times else f"{x:>9.2f}x" for i, x in enumerate(row)]
    print(f"{run:>6} " + " ".join(cells), flush=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--game", default="connect_four", help="a preset's game")
    parser.add_argument("--batch-size", type=int, default=256, help="B games searched")
    parser.add_argument("--simulations", type=int, default=32)
    parser.add_argument("--moves", type=int, default=8, help="moves per timed call")
    parser.add_argument("--searches", nargs="+", default=["gumbel", "puct"])
    parser.add_argument("--no-rules", action="store_true", help="(a) without the rules sides")
    parser.add_argument("--minibatch", type=int, default=0, help="N (0: the preset's)")
    parser.add_argument("--unroll-steps", type=int, default=5, help="K of the learner's unroll")
    parser.add_argument("--updates", type=int, default=4, help="learner updates per call")
    parser.add_argument("--parts", nargs="+", default=["search", "learner"])
    parser.add_argument("--seconds", type=float, default=5.0, help="timed seconds per side")
    parser.add_argument("--repeats", type=int, default=1, help="races per table")
    parser.add_argument("--smoke", action="store_true", help="tiny settings (tests)")
    args = parser.parse_args(argv)
    if args.smoke:
        args = argparse.Namespace(**(vars(args) | SMOKE))

    network = get_preset(args.game).network
    size = (
        f"{network.num_blocks}x{network.channels} ResNet"
        if network.kind == "resnet"
        else f"{network.num_layers}x{network.hidden_size} {network.kind}"
    )
    print(
        f"{args.game}: preset network ({size}), jax {jax.__version__} on "
        f"{jax.devices()[0].platform}, {args.seconds:g} s a side, {args.repeats} repeat(s)"
    )
    if "search" in args.parts:
        print(
            f"(a) positions/s: batch {args.batch_size}, {args.simulations} simulations, "
            f"{args.moves} moves/call"
        )
        search_overhead(args)
    if "learner" in args.parts:
        n = args.minibatch or get_preset(args.game).optim.minibatch_size
        print(f"(b) learner, ms/update: minibatch {n}, {args.updates} updates/call")
        learner_cost(args)


if __name__ == "__main__":
    main()
