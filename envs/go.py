"""Go on an N x N board (5 <= N <= 19) with positional superko and area scoring.

Rules (Tromp-Taylor area scoring; unlike Tromp-Taylor, suicide is illegal):

* Black (player 0) moves first; players alternate. A move places a stone on an empty
  point or passes. Pass is always legal.
* After a stone is placed, opponent chains left without liberties are removed (capture).
  A move that would leave its own chain without liberties after captures (suicide) is
  illegal.
* Positional superko: a stone move that would recreate any earlier whole-board position of
  the game (whoever was to move then) is illegal, and masked out of ``legal_action_mask``.
  Simple ko is the two-move case of this rule. Positions are compared by 64-bit Zobrist
  hashes of the board after every step (``hash_history``, length ``max_steps + 1``).
* Two consecutive passes end the game. The score is area scoring: a player's stones plus
  the empty points whose region (4-connected empty points) borders only that player's
  stones. White adds ``komi``. The higher score wins (+1 / -1); with an integer komi an
  equal score is a draw (0 / 0). The defaults (7.5 for N > 7, 3.5 for N <= 7) are
  half-integers, so they never draw.
* ``max_steps = 2 * N * N`` actions truncate the game (rewards 0, ``truncated``).

Peers differ on superko: OpenSpiel's ``go`` masks only simple ko and scores a repeat as a
draw; pgx masks simple ko and scores a repeat as a loss for the mover. Everything else
(capture, suicide, passes, area scoring, the 2 N^2 cap) agrees with OpenSpiel move for move
(tests/envs/test_go_oracle.py), except that OpenSpiel scores a game at the cap.

Actions: ``N * N`` board points row-major from the top-left, then pass (``N * N``).
In Go (GTP) coordinates, action ``r * N + c`` is column ``"ABCDEFGHJKLMNOPQRST"[c]``
(no I) and row ``N - r``: action 0 is the top-left point, ``A9`` on 9 x 9.

Observation: bool ``(N, N, 2k + 1)`` from the observing player's view, AlphaGo Zero style:
planes ``2i`` and ``2i + 1`` are that player's and the opponent's stones ``i`` positions
ago (``i = 0`` now, ``k = history``), the last plane is all ones when the player is Black.

How a step stays cheap (no flood fill, no trial moves):

* Every chain has an id (one of its own points). Stored at the id: its pseudo-liberties
  (count, sum and sum of squares of liberty points, counted once per adjacent stone, as
  in OpenSpiel) and its Zobrist hash. A move updates only the chains next to
  the played point and the stones next to captured ones, with scatter-adds. A chain is in
  atari when all its pseudo-liberties are one point: ``sum = count * m`` and
  ``squares = count * m**2``.
* The board hash is the sum (mod 2**32, per word) of the keys of its stones, so the hash
  after a move at q is ``hash + key(q) - (hashes of the chains it captures)``; the captured
  hashes reach their liberty point with one scatter-add over the chains in atari.
* Each key carries its point in the low 9 bits of its colour's word (zero there in the
  other colour's keys). A position that a move at q recreates differs from the board by
  the mover's stone at q plus captured opponent stones, so ``earlier - hash`` names q in
  those bits: each history entry is compared with the one move that could recreate it.
* Which empty points have a liberty after the move (an empty neighbour, a neighbouring
  own chain not in atari, or a capture) is worked out on bit rows, one uint32 per row.
* The observation's older planes are the previous observation's, own and opponent
  swapped, so the state keeps no separate board history.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from envs import symmetry
from envs.core import Env, State, state_dataclass
from envs.pictures import Grid

Array = jax.Array

COLUMNS = "ABCDEFGHJKLMNOPQRST"  # GTP column letters (no I)
_FIELD = 9  # low bits of a key's word that carry its point + 1 (N * N < 512)
_FIELD_MASK = (1 << _FIELD) - 1
_SUM_BITS = 18  # liberty statistics: count << _SUM_BITS | sum of liberty points


@state_dataclass
class GoState(State):
    colour: Array  # int8 [P]          +1 Black, -1 White, 0 empty (P = N * N)
    chain: Array  # int16 [P]          id of the stone's chain (one of its points); P if empty
    liberties: Array  # int32 [2, P + 1]  per chain id: pseudo-liberty count << 18 | sum of the
    #                                    liberty points, sum of their squares
    chain_hash: Array  # uint32 [2, P + 1] per chain id: sum of its stones' Zobrist keys
    board_hash: Array  # uint32 [2]        Zobrist hash of the board (two 32-bit words)
    hash_history: Array  # uint32 [max_steps + 1, 2] board hash after each step so far
    passes: Array  # int32 []          consecutive passes just played


class _Tables:
    """Constant tables for one board size (numpy, built once per size)."""

    def __init__(self, n: int):
        p = n * n
        rows, cols = np.divmod(np.arange(p), n)
        neighbours = []
        for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1)):  # the order of _neighbours
            r, c = rows + dr, cols + dc
            inside = (r >= 0) & (r < n) & (c >= 0) & (c < n)
            neighbours.append(np.where(inside, r * n + c, p))
        self.neighbours = np.stack(neighbours).astype(np.int32)  # [4, P]; P off-board
        # [4, P + 1]: column P (pass) has only off-board neighbours
        self.neighbours_ext = np.concatenate([self.neighbours, np.full((4, 1), p, np.int32)], 1)
        self.neighbour_stats = np.where(
            self.neighbours < p, _host_stat(self.neighbours), 0
        )  # int32 [2, 4, P]
        # Zobrist keys [word, colour index, point]; column P ("no stone") is zero. Word w
        # of colour w's keys carries point + 1 in its low _FIELD bits; the other colour's
        # keys have zeros there, so sums and differences never carry into the field.
        rng = np.random.default_rng(20260 + n)
        self.keys = np.zeros((2, 2, p + 1), np.uint32)
        self.keys[:, :, :p] = rng.integers(0, 2 ** (32 - _FIELD), (2, 2, p), np.uint32) << _FIELD
        for ci in range(2):
            self.keys[ci, ci, :p] |= np.arange(1, p + 1, dtype=np.uint32)


@functools.cache
def _tables(n: int) -> _Tables:
    return _Tables(n)


class Go(Env[GoState]):
    """Go on an N x N board; see the module docstring for the rules and the encoding."""

    def __init__(self, size: int = 9, komi: float | None = None, history: int = 4):
        if not (isinstance(size, int | np.integer) and 5 <= size <= 19):
            raise ValueError(f"Go board size must be an integer from 5 to 19, got {size!r}")
        if not (isinstance(history, int | np.integer) and history >= 1):
            raise ValueError(f"history must be a positive integer, got {history!r}")
        self.size = n = int(size)
        self.komi = float(komi if komi is not None else (7.5 if n > 7 else 3.5))
        self.history = int(history)
        self.id = f"go_{n}x{n}"
        self.num_actions = n * n + 1
        self.observation_shape = (n, n, 2 * self.history + 1)
        self.max_steps = 2 * n * n
        self.symmetries = symmetry.dihedral(n, extra_actions=1)
        self._t = _tables(n)

    def __repr__(self) -> str:
        return f"Go(size={self.size}, komi={self.komi}, history={self.history})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Go) and repr(self) == repr(other)

    def __hash__(self) -> int:  # equal configurations share compiled functions
        return hash(repr(self))

    # ----------------------------------------------------------------- env contract
    def _init(self, key: Array) -> GoState:
        del key
        p = self.size**2
        return self._make_state(
            colour=jnp.zeros(p, jnp.int8),
            chain=jnp.full(p, p, jnp.int16),
            liberties=jnp.zeros((2, p + 1), jnp.int32),
            chain_hash=jnp.zeros((2, p + 1), jnp.uint32),
            to_play=jnp.int32(0),
        )

    def _step(self, state: GoState, action: Array, key: Array) -> GoState:
        del key
        n, p = self.size, self.size**2
        point = jnp.where(action < p, action, p)  # P: pass
        player = state.current_player
        colour, chain, liberties, chain_hash, captured_hash = _play(self._t, n, state, point)
        board_hash = state.board_hash + jnp.asarray(self._t.keys)[:, player, point] - captured_hash
        index = jnp.minimum(state.step_count + 1, self.max_steps)
        hash_history = state.hash_history.at[index].set(board_hash)
        passes = jnp.where(action == p, state.passes + 1, 0)
        terminated = passes >= 2
        black, white = _areas(colour.reshape(n, n), terminated)
        margin = black.astype(jnp.float32) - white.astype(jnp.float32) - self.komi
        black_reward = jnp.sign(margin) * terminated
        nxt = 1 - player
        legal = _legal(
            self._t, n, colour, chain, liberties, chain_hash, board_hash, hash_history, index, nxt
        )
        return state.replace(
            current_player=nxt,
            observation=_advance(state.observation, colour, nxt, n),
            legal_action_mask=legal,
            rewards=jnp.stack([black_reward, -black_reward]).astype(jnp.float32),
            terminated=terminated,
            colour=colour,
            chain=chain,
            liberties=liberties,
            chain_hash=chain_hash,
            board_hash=board_hash,
            hash_history=hash_history,
            passes=passes,
        )

    def _observe(self, state: GoState, player: Array) -> Array:
        # The stored observation is the mover's; another player sees the stone planes
        # swapped and their own colour plane.
        same = player == state.current_player
        obs = state.observation
        k = self.history
        swapped = obs[..., : 2 * k].reshape(obs.shape[:2] + (k, 2))[..., ::-1]
        stones = jnp.where(same, obs[..., : 2 * k], swapped.reshape(obs.shape[:2] + (2 * k,)))
        return jnp.concatenate([stones, jnp.broadcast_to(player == 0, obs.shape[:2] + (1,))], -1)

    def _make_state(self, colour, chain, liberties, chain_hash, to_play) -> GoState:
        """A state at step 0 whose history holds only this position."""
        n, p = self.size, self.size**2
        stones = colour[None, :] == jnp.array([[1], [-1]], jnp.int8)  # [2, P] by colour index
        keys = jnp.asarray(self._t.keys)[:, :, :p]  # [2, 2, P]
        board_hash = jnp.where(stones, keys, jnp.uint32(0)).sum(axis=(1, 2), dtype=jnp.uint32)
        hash_history = jnp.zeros((self.max_steps + 1, 2), jnp.uint32).at[0].set(board_hash)
        legal = _legal(
            self._t, n, colour, chain, liberties, chain_hash, board_hash, hash_history, 0, to_play
        )
        return GoState(
            current_player=to_play,
            observation=_advance(
                jnp.zeros(self.observation_shape, jnp.bool_), colour, to_play, n, fresh=True
            ),
            legal_action_mask=legal,
            rewards=jnp.zeros(2, jnp.float32),
            terminated=jnp.bool_(False),
            truncated=jnp.bool_(False),
            step_count=jnp.int32(0),
            colour=colour,
            chain=chain,
            liberties=liberties,
            chain_hash=chain_hash,
            board_hash=board_hash,
            hash_history=hash_history,
            passes=jnp.int32(0),
        )

    # ------------------------------------------------------------ positions, text
    def from_board(self, board, to_play: int = 0) -> GoState:
        """A state at step 0 with ``board`` on it and ``to_play`` (0 Black, 1 White) to move.

        ``board`` is N strings of N characters (``X`` Black, ``O`` White, ``.`` empty, top
        row first) or an int array ``[N, N]`` (1 Black, -1 White, 0 empty). The earlier
        history is unknown, so superko only looks at positions from here on.
        """
        n, p = self.size, self.size**2
        colour = _parse_board(board, n)  # int8 [P]
        if to_play not in (0, 1):
            raise ValueError(f"to_play must be 0 (Black) or 1 (White), got {to_play!r}")
        chain = np.full(p, p, np.int16)
        liberties = np.zeros((2, p + 1), np.int32)
        chain_hash = np.zeros((2, p + 1), np.uint32)
        for start in range(p):
            if colour[start] == 0 or chain[start] != p:
                continue
            members, frontier = [start], [start]
            chain[start] = start
            while frontier:
                q = frontier.pop()
                for r in self._t.neighbours[:, q]:
                    if r < p and colour[r] == colour[start] and chain[r] == p:
                        chain[r] = start
                        members.append(r)
                        frontier.append(r)
            ci = 0 if colour[start] == 1 else 1
            for q in members:
                chain_hash[:, start] += self._t.keys[:, ci, q]
                for r in self._t.neighbours[:, q]:
                    if r < p and colour[r] == 0:
                        liberties[:, start] += _host_stat(r)
            if liberties[0, start] == 0:
                where = action_to_gtp(start, n)
                raise ValueError(f"the chain at {where} has no liberties")
        return _jit_make_state(self, colour, chain, liberties, chain_hash, np.int32(to_play))

    def state_from_moves(self, moves, state: GoState | None = None) -> GoState:
        """Play ``moves`` (action ints or GTP strings such as ``"D4"``/``"pass"``) from
        ``state`` (default: the empty board), alternating colours. ValueError on an illegal
        move. Host-side; for tests and for loading game records."""
        state = _jit_init(self) if state is None else state
        for i, move in enumerate(moves):
            action = gtp_to_action(move, self.size) if isinstance(move, str) else int(move)
            mask, terminated, truncated = jax.device_get(
                (state.legal_action_mask, state.terminated, state.truncated)
            )
            if terminated or truncated:
                raise ValueError(f"move {i + 1} ({move!r}) comes after the end of the game")
            if not (0 <= action < self.num_actions and mask[action]):
                raise ValueError(f"move {i + 1} ({move!r}) is illegal here")
            state = _jit_step(self, state, jnp.int32(action))
        return state

    def action_to_text(self, action: int) -> str:
        return action_to_gtp(action, self.size)

    def text_to_action(self, text: str) -> int:
        """GTP coordinates (``D4``, case-insensitive) or ``pass``."""
        return gtp_to_action(text, self.size)

    def grid(self, state: GoState) -> Grid:
        """Black (player 0) and white stones on the lines, GTP's coordinates around."""
        n = self.size
        colour = np.asarray(state.colour).reshape(n, n)
        cells = np.where(colour > 0, 1, np.where(colour < 0, 2, 0))
        rows = [str(n - r) for r in range(n)]
        points = np.stack(np.divmod(np.arange(n * n), n), axis=1)
        actions = np.concatenate([points, [[-1, -1]]])  # the last action passes
        return Grid(cells, style="stones", column_labels=list(COLUMNS[:n]), row_labels=rows,
                    action_cells=actions)  # fmt: skip

    def render(self, state: GoState) -> str:
        n = self.size
        colour = np.asarray(state.colour).reshape(n, n)
        letters = "   " + " ".join(COLUMNS[:n])
        lines = [letters]
        for r in range(n):
            marks = " ".join(".XO"[int(v)] for v in colour[r])
            lines.append(f"{n - r:2d} {marks} {n - r}")
        lines.append(letters)
        if bool(state.terminated | state.truncated):
            black, white = (int(x) for x in score(state))
            lines.append(f"game over: Black {black}, White {white} + komi {self.komi:g}")
        else:
            lines.append(
                f"{'Black (X)' if int(state.current_player) == 0 else 'White (O)'} to play"
            )
        return "\n".join(lines)


