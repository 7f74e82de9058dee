"""Go against OpenSpiel's ``go``: 300 random games each on 9 x 9 and 6 x 6.

Our games are played all at once under ``jit(vmap(scan))`` and replayed move by move in
OpenSpiel on the host. Every ply the two boards must be equal and the legal sets must
agree; every game must end at the same ply with the same result.

Where the rule sets differ, the difference is checked rather than skipped:

* Superko. OpenSpiel forbids only simple ko (the point of a single-stone capture just
  made, forgotten after a pass); it allows a move that repeats an earlier position and
  then ends the game as a draw. We mask every such move (positional superko). So each
  ply our legal set must be OpenSpiel's minus some moves, and every move in the
  difference must be a repeat: played on a clone of OpenSpiel's state, it must give a
  board seen earlier in the game. A repeat we failed to mask would be played sooner or
  later and show up as OpenSpiel ending the game early.
* The move cap. OpenSpiel's default ``max_game_length`` is our ``max_steps`` (2 N^2), but
  it scores a game that reaches it while we truncate with zero rewards. For those games
  OpenSpiel's result must be the one our area score gives.

OpenSpiel numbers points from the bottom row (a1 = 0); ours from the top row.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from envs.go import score

pyspiel = pytest.importorskip("pyspiel")

NUM_GAMES = 300


def play_random_games(env, num_games: int, seed: int):
    """Random legal play (pass weighted 1/8 of a point move) -> host arrays per ply."""
    num_actions = env.num_actions
    pass_bias = jnp.zeros(num_actions).at[-1].set(-np.log(8.0))

    @jax.jit
    def play(key):
        states = jax.vmap(env.init)(jax.random.split(key, num_games))

        def ply(states, key):
            logits = jnp.where(states.legal_action_mask, pass_bias, -jnp.inf)
            actions = jax.random.categorical(key, logits)
            before = (states.legal_action_mask, states.colour, actions)
            states = jax.vmap(env.step)(states, actions)
            after = (states.terminated, states.truncated, states.rewards)
            return states, before + after + (jnp.stack(jax.vmap(score)(states), -1),)

        keys = jax.random.split(key, env.max_steps)
        return jax.lax.scan(ply, states, keys)[1]

    return jax.device_get(play(jax.random.key(seed)))


def area_score(board: np.ndarray, n: int) -> tuple[int, int]:
    """Stones plus empty regions that touch one colour only (plain flood fill)."""
    grid = board.reshape(n, n)
    totals = {1: int((grid == 1).sum()), -1: int((grid == -1).sum())}
    seen = np.zeros((n, n), bool)
    for r0 in range(n):
        for c0 in range(n):
            if grid[r0, c0] or seen[r0, c0]:
                continue
            region, borders, frontier = 0, set(), [(r0, c0)]
            seen[r0, c0] = True
            while frontier:
                r, c = frontier.pop()
                region += 1
                for rr, cc in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)):
                    if 0 <= rr < n and 0 <= cc < n:
                        if grid[rr, cc]:
                            borders.add(int(grid[rr, cc]))
                        elif not seen[rr, cc]:
                            seen[rr, cc] = True
                            frontier.append((rr, cc))
            if len(borders) == 1:
                totals[borders.pop()] += region
    return totals[1], totals[-1]


@pytest.mark.parametrize("size", [9, 6])
def test_random_games_match_openspiel(size):
    env = envs.make(f"go_{size}x{size}")
    n, p = size, size * size
    masks, colours, actions, terminated, truncated, rewards, scores = play_random_games(
        env, NUM_GAMES, seed=size
    )
    game = pyspiel.load_game("go", {"board_size": n, "komi": env.komi})
    assert game.max_game_length() == env.max_steps
    rows, cols = np.divmod(np.arange(p), n)
    to_spiel = np.append((n - 1 - rows) * n + cols, p)  # our action -> OpenSpiel's
    from_spiel = np.argsort(to_spiel)

    def board(state) -> np.ndarray:  # OpenSpiel's board in our layout, +1 Black -1 White
        planes = np.asarray(state.observation_tensor(0)).reshape(4, n, n)
        return (planes[0] - planes[1])[::-1].reshape(-1).astype(np.int8)

    superko_moves = captures = capped = 0
    for g in range(NUM_GAMES):
        state = game.new_initial_state()
        seen = {board(state).tobytes()}
        for t in range(env.max_steps):
            where = f"{n}x{n} game {g} ply {t}"
            np.testing.assert_array_equal(colours[t, g], board(state), err_msg=where)
            ours = set(np.flatnonzero(masks[t, g]).tolist())
            theirs = set(from_spiel[state.legal_actions()].tolist())
            assert ours <= theirs, f"{where}: we allow {ours - theirs}, OpenSpiel does not"
            for move in theirs - ours:  # must be positional-superko repeats
                trial = state.clone()
                trial.apply_action(int(to_spiel[move]))
                assert board(trial).tobytes() in seen, f"{where}: {move} masked, not a repeat"
                superko_moves += 1
            stones = np.count_nonzero(board(state))
            state.apply_action(int(to_spiel[actions[t, g]]))
            seen.add(board(state).tobytes())
            captures += np.count_nonzero(board(state)) < stones + (actions[t, g] < p)
            ended = bool(terminated[t, g] or truncated[t, g])
            assert state.is_terminal() == ended, f"{where}: only one side ended the game"
            if ended:
                break
        black, white = area_score(board(state), n)
        assert (black, white) == tuple(scores[t, g]), f"{where}: area score"
        result = np.sign(black - white - env.komi)
        np.testing.assert_allclose(state.returns(), [result, -result], err_msg=where)
        if truncated[t, g]:
            capped += 1
            np.testing.assert_array_equal(rewards[t, g], [0.0, 0.0])
        else:
            np.testing.assert_array_equal(rewards[t, g], state.returns(), err_msg=where)
    # The random games exercise what they should: captures, superko, both endings.
    counts = f"{captures} captures, {superko_moves} superko masks, {capped} games capped"
    assert captures > 5 * NUM_GAMES and superko_moves > 0, counts
    assert 0 < capped < NUM_GAMES, counts
    print(f"{n}x{n}: {counts}")
