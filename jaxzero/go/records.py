"""Game records on disk: Go games of self-play and of evaluation matches as SGF files.

    recorder = SelfPlayRecorder(env, "runs/go_9x9/sgf", fresh=True)
    recorder.add(action, done, reward)     # numpy [T, B], [T, B], [T, B, 2] per iteration

    outcome, a_seat, actions, final = match.recorded(params_a, params_b, key)
    records = match_records(env, actions, a_seat, outcome, final, ("run@100", "random"))
    write_records(records, "runs/go_9x9/eval_sgf", prefix="run@100_vs_random")

Results (SGF ``RE``) come from each game's final position under the env's own rules
(:func:`envs.go.score`): a match returns its final positions, self-play games are
replayed from their moves.

* two passes ended the game: the area-score margin, ``B+3.5`` / ``W+0.5`` (``0`` for a
  draw, possible only with an integer komi);
* an illegal move ended it (the mover loses, ``envs.core.Env.step``): ``B+F`` / ``W+F``
  (win by forfeit);
* the move cap ``max_steps`` cut it: ``Void`` (no result).

Self-play games are replayed in fixed-size batches padded to ``env.max_steps`` moves, so
the replay compiles once per env and batch size.
"""

from __future__ import annotations

import re
import typing
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from envs import go
from envs.core import Env
from jaxzero.go.sgf import GoRecord, area_result, write_sgf
from jaxzero.measure.positions import make_replayer
from jaxzero.run.folder import nolink

FILE_PREFIX = "selfplay_"
_NUMBER = re.compile(rf"^{FILE_PREFIX}(\d+)\.sgf$")


def require_go(env: Env, what: str = "SGF game records") -> go.Go:
    """``env`` itself if it is Go; ValueError naming the game otherwise."""
    if not isinstance(env, go.Go):
        raise ValueError(f"{what} are written for Go only (go, go_6x6, go_9x9), not {env.id}")
    return env


def game_results(
    env: go.Go, games: Sequence[Sequence[int]], batch: int, replay: Callable | None = None
) -> list[str]:
    """The SGF result (``RE``) of each finished game, replayed from the empty board in
    batches of ``batch`` games (padded, so that one compiled ``replay``, a
    ``make_replayer(env)`` the caller keeps, serves every call).

    ValueError if a game is not over after its moves (a record that lost moves).
    """
    replay = make_replayer(env) if replay is None else replay
    results = []
    for start in range(0, len(games), batch):
        chunk = [list(g) for g in games[start : start + batch]]
        lengths = np.full(batch, -1, np.int32)  # -1: a padding row
        moves = np.zeros((batch, env.max_steps), np.int32)
        for i, game in enumerate(chunk):
            if len(game) > env.max_steps:
                raise ValueError(f"a game of {len(game)} moves is longer than {env.max_steps}")
            lengths[i] = len(game)
            moves[i, : len(game)] = game
        final = typing.cast(go.GoState, replay(jnp.asarray(moves), jnp.asarray(lengths)))
        black_sign = np.sign(np.asarray(final.rewards[:, 0]))  # the last move's reward
        results += final_results(env, final, lengths, black_sign)
    return results


def final_results(
    env: go.Go, final: go.GoState, lengths: np.ndarray, black_sign: np.ndarray
) -> list[str]:
    """The SGF results of games [N] from their final positions ``final`` (a batch of N
    states), their lengths int [N] and the sign of Black's total reward int [N] (who won
    a forfeit); rows of length -1 are padding and get none. ValueError if a game is not
    over after exactly its length in moves."""
    black, white = _scores(final)
    terminated, truncated, passes, steps, black, white = jax.device_get(
        (final.terminated, final.truncated, final.passes, final.step_count, black, white)
    )
    results = []
    for i, length in enumerate(np.asarray(lengths)):
        if length < 0:
            continue
        if steps[i] != length or not (terminated[i] or truncated[i]):
            raise ValueError(
                f"the recorded game of {length} moves does not end where it should "
                f"(replayed: {int(steps[i])} moves, over: {bool(terminated[i] or truncated[i])})"
            )
        if truncated[i]:
            results.append("Void")
        elif passes[i] >= 2:
            results.append(area_result(int(black[i]), int(white[i]), env.komi))
        else:  # an illegal move ended it
            results.append("B+F" if black_sign[i] > 0 else "W+F")
    return results


@jax.jit
def _scores(states: go.GoState) -> tuple[jax.Array, jax.Array]:
    return jax.vmap(go.score)(states)


def match_records(
    env: Env,
    actions: np.ndarray,
    a_seat: np.ndarray,
    outcome: np.ndarray,
    final: go.GoState,
    names: tuple[str, str],
) -> list[GoRecord]:
    """The games of one match (``evaluate.PairedMatch.recorded``) as Go records.

    ``actions`` int32 [G, L] (-1 after a game's end), ``a_seat`` int32 [G] (0: A is Black),
    ``outcome`` int32 [G] (A's result), ``final`` the games' final states [G];
    ``names`` are (A, B).
    """
    env = require_go(env)
    actions, a_seat, outcome = np.asarray(actions), np.asarray(a_seat), np.asarray(outcome)
    games = [row[row >= 0].tolist() for row in actions]
    black_sign = np.where(a_seat == 0, outcome, -outcome)
    results = final_results(env, final, np.array([len(g) for g in games]), black_sign)
    records = []
    for game, seat, result in zip(games, a_seat, results, strict=True):
        black, white = names if seat == 0 else names[::-1]
        records.append(
            GoRecord(
                size=env.size, komi=env.komi, moves=game, result=result, black=black, white=white
            )
        )
    return records