@functools.partial(jax.jit, static_argnums=0)
def _jit_step(env: Go, state: GoState, action: Array) -> GoState:
    return env.step(state, action)


@functools.partial(jax.jit, static_argnums=0)
def _jit_init(env: Go) -> GoState:
    return env.init(jax.random.key(0))


@functools.partial(jax.jit, static_argnums=0)
def _jit_make_state(env: Go, *arrays) -> GoState:
    return env._make_state(*arrays)


# ---------------------------------------------------------------- public helpers
def action_to_gtp(action: int, size: int) -> str:
    """Action index -> GTP vertex (``"A9"`` is action 0 on 9 x 9) or ``"pass"``."""
    action = int(action)
    if action == size * size:
        return "pass"
    if not 0 <= action < size * size:
        raise ValueError(f"action {action} is outside 0..{size * size} on a {size}x{size} board")
    row, col = divmod(action, size)
    return f"{COLUMNS[col]}{size - row}"


def gtp_to_action(text: str, size: int) -> int:
    """GTP vertex (case-insensitive, e.g. ``"d4"``) or ``"pass"`` -> action index."""
    vertex = str(text).strip().upper()
    if vertex == "PASS":
        return size * size
    letters = COLUMNS[:size]
    if len(vertex) < 2 or vertex[0] not in letters or not vertex[1:].isdigit():
        raise ValueError(
            f"{text!r} is not a move on {size}x{size}: use a column {letters[0]}-{letters[-1]}"
            f" (no I) and a row 1-{size}, e.g. {letters[min(3, size - 1)]}4, or 'pass'"
        )
    row = int(vertex[1:])
    if not 1 <= row <= size:
        raise ValueError(f"{text!r} is off the {size}x{size} board: rows are 1-{size}")
    return (size - row) * size + letters.index(vertex[0])


