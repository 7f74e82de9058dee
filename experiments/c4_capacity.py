"""How much Connect Four a network can hold: trained on the solver's answers, not self-play.

Issue #21's Connect Four bars (result kept >= 93% / 97% with 64 simulations) are missed,
and self-play compute is one candidate limit, the network's size another. This script
separates them. It labels positions drawn as the shipped set's are
(``make_connect_four_positions.play_to_depth``, another seed, the shipped 1,000 left out)
with the solver's result of every move, trains the preset's network on these perfect
targets (policy: uniform over the moves that keep the result; value: the result; each
position and its mirror image), and measures it on the shipped set as ``move_quality.py``
does: the raw policy, and the preset's evaluating search with 64 simulations.

If the network trained this way keeps the result in fewer critical positions than a bar
asks, no amount of self-play reaches the bar with that network.

    python experiments/c4_capacity.py --positions 20000 --labels runs/c4_labels.npz
    python experiments/c4_capacity.py --labels runs/c4_labels.npz --set network.channels=64

Labels are cached in ``--labels`` (made when the file is missing). Positions the solver
cannot finish within ``--max-nodes`` nodes are dropped and counted: they lean to early,
open positions, so the training set is somewhat easier than the shipped one.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import envs
from jaxzero.core import learner, networks
from jaxzero.core.config import apply_overrides, parse_key_values
from jaxzero.core.policies import make_search
from jaxzero.core.presets import get_preset
from jaxzero.core.replay import Batch
from jaxzero.games.connect_four import solver as c4
from jaxzero.measure.games import PositionSet, position_set
from jaxzero.measure.players import RawPolicyPlayer, evaluation_network, evaluation_player
from jaxzero.measure.positions import SolvedPositions, states_from_moves

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))  # tools/ modules, as scripts
from make_connect_four_positions import play_to_depth  # noqa: E402


def make_labels(path: Path, positions: int, max_nodes: int, seed: int) -> None:
    """Solve ``positions`` new positions move by move (weakly: win, draw or loss) into ``path``."""
    shipped = position_set("connect_four")
    rows = zip(shipped.moves.tolist(), shipped.lengths, strict=True)
    seen = {tuple(row[:n]) for row, n in rows}
    rng = np.random.default_rng(seed)
    solver = c4.Solver()
    moves = np.full((positions, c4.CELLS), -1, np.int8)
    lengths = np.zeros(positions, np.int32)
    results = np.zeros((positions, c4.WIDTH), np.int8)
    kept = dropped = 0
    started = time.perf_counter()
    while kept < positions:
        columns = play_to_depth(rng, int(rng.integers(8, 37)), 4, 0.25)
        if columns is None or tuple(columns) in seen:
            continue
        seen.add(tuple(columns))
        scores = solver.move_scores(columns, weak=True, max_nodes=max_nodes)
        if scores is None:
            dropped += 1
            continue
        moves[kept, : len(columns)], lengths[kept], results[kept] = columns, len(columns), scores
        kept += 1
        if kept % 2000 == 0:
            print(f"  {kept} solved, {dropped} dropped, {time.perf_counter() - started:.0f} s")
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, moves=moves, lengths=lengths, results=results, dropped=dropped)
    print(f"labelled {positions} positions in {time.perf_counter() - started:.0f} s "
          f"({dropped} dropped over {max_nodes:,} nodes)")  # fmt: skip


def dataset(env, data: PositionSet, mirror: bool = True) -> Batch:
    """Solved positions (and their mirror images) as perfect targets: Batch [N] or [2N]."""
    moves, lengths, results = data.moves, data.lengths, data.results  # results: -2 illegal
    if mirror:
        mirrored = np.where(moves >= 0, c4.WIDTH - 1 - moves, moves)
        moves = np.concatenate([moves, mirrored])
        lengths = np.concatenate([lengths, lengths])
        results = np.concatenate([results, results[:, ::-1]])
    states = states_from_moves(env, moves, lengths)
    best = results.max(1)
    optimal = results == best[:, None]  # never an illegal move: -2 is below every result
    assert np.array_equal(results > -2, np.asarray(states.legal_action_mask)), "labels and env"
    return Batch(
        observation=states.observation,
        policy=jnp.asarray(optimal / optimal.sum(1, keepdims=True), jnp.float32),
        value_target=jnp.asarray(best, jnp.float32),
        legal_action_mask=states.legal_action_mask,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--labels", type=Path, required=True, help="npz cache of the labels")
    parser.add_argument("--positions", type=int, default=20_000, help="to label if missing")
    parser.add_argument("--max-nodes", type=int, default=300_000, help="solver budget")
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--simulations", type=int, default=64)
    parser.add_argument("--seed", type=int, default=1, help="of the labelled positions")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a config override, e.g. network.channels=64")  # fmt: skip
    args = parser.parse_args()

    if not args.labels.exists():
        make_labels(args.labels, args.positions, args.max_nodes, args.seed)
    with np.load(args.labels) as f:
        labels = PositionSet(f["moves"], f["lengths"], f["results"], f["results"] != c4.ILLEGAL)
    config = apply_overrides(get_preset("connect_four"), parse_key_values(args.set, "--set"))
    env = envs.make("connect_four")
    data = dataset(env, labels)
    held_out = dataset(env, position_set("connect_four"), mirror=False)

    n = data.value_target.shape[0]
    size = config.optim.minibatch_size
    steps = args.epochs * (n // size)
    optim = dataclasses.replace(config.optim, decay_steps=steps)
    network = networks.make_network(config.network, env)
    apply_fn = networks.make_apply_fn(network)
    value = networks.value_transform(config.network)
    params = networks.init_params(network, env, jax.random.key(0))
    optimizer = learner.make_optimizer(optim)
    update = jax.jit(learner.make_update_fn(apply_fn, optimizer, optim, value=value))
    opt_state = optimizer.init(params)
    held_out_loss = jax.jit(
        lambda params: learner.loss_fn(params, apply_fn, held_out, value=value)[1]
    )
    count = sum(x.size for x in jax.tree.leaves(params))
    print(f"{n} training positions (with mirrors), {count:,} parameters "
          f"({config.network.kind} {config.network.num_blocks} x {config.network.channels}), "
          f"{steps} updates of {size}")  # fmt: skip

    probe = SolvedPositions(env)
    raw = RawPolicyPlayer(evaluation_network(apply_fn, env, config.evaluation.average_symmetries))
    policy = make_search(config.search)
    search = evaluation_player(config, env, apply_fn, policy).replace(
        num_simulations=args.simulations
    )
    rng = np.random.default_rng(0)
    started = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        order = rng.permutation(n)
        for i in range(n // size):
            batch = jax.tree.map(lambda x, idx=order[i * size : (i + 1) * size]: x[idx], data)
            params, opt_state, metrics = update(params, opt_state, batch)
        if epoch % 10 == 0 or epoch == args.epochs:
            print(f"epoch {epoch:3d} ({time.perf_counter() - started:.0f} s): "
                  f"policy loss {float(metrics['policy_loss']):.3f}, "
                  f"value loss {float(metrics['value_loss']):.3f} "
                  f"(held out {float(held_out_loss(params)['value_loss']):.3f}); "
                  f"raw policy {probe.quality(raw, params)}")  # fmt: skip
    quality = probe.quality(search, params, key=jax.random.key(1))
    print(f"{config.search.kind} {args.simulations} sims: {quality}")


if __name__ == "__main__":
    main()