def write_records(records: Sequence[GoRecord], out_dir: Path | str, prefix: str) -> list[Path]:
    """Write ``PREFIX_001.sgf``, ``PREFIX_002.sgf``, ... (``prefix`` made file-name safe)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stem = re.sub(r"[^A-Za-z0-9@._+-]+", "_", prefix).strip("_") or "game"
    paths = []
    for number, record in enumerate(records, start=1):
        path = out / f"{stem}_{number:03d}.sgf"
        nolink.write_atomic(out, path, write_sgf(record))  # the folder typed; a link in it: no
        paths.append(path)
    return paths


class SelfPlayRecorder:
    """Writes every finished self-play game of a run as ``selfplay_NNNNNN.sgf`` (host side).

    Self-play plays B game slots side by side; a slot whose game ends restarts from a
    fresh game with its next move. :meth:`add` takes one training iteration's moves and
    stitches each slot's games across calls. Only games seen from their first move are
    written: with ``fresh=True`` (a new run) every slot starts at move 0; with
    ``fresh=False`` (a resumed run, whose games are already under way) each slot's moves
    are ignored until its first game ends. Numbering continues after the highest
    ``selfplay_*.sgf`` already in ``out_dir`` (games are numbered from 1 in the order
    they finish, slot order within one move), so a resumed run never overwrites.

    ``names`` are the players' names (Black, White) written as ``PB``/``PW``; ``replay``
    a ``make_replayer(env)`` to share between recorders (one compilation).

    As a driver hook (``jaxzero.run.life.driver.train(hooks=[recorder])``) it takes each
    iteration's moves, and reads ``fresh`` off the state it starts from (iteration 0:
    every game starts at its first move).
    """

    def __init__(
        self,
        env: Env,
        out_dir: Path | str,
        *,
        names: tuple[str, str] = ("jaxzero", "jaxzero"),
        fresh: bool = True,
        replay: Callable | None = None,
    ):
        self.env = require_go(env, "self-play SGF records")
        self.out_dir = Path(out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.names = names
        self.fresh = fresh
        self.written: list[Path] = []
        self._moves: list[list[int]] | None = None  # per slot: moves of its current game
        self._seen: np.ndarray | None = None  # bool [B]: the slot's current game is whole
        taken = [int(m.group(1)) for p in self.out_dir.iterdir() if (m := _NUMBER.match(p.name))]
        self._next = max(taken, default=0) + 1
        self._replay = make_replayer(env) if replay is None else replay  # kept: compiles once

    def start(self, state: Any) -> None:
        """Hook: the run starts from ``state`` (a TrainState): fresh games iff iteration 0."""
        self.fresh = int(state.iteration) == 0

    def __call__(self, step: Any) -> None:
        """Hook: write the games this iteration finished (pulls its moves to the host)."""
        moves = jax.device_get(step.moves)
        self.add(moves["action"], moves["done"], moves["reward"])

    def add(self, action: np.ndarray, done: np.ndarray, reward: np.ndarray) -> list[Path]:
        """Take T moves of B slots; write the games they finish; returns the new files.

        ``action`` int32 [T, B]: the move played in slot b at move t; ``done`` bool
        [T, B]: that move ended the slot's game; ``reward`` float32 [T, B, 2]: the
        players' rewards of that move (Black's decides a forfeit; the result is checked
        against it).
        """
        action, done, reward = np.asarray(action), np.asarray(done), np.asarray(reward)
        if action.ndim != 2 or done.shape != action.shape or reward.shape != (*action.shape, 2):
            raise ValueError(
                f"expected action [T, B], done [T, B], reward [T, B, 2]; got "
                f"{action.shape}, {done.shape}, {reward.shape}"
            )
        slots = action.shape[1]
        if self._moves is None or self._seen is None:  # set together, on the first call
            self._moves = [[] for _ in range(slots)]
            self._seen = np.full(slots, self.fresh)
        elif slots != len(self._moves):
            raise ValueError(f"{slots} game slots, but earlier calls had {len(self._moves)}")
        finished: list[tuple[list[int], float]] = []  # (moves, Black's last reward)
        for t in range(action.shape[0]):
            for b in range(slots):
                if self._seen[b]:
                    self._moves[b].append(int(action[t, b]))
                if done[t, b]:
                    if self._seen[b]:
                        finished.append((self._moves[b], float(reward[t, b, 0])))
                    self._moves[b] = []
                    self._seen[b] = True
        return self._write(finished, batch=slots)

    def _write(self, finished: list[tuple[list[int], float]], batch: int) -> list[Path]:
        if not finished:
            return []
        results = game_results(self.env, [moves for moves, _ in finished], batch, self._replay)
        paths = []
        for (moves, black_reward), result in zip(finished, results, strict=True):
            winner = "B" if black_reward > 0 else "W" if black_reward < 0 else ""
            if winner != (result[0] if result[:2] in ("B+", "W+") else ""):
                raise ValueError(
                    f"a self-play game replays to {result}, but its last reward says "
                    f"{winner or 'no winner'}"
                )
            record = GoRecord(
                size=self.env.size,
                komi=self.env.komi,
                moves=moves,
                result=result,
                black=self.names[0],
                white=self.names[1],
            )
            path = self.out_dir / f"{FILE_PREFIX}{self._next:06d}.sgf"
            nolink.write_atomic(self.out_dir, path, write_sgf(record))
            self._next += 1
            paths.append(path)
        self.written += paths
        return paths