def score(state: GoState) -> tuple[Array, Array]:
    """Area score of one (unbatched) state: (Black's, White's) stones + owned empty points,
    int32 scalars, komi not included. Works on host arrays and under ``jit``/``vmap``."""
    p = state.colour.shape[-1]
    n = int(round(p**0.5))
    return _areas(jnp.asarray(state.colour).reshape(n, n), jnp.bool_(True))


# ---------------------------------------------------------------- rule kernels
def _sign(player: Array) -> Array:
    """Colour of ``player`` on the board: +1 Black (player 0), -1 White: int8 []."""
    return (1 - 2 * player).astype(jnp.int8)


def _stat(point: Array) -> Array:
    """A pseudo-liberty's contribution to its chain's statistics: int32 [2, ...].

    Count and sum share a word: the sum of a chain's pseudo-liberties stays below
    2 * 361 * 360 < 2**18 and the count below 2**10, so the fields never overflow.
    """
    point = jnp.asarray(point, jnp.int32)
    return jnp.stack([(1 << _SUM_BITS) + point, point * point])


def _host_stat(point) -> np.ndarray:
    point = np.asarray(point, np.int32)
    return np.stack([(1 << _SUM_BITS) + point, point * point])


def _neighbours(x: Array, n: int, fill) -> Array:
    """[P] -> [4, P]: the value at each point's up, down, left and right neighbour."""
    g = jnp.pad(x.reshape(n, n), 1, constant_values=jnp.asarray(fill, x.dtype))
    return jnp.stack([g[:-2, 1:-1], g[2:, 1:-1], g[1:-1, :-2], g[1:-1, 2:]]).reshape(4, n * n)


