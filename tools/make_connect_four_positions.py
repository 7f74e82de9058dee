"""Make the labelled Connect Four positions shipped in jaxzero/data/connect_four_positions.npz.

Each position is reached from the empty board by a game of ``--random-plies`` uniformly
random opening moves followed by a noisy one-ply player (with probability ``--noise`` a
random move, else: win if possible, else a move that does not give the opponent an
immediate win). The game is stopped at a depth drawn uniformly from ``--min-depth`` ..
``--max-depth`` stones; a live position is then solved move by move with
``jaxzero.games.connect_four.solver.Solver`` (the exact score of every legal column). Positions
the solver cannot finish within ``--max-nodes`` nodes are dropped and counted. Duplicates
are skipped. Fully deterministic for a given seed.

    python tools/make_connect_four_positions.py            # the shipped set
    python tools/make_connect_four_positions.py --positions 50 --out /tmp/c4.npz

Saved arrays: ``moves`` int8 [N, 42] (columns 0..6 from the empty board, -1 padded),
``lengths`` int32 [N], ``scores`` int8 [N, 7] (mover's score after each column, sign =
result, -100 for a full column), ``nodes`` int64 [N] (search nodes used).
"""

from __future__ import annotations

import argparse
import pathlib
import time

import numpy as np

from jaxzero.games.connect_four import solver as c4

DEFAULT_OUT = pathlib.Path(__file__).parents[1] / "jaxzero" / "data" / "connect_four_positions.npz"


def play_to_depth(rng: np.random.Generator, depth: int, random_plies: int, noise: float):
    """A move sequence of ``depth`` plies ending in a live position, or None if the game ended."""
    columns: list[int] = []
    position = mask = 0
    for ply in range(depth):
        playable = c4._playable(mask)
        legal = [c for c in range(c4.WIDTH) if playable & int(c4._COLUMN[c])]
        if ply < random_plies or rng.random() < noise:
            choice = legal
        else:
            wins = c4._winning_cells(position, mask) & playable
            safe = c4._safe_moves(position, mask)
            pool = wins or safe or playable
            choice = [c for c in legal if pool & int(c4._COLUMN[c])]
        column = int(rng.choice(choice))
        move = playable & int(c4._COLUMN[column])
        if c4._winning_cells(position, mask) & move:
            return None  # this move ends the game
        position, mask = position ^ mask, mask | move
        columns.append(column)
    return columns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--positions", type=int, default=1000)
    parser.add_argument("--min-depth", type=int, default=8)
    parser.add_argument("--max-depth", type=int, default=36)
    parser.add_argument("--random-plies", type=int, default=4)
    parser.add_argument("--noise", type=float, default=0.25)
    parser.add_argument("--max-nodes", type=int, default=20_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    solver = c4.Solver()
    seen: set[tuple[int, ...]] = set()
    rows: list[tuple[list[int], np.ndarray, int]] = []
    dropped = 0
    started = time.perf_counter()
    seconds = np.zeros(c4.CELLS + 1)
    while len(rows) < args.positions:
        depth = int(rng.integers(args.min_depth, args.max_depth + 1))
        columns = play_to_depth(rng, depth, args.random_plies, args.noise)
        if columns is None or tuple(columns) in seen:
            continue
        seen.add(tuple(columns))
        t0 = time.perf_counter()
        scores = solver.move_scores(columns, max_nodes=args.max_nodes)
        seconds[depth] += time.perf_counter() - t0
        if scores is None:
            dropped += 1
            continue
        rows.append((columns, scores, solver.nodes))

    n = len(rows)
    moves = np.full((n, c4.CELLS), -1, np.int8)
    lengths = np.array([len(r[0]) for r in rows], np.int32)
    for i, (columns, _, _) in enumerate(rows):
        moves[i, : len(columns)] = columns
    scores = np.stack([r[1] for r in rows]).astype(np.int8)
    nodes = np.array([r[2] for r in rows], np.int64)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out, moves=moves, lengths=lengths, scores=scores, nodes=nodes)

    results = c4.score_to_result(scores)
    legal = scores != c4.ILLEGAL
    best = np.where(legal, results, -2).max(1)
    worst = np.where(legal, results, 2).min(1)
    elapsed = time.perf_counter() - started
    print(f"{n} positions in {elapsed:.1f} s ({dropped} dropped over {args.max_nodes:,} nodes)")
    print(
        f"results for the mover: win {np.mean(best > 0):.1%}, draw {np.mean(best == 0):.1%}, "
        f"loss {np.mean(best < 0):.1%}; critical (some move changes the result): "
        f"{np.mean(worst < best):.1%}"
    )
    print("depth   positions  critical  median nodes  max nodes  solve s")
    for lo in range(args.min_depth, args.max_depth + 1, 4):
        band = (lengths >= lo) & (lengths < lo + 4)
        if band.any():
            print(
                f"{lo:2d}-{lo + 3:2d}  {band.sum():9d}  {np.sum(band & (worst < best)):8d}"
                f"  {int(np.median(nodes[band])):12,d}  {int(nodes[band].max()):9,d}"
                f"  {seconds[lo : lo + 4].sum():7.1f}"
            )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
