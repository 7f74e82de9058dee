"""Your own search rule: a PUCT variant trained beside the built-in PUCT and Gumbel.

A selection rule has mctx's unbatched signature, ``rule(rng_key, tree, node_index, depth)
-> action int32 []``, and goes into ``jaxzero.PuctSearch(interior_selection=rule)`` (also
used at the root unless ``root_selection`` is given). The variant here is Leela Zero's
first-play urgency (FPU): an unvisited child's Q is its parent's value less a reduction,
where mctx's PUCT puts it at the lowest Q among its siblings. Each search trains the same
tic-tac-toe network from the same seed with the same simulations a move; then each raw
network's move is scored on every solved tic-tac-toe position.

    python examples/custom_search.py               # about two minutes on a 2-core CPU
    python examples/custom_search.py --smoke       # toy sizes, seconds (CI)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import mctx

import envs
import jaxzero

C_PUCT = 1.25  # the exploration weight, as mctx's pb_c_init (Q rescaled to [0, 1])
FPU_REDUCTION = 0.3  # an unvisited child starts at its parent's value less this
SMOKE = {
    "selfplay.batch_size": 8,
    "selfplay.moves_per_iteration": 4,
    "search.num_simulations": 4,
    "replay.capacity": 256,
    "replay.min_size": 16,
    "optim.minibatch_size": 16,
    "optim.updates_per_iteration": 2,
    "network.hidden_size": 16,
}


def fpu_puct(
    rng_key: jax.Array, tree: mctx.Tree, node_index: jax.Array, depth: jax.Array
) -> jax.Array:
    """PUCT with first-play urgency: an unvisited child's Q is its parent's value less
    FPU_REDUCTION (Leela Zero), where mctx's PUCT puts it at the lowest Q in sight.

        a* = argmax_a (Q(s, a) + 1) / 2 + c P(s, a) sqrt(N(s)) / (1 + N(s, a))

    Q and V are in [-1, 1], from the view of the player to move at s (mctx's)."""
    visits = tree.children_visits[node_index]  # [A]
    prior = jax.nn.softmax(tree.children_prior_logits[node_index])  # [A]
    first_play = tree.node_values[node_index] - FPU_REDUCTION
    q = jnp.where(visits > 0, tree.qvalues(node_index), first_play)
    score = (q + 1) / 2 + C_PUCT * prior * jnp.sqrt(tree.node_visits[node_index]) / (1 + visits)
    # illegal: masked at the root, and of prior zero inside the tree (jaxzero masks them)
    illegal = ((depth == 0) & tree.root_invalid_actions) | (prior <= 0)
    return jnp.argmax(jnp.where(illegal, jnp.finfo(score.dtype).min, score)).astype(jnp.int32)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="toy sizes: a CI check, seconds")
    parser.add_argument("--out", type=Path, default=Path("runs/examples/custom_search"))
    args = parser.parse_args()

    env = envs.make("tic_tac_toe")
    config = jaxzero.get_preset("tic_tac_toe")
    if args.smoke:
        config = jaxzero.apply_overrides(config, SMOKE)
    iterations = 3 if args.smoke else 300
    sims = config.search.num_simulations  # the same budget for every search
    searches: dict[str, jaxzero.SearchPolicy] = {
        "puct": jaxzero.PuctSearch(pb_c_init=C_PUCT),
        "gumbel": jaxzero.GumbelSearch(max_num_considered_actions=9),
        "puct+fpu": jaxzero.PuctSearch(interior_selection=fpu_puct),
    }

    rows = []
    for name, search in searches.items():
        trainer = jaxzero.make_trainer(config, search=search)
        state = trainer.init(jax.random.key(config.seed))
        state, metrics, _ = trainer.iteration(state)  # compiles
        jax.block_until_ready(state)
        start = time.perf_counter()
        for _ in range(iterations - 1):
            state, metrics, _ = trainer.iteration(state)  # one compiled call each
        jax.block_until_ready(state)
        seconds = time.perf_counter() - start
        player = jaxzero.RawPolicyPlayer(trainer.apply_fn)
        quality = jaxzero.optimal_move_share(player, env, params=state.params)
        rows.append((name, quality.optimal, quality.kept, float(metrics["policy_loss"]), seconds))
        print(f"{name}: {quality}")

    lines = [
        f"tic-tac-toe, {iterations} iterations of {config.selfplay.batch_size} games, "
        f"{sims} simulations a move, seed {config.seed} (seconds: training, compile excluded)",
        f"{'search':<10} {'optimal':>8} {'kept':>8} {'policy loss':>12} {'seconds':>8}",
    ]
    for name, optimal, kept, loss, seconds in rows:
        lines.append(f"{name:<10} {optimal:8.1%} {kept:8.1%} {loss:12.3f} {seconds:8.1f}")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "comparison.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    try:
        main()
    except (OSError, RuntimeError, ValueError) as error:  # a read-only --out, a run in the way
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