def _pack(mask: Array, n: int) -> Array:
    """bool [P] -> uint32 [N]: one word per row, bit c for column c."""
    grid = mask.reshape(n, n).astype(jnp.uint32)
    # An unrolled OR of shifted columns: XLA's CPU reductions over short rows are slow.
    return functools.reduce(jnp.bitwise_or, [grid[:, c] << c for c in range(n)])


def _unpack(rows: Array, n: int) -> Array:
    """uint32 [N] -> bool [P]."""
    return ((rows[:, None] >> jnp.arange(n, dtype=jnp.uint32)) & 1).astype(jnp.bool_).reshape(-1)


def _spread(rows: Array, n: int) -> Array:
    """uint32 [..., N] bit rows -> the points next to them (4-neighbourhood)."""
    zero = jnp.zeros_like(rows[..., :1])
    up = jnp.concatenate([rows[..., 1:], zero], axis=-1)
    down = jnp.concatenate([zero, rows[..., :-1]], axis=-1)
    return ((rows << 1) | (rows >> 1) | up | down) & jnp.uint32((1 << n) - 1)


def _play(t: _Tables, n: int, state: GoState, point: Array):
    """The mover places a stone at ``point`` (P = pass: nothing changes) and captures.

    Returns colour, chain, liberties, chain_hash and the summed hash of captured chains.
    """
    p = n * n
    sign = _sign(state.current_player)
    colour, chain, liberties, chain_hash = (
        state.colour,
        state.chain,
        state.liberties,
        state.chain_hash,
    )
    near = jnp.asarray(t.neighbours_ext)[:, point]  # int32 [4]; P off-board
    near_colour = jnp.append(colour, jnp.int8(2))[near]  # int8 [4]; 2 off-board
    near_chain = jnp.append(chain, p)[near]  # int32 [4]
    first = jnp.array(
        [True] + [(near_chain[d] != near_chain[:d]).all() for d in range(1, 4)]
    )  # bool [4]: each neighbouring chain counted once

    # The point stops being a pseudo-liberty of each neighbouring chain, once per stone.
    liberties = liberties.at[:, near_chain].add(-_stat(point)[:, None])
    dead = (near_colour == -sign) & (liberties[0, near_chain] == 0)  # bool [4]
    dead_ids = jnp.where(dead, near_chain, -1)
    in_dead = functools.reduce(jnp.logical_or, [chain == dead_ids[d] for d in range(4)])
    removed = (colour == -sign) & in_dead  # bool [P]
    # Stones next to removed points gain them as pseudo-liberties.
    freed = _neighbours(removed, n, False)  # bool [4, P]
    stats = jnp.asarray(t.neighbour_stats)  # int32 [2, 4, P]
    gain = sum(jnp.where(freed[d], stats[:, d], 0) for d in range(4))  # int32 [2, P]
    liberties = liberties.at[:, jnp.where(colour == sign, chain, p)].add(gain)

    # The new stone joins its own neighbouring chains under the id ``point``.
    own = near_colour == sign  # bool [4]
    opened = (near_colour == 0) | jnp.append(removed, False)[near]  # bool [4]
    merged = jnp.where(own & first, liberties[:, near_chain], 0).sum(1)
    merged = merged + jnp.where(opened, _stat(near), 0).sum(1)  # int32 [2]
    near_hash = chain_hash[:, near_chain]  # uint32 [2, 4]
    joined_hash = jnp.where(own & first, near_hash, jnp.uint32(0)).sum(1, dtype=jnp.uint32)
    joined_hash = joined_hash + jnp.asarray(t.keys)[:, state.current_player, point]
    captured_hash = jnp.where(dead & first, near_hash, jnp.uint32(0)).sum(1, dtype=jnp.uint32)
    own_ids = jnp.where(own, near_chain, -1)
    joined = functools.reduce(jnp.logical_or, [chain == own_ids[d] for d in range(4)])
    chain = jnp.where(joined, point, chain).at[point].set(point, mode="drop")
    chain = jnp.where(removed, p, chain).astype(jnp.int16)
    colour = jnp.where(removed, jnp.int8(0), colour).at[point].set(sign, mode="drop")
    liberties = liberties.at[:, point].set(merged).at[:, p].set(0)
    chain_hash = chain_hash.at[:, point].set(joined_hash).at[:, p].set(0)
    return colour, chain, liberties, chain_hash, captured_hash


