"""Where a population's iteration spends its time: each phase, one run against P members.

    python benchmarks/population_phases.py                           # tic-tac-toe, P = 8
    python benchmarks/population_phases.py --game connect_four --members 4 --seconds 3

An iteration's phases, each compiled alone and repeated as often as one iteration runs
it (T moves of self-play, K learner updates), on the states a real iteration leaves:

* ``search``: the batched search of the B games (root network call, simulations, each
  expansion's env step and network call), ``jaxzero.core.search.run_search``;
* ``env steps``: the move played and the finished games restarted (``env.step``,
  ``env.init``) over B games;
* ``replay writes``: one move's finished-game positions scattered into the ring;
* ``sampling``: a minibatch gathered from the ring with its random symmetry;
* ``learner``: one optimizer step on a minibatch (forward, gradient, adamw);
* ``iteration``: the whole compiled iteration, for reference.

Each phase runs four ways: one member's (the single run's), "P runs" (that one P times:
P runs one after another), all P members vmapped together, one member at a time
(``lax.map`` over them in one program), and folded: the P members' games and trees as
one batch of P·B rows, the network applied to each member's rows with its own parameters
(:func:`fold_apply`; the replay and learner phases have no rows to fold:
their fold is the vmap). The sides take turns call by call for ``--seconds`` each; the
table gives each phase's median milliseconds per iteration and each way's ratio to P
runs (above 1: faster than P runs one after another). The machine is shared: read
the ratios.
"""

from __future__ import annotations

import argparse
import functools
import math
import statistics
import sys
import time
import typing
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jaxzero.run.life import ways as ways_lib  # noqa: E402

ways_lib.use_host_cores()  # before JAX starts: the cores as devices

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

from jaxzero.core import learner, replay, search, selfplay, sharding  # noqa: E402
from jaxzero.core.config import apply_overrides, parse_key_values  # noqa: E402
from jaxzero.core.networks import ApplyFn  # noqa: E402
from jaxzero.core.population import make_population, member  # noqa: E402
from jaxzero.core.presets import get_preset  # noqa: E402

WAYS = ("vmapped", "one at a time", "folded", "cores, one at a time")


def fold_apply(apply_fn: ApplyFn, members: int) -> ApplyFn:
    """``apply_fn`` over P members' rows folded into one batch: variables [P, ...] (each
    member's own), observations [P·B, ...] member-major -> logits [P·B, A], value [P·B]
    (each row by its member's network: a vmap over P of the member's B rows)."""

    def apply(variables: typing.Any, observation: jax.Array, *, value_logits: bool = False):
        rows = observation.reshape(members, -1, *observation.shape[1:])  # [P, B, ...]
        logits, value = jax.vmap(lambda v, o: apply_fn(v, o, value_logits=value_logits))(
            variables, rows
        )
        return logits.reshape(-1, *logits.shape[2:]), value.reshape(-1, *value.shape[2:])

    return typing.cast(ApplyFn, apply)


def phases(trainer, members: int) -> dict[str, Callable]:
    """Each phase as ``run(state, key, member_axis, folded) -> float32 []``: the phase
    repeated as often as an iteration runs it on one member's TrainState (or, folded, on
    P members' states whose rows are one batch), a checksum out so nothing is dropped."""
    config, env, apply_fn = trainer.config, trainer.env, trainer.apply_fn
    moves, updates = config.selfplay.moves_per_iteration, config.optim.updates_per_iteration
    minibatch = config.optim.minibatch_size
    symmetries = env.symmetries if config.replay.augment else None
    options = search.SearchOptions.of(config.search)
    update = learner.make_update_fn(apply_fn, trainer.optimizer, config.optim)

    def repeat(times, body):
        return lambda key: jax.lax.fori_loop(
            0, times, lambda i, total: total + body(jax.random.fold_in(key, i)), jnp.float32(0)
        )

    def search_phase(state, key, member_axis, folded):
        apply = fold_apply(apply_fn, members) if folded else apply_fn
        states = state.selfplay.env_state

        def once(k):
            output = search.run_search(
                state.best_params, states, k, env, apply, trainer.search, options=options,
                num_simulations=config.search.num_simulations, member_axis=member_axis,
            )  # fmt: skip
            return output.action_weights.sum()

        return repeat(moves, once)(key)

    def env_phase(state, key, member_axis, folded):
        states = state.selfplay.env_state
        b = states.current_player.shape[0]

        def once(k):
            k_act, k_env, k_reset = jax.random.split(k, 3)
            legal = jnp.where(states.legal_action_mask, 0.0, -jnp.inf)
            action = jax.random.categorical(k_act, legal).astype(jnp.int32)
            nxt = jax.vmap(env.step)(states, action, jax.random.split(k_env, b))
            fresh = jax.vmap(env.init)(jax.random.split(k_reset, b))
            return nxt.rewards.sum() + fresh.current_player.sum()

        return repeat(moves, once)(key)

    def write_phase(state, key, member_axis, folded):
        sp = state.selfplay

        def once(k):
            done = jax.random.uniform(k, sp.length.shape) < 0.2  # a fifth of the games end
            batch, valid = selfplay.finished_games_batch(sp, done)
            return replay.add(state.replay, batch, valid).value_target.sum()

        return repeat(moves, once)(key)

    def sample_phase(state, key, member_axis, folded):
        once = lambda k: replay.sample(state.replay, k, minibatch, symmetries).value_target.sum()  # noqa: E731
        return repeat(updates, once)(key)

    def learner_phase(state, key, member_axis, folded):
        batch = replay.sample(state.replay, key, minibatch, symmetries)

        def once(k):
            params, _, metrics = update(state.params, state.opt_state, batch)
            return metrics["policy_loss"] + jax.tree.leaves(params)[0].sum()

        return repeat(updates, once)(key)

    return {
        "search": search_phase,
        "env steps": env_phase,
        "replay writes": write_phase,
        "sampling": sample_phase,
        "learner": learner_phase,
    }


def ways(phase: Callable, members: int) -> dict[str, Callable]:
    """``phase`` on one member's state, and on P members' stacked states (leaves [P, ...])
    vmapped, one at a time, and folded (the rows of every member one batch)."""
    single = lambda state, key: phase(state, key, None, False)  # noqa: E731
    vmapped = jax.vmap(
        lambda state, key: phase(state, key, sharding.MEMBER_AXIS, False),
        axis_name=sharding.MEMBER_AXIS,
    )

    def one_at_a_time(states, keys):
        return jax.lax.map(lambda m: single(*m), (states, keys))

    def folded(states, keys):
        games = jax.tree.map(lambda x: x.reshape(-1, *x.shape[2:]), states.selfplay)
        state = states.replace(selfplay=games)  # params stay [P, ...]: fold_apply's
        return phase(state, keys[0], None, True)

    cores = math.gcd(members, jax.device_count())
    mesh = sharding.make_mesh(cores)
    split = jax.shard_map(
        one_at_a_time, mesh=mesh, in_specs=P(sharding.DATA_AXIS), out_specs=P(sharding.DATA_AXIS),
        check_vma=False,
    )  # fmt: skip
    return {
        "one run": jax.jit(single),
        "vmapped": jax.jit(vmapped),
        "one at a time": jax.jit(one_at_a_time),
        "folded": jax.jit(folded),
        "cores, one at a time": jax.jit(split),
    }


def measure(game: str, members: int, seconds: float, overrides: dict[str, str]) -> dict:
    """{phase: {way: median seconds per iteration}}, the ways taking turns."""
    config = apply_overrides(get_preset(game), {"num_devices": 1} | overrides)
    population = make_population(config, seeds=range(members), members_at_once=1, devices=1)
    states = population.init()
    for _ in range(2):  # the states an iteration leaves: games under way, replay written
        states = population.iteration(states)[0]
    states = states.train_state()
    one = member(states, 0)
    keys = jax.random.split(jax.random.key(1), members)
    cores = sharding.make_mesh(math.gcd(members, jax.device_count()))
    placed = jax.device_put((states, keys), NamedSharding(cores, P(sharding.DATA_AXIS)))
    inputs = {"one run": (one, keys[0]), "cores, one at a time": placed}
    found: dict[str, dict[str, float]] = {}
    every = phases(population.trainer, members)
    whole = {
        "one run": lambda: population.trainer.iteration(one)[0],
        "vmapped": _iteration(config, members, 0, states),
        "one at a time": _iteration(config, members, 1, states),
        "cores, one at a time": _iteration(
            config, members, 1, states, math.gcd(members, jax.device_count())
        ),
    }
    for name, phase in every.items():
        sides = ways(phase, members)
        calls = {
            way: functools.partial(f, *inputs.get(way, (states, keys)))
            for way, f in sides.items()
            if not (way == "folded" and name in ("replay writes", "sampling", "learner"))
        }
        found[name] = _alternate(calls, seconds)
        print(f"  {name}: {_row(found[name], members)}", file=sys.stderr, flush=True)
    found["iteration"] = _alternate(whole, seconds)
    return found


def _iteration(config, members: int, at_once: int, states, devices: int = 1) -> Callable:
    population = make_population(
        config, seeds=range(members), members_at_once=at_once or members, devices=devices,
        hyper={"optim.learning_rate": config.optim.learning_rate},
    )  # fmt: skip
    state = population.init()
    return lambda: population.iteration(state)[0]


def _alternate(calls: dict[str, Callable], seconds: float) -> dict[str, float]:
    """Median seconds of each call, taking turns after a compile and a warm-up."""
    for call in calls.values():
        jax.block_until_ready(call())
    times: dict[str, list[float]] = {way: [] for way in calls}
    while min(sum(t) for t in times.values()) < seconds or min(map(len, times.values())) < 3:
        for way, call in calls.items():
            begin = time.perf_counter()
            jax.block_until_ready(call())
            times[way].append(time.perf_counter() - begin)
    return {way: statistics.median(t) for way, t in times.items()}


def _row(times: dict[str, float], members: int) -> str:
    runs = times["one run"] * members
    cells = [f"{times['one run'] * 1e3:,.1f}", f"{runs * 1e3:,.1f}"]
    for way in WAYS:
        cells.append(
            f"{times[way] * 1e3:,.1f} ({runs / times[way]:.2f}x)" if way in times else "(vmapped)"
        )
    return " | ".join(cells)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", default="tic_tac_toe")
    parser.add_argument("--members", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=2.0, help="timed seconds a side")
    parser.add_argument("--set", nargs="*", default=[], help="config overrides KEY=VALUE")
    args = parser.parse_args(argv)
    overrides = parse_key_values(args.set, "--set")
    found = measure(args.game, args.members, args.seconds, overrides)
    p = args.members
    print(f"device: {jax.devices()[0].device_kind}; {args.game}, P = {p}; ms per iteration")
    print(f"| phase | one run | {p} runs | " + " | ".join(WAYS) + " |")
    print("|---|---|---|" + "---|" * len(WAYS))
    for name, times in found.items():
        print(f"| {name} | {_row(times, p)} |")


if __name__ == "__main__":
    main()