def _legal(
    t: _Tables,
    n: int,
    colour: Array,  # int8 [P]
    chain: Array,  # int16 [P]
    liberties: Array,  # int32 [2, P + 1]
    chain_hash: Array,  # uint32 [2, P + 1]
    board_hash: Array,  # uint32 [2]
    hash_history: Array,  # uint32 [T, 2]
    step: Array | int,  # int32 []  entries 0..step of hash_history are filled
    player: Array,  # int32 []
) -> Array:
    """bool [P + 1]: the empty points where ``player`` may play (no suicide, no superko),
    then pass (always legal)."""
    p = n * n
    sign = _sign(player)
    count = liberties[0] >> _SUM_BITS  # int32 [P + 1]
    total = liberties[0] & ((1 << _SUM_BITS) - 1)
    squares = liberties[1]
    # The mean liberty, exact when it is an integer (total < 2**24); float division is
    # vectorised on CPU where integer division is not.
    mean = total.astype(jnp.float32) / jnp.maximum(count, 1).astype(jnp.float32)
    mean = jnp.round(mean).astype(jnp.int32)
    atari = (count > 0) & (mean * count == total) & (squares == count * mean * mean)
    # Opponent chains in atari, each at its id, and the hash a move on their liberty takes.
    ids = jnp.arange(p, dtype=jnp.int32)
    takes = (chain == ids) & (colour == -sign) & atari[:p]  # bool [P]
    capture = jnp.stack([jnp.ones(p, jnp.uint32), chain_hash[0, :p], chain_hash[1, :p]])
    taken = jnp.zeros((3, p + 1), jnp.uint32).at[:, jnp.where(takes, mean[:p], p)].add(capture)
    capturing = taken[0, :p] > 0  # bool [P]

    empty = colour == 0
    safe = (colour == sign) & ~atari[chain]  # own stones whose chain keeps a liberty
    breathing = _unpack(_spread(_pack(empty | safe, n), n), n)
    alive = empty & (breathing | capturing)  # bool [P]

    after = jnp.asarray(t.keys)[:, player, :p] + board_hash[:, None] - taken[1:, :p]  # [2, P]
    diff = hash_history[:, player] - board_hash[player]  # uint32 [T]
    q = (diff & _FIELD_MASK).astype(jnp.int32) - 1  # the move that could recreate entry t
    qc = jnp.clip(q, 0, p - 1)
    filled = jnp.arange(hash_history.shape[0]) <= step
    repeat = filled & (q >= 0) & (q < p) & (after.T[qc] == hash_history).all(axis=-1)  # [T]
    legal = alive & ~_points_mask(repeat, qc, p)
    return jnp.append(legal, True)


def _points_mask(flag: Array, point: Array, p: int) -> Array:
    """bool [P]: the points named by ``point`` [T] where ``flag`` [T] holds.

    On CPU this OR of bits into ceil(P / 32) words costs less than a scatter.
    """
    words = (p + 31) // 32
    bit = jnp.left_shift(jnp.uint32(1), (point & 31).astype(jnp.uint32))  # [T]
    chosen = flag[None] & ((point >> 5)[None] == jnp.arange(words)[:, None])  # [W, T]
    packed = jax.lax.reduce(
        jnp.where(chosen, bit[None], jnp.uint32(0)), jnp.uint32(0), jax.lax.bitwise_or, (1,)
    )  # uint32 [W]
    shifts = jnp.asarray(np.arange(p) & 31, jnp.uint32)
    return (jnp.repeat(packed, 32)[:p] >> shifts) & 1 == 1


def _areas(board: Array, active: Array) -> tuple[Array, Array]:
    """Area scores (Black, White) of an int8 [N, N] board, int32 each.

    Empty regions are grown from the stones of each colour on bit rows until they stop
    growing (four growth steps per loop trip). With ``active`` false nothing grows (cheap):
    only the stone counts come back.
    """
    n = board.shape[0]
    empty = _pack(board == 0, n)
    stones = jnp.stack([_pack(board == 1, n), _pack(board == -1, n)])  # uint32 [2, N]

    def trip(carry):
        reach, _ = carry
        new = reach
        for _ in range(4):
            new = (new | _spread(new, n)) & empty
        return new, (new != reach).any()

    seed = jnp.where(active, _spread(stones, n) & empty, jnp.uint32(0))
    reach, _ = jax.lax.while_loop(lambda c: c[1], trip, (seed, active))
    owned = reach & ~reach[::-1]  # empty points reached by one colour only
    counts = jax.lax.population_count(stones | owned).astype(jnp.int32).sum(axis=-1)
    return counts[0], counts[1]


def _advance(previous: Array, colour: Array, player: Array, n: int, fresh: bool = False):
    """The observation for ``player`` to move on ``colour`` (int8 [P]): bool [N, N, 2k + 1].

    ``previous`` is the last observation, seen by the other player (the previous mover):
    its stone planes, own and opponent swapped, become the older positions. With ``fresh``
    the older positions are empty.
    """
    k = (previous.shape[-1] - 1) // 2
    sign = _sign(player)
    now = jnp.stack([colour == sign, colour == -sign], axis=-1).reshape(n, n, 2)
    older = previous[..., : 2 * k - 2].reshape(n, n, k - 1, 2)[..., ::-1]
    older = jnp.zeros_like(older) if fresh else older
    black = jnp.broadcast_to(player == 0, (n, n, 1))
    return jnp.concatenate([now, older.reshape(n, n, 2 * k - 2), black], axis=-1)


def _parse_board(board, n: int) -> np.ndarray:
    """X/O/. strings or an int array [N, N] -> int8 [P] (+1 Black, -1 White, 0 empty)."""
    if len(board) and isinstance(board[0], str):
        rows = [row.replace(" ", "") for row in board]
        if len(rows) != n or any(len(row) != n for row in rows):
            raise ValueError(f"expected {n} rows of {n} points")
        table = {".": 0, "+": 0, "X": 1, "x": 1, "O": -1, "o": -1}
        bad = {ch for row in rows for ch in row} - set(table)
        if bad:
            raise ValueError(f"unknown board characters {sorted(bad)}: use X, O and .")
        return np.array([table[ch] for row in rows for ch in row], np.int8)
    array = np.asarray(board)
    if array.shape != (n, n) or not np.isin(array, (-1, 0, 1)).all():
        raise ValueError(f"expected an [{n}, {n}] array of 1 (Black), -1 (White), 0 (empty)")
    return array.astype(np.int8).reshape(-1)
