"""SelfPlayRecorder: self-play games stitched across iterations and written as SGF files."""

import numpy as np
import pytest

import envs
from jaxzero.go.records import SelfPlayRecorder, game_results
from jaxzero.go.sgf import read_sgf

PASS = 25  # 5x5 board: points 0..24, then pass
NAMES = ("jaxzero@7", "jaxzero@7 too")


@pytest.fixture(scope="module")
def env():
    return envs.make("go", size=5)  # komi 3.5, max_steps 50


# 50 legal moves of a 5x5 game with seven captures and no two passes in a row (random
# legal moves, numpy seed 0): the move cap ends it without a result.
CAPPED = [22, 15, 12, 6, 7, 0, 2, 1, 8, 21, 17, 24, 13, 16, 25, 19, 14, 11, 10, 25, 4, 25, 18]
CAPPED += [5, 9, 25, 23, 10, 24, 25, 20, 21, 1, 0, 19, 5, 11, 6, 10, 6, 5, 16, 0, 15, 3, 6]
CAPPED += [17, 12, 14, 4]
GAMES = {  # finished games by their result
    "B+F": [12, 12],  # White plays on Black's stone: illegal, White forfeits
    "B+21.5": [12, PASS, PASS],  # one Black stone owns the board: 25 - 0 - 3.5
    "W+3.5": [PASS, PASS],  # empty board: komi decides
    "W+8.5": [1, 2, 6, 7, 11, 12, 16, 17, 21, 22, PASS, PASS],  # walls: 10 - 15 - 3.5
    "Void": CAPPED,
}
REWARDS = {"B": [1.0, -1.0], "W": [-1.0, 1.0], "V": [0.0, 0.0]}  # Black's, White's


def _streams(slot_games, length):
    """Arrays action [T, B], done [T, B], reward [T, B, 2] of slots playing ``slot_games``
    back to back (a game's last move ends it and pays its result), each slot then starting
    a game it does not finish, and the expected files: (end move, slot, index in the slot,
    moves, result) in the order the recorder numbers them."""
    slots = len(slot_games)
    action = np.zeros((length, slots), np.int32)
    done = np.zeros((length, slots), bool)
    reward = np.zeros((length, slots, 2), np.float32)
    expected = []
    for b, names in enumerate(slot_games):
        t = 0
        for index, name in enumerate(names):
            moves = GAMES[name]
            action[t : t + len(moves), b] = moves
            t += len(moves)
            done[t - 1, b], reward[t - 1, b] = True, REWARDS[name[0]]
            expected.append((t - 1, b, index, moves, name))
        action[t:, b] = CAPPED[: length - t]  # an unfinished game fills the rest
    expected.sort(key=lambda e: (e[0], e[1]))
    return action, done, reward, expected


SLOT_GAMES = [
    ["B+F", "B+21.5", "W+8.5", "W+3.5"],
    ["Void"],
    ["W+3.5", "B+21.5", "W+3.5", "B+F", "W+8.5"],
]
SPLITS = [0, 9, 10, 26, 40, 53]  # add() calls of 9, 1, 16, 14 and 13 moves


def _feed(recorder, action, done, reward):
    for start, stop in zip(SPLITS[:-1], SPLITS[1:], strict=True):
        recorder.add(action[start:stop], done[start:stop], reward[start:stop])


def _check_files(paths, expected):
    assert len(paths) == len(expected)
    for path, (*_, moves, result) in zip(paths, expected, strict=True):
        record = read_sgf(path.read_text())
        assert (record.size, record.komi, record.first) == (5, 3.5, 0)
        assert record.moves == moves and record.result == result
        assert (record.black, record.white) == NAMES


def test_fresh_run_writes_every_game_in_finishing_order(env, tmp_path):
    action, done, reward, expected = _streams(SLOT_GAMES, SPLITS[-1])
    recorder = SelfPlayRecorder(env, tmp_path, names=NAMES, fresh=True)
    _feed(recorder, action, done, reward)
    assert [p.name for p in recorder.written] == [
        f"selfplay_{n:06d}.sgf" for n in range(1, len(expected) + 1)
    ]
    assert sorted(tmp_path.iterdir()) == recorder.written
    _check_files(recorder.written, expected)
    assert {e[4] for e in expected} == set(GAMES)  # every kind of ending was written


def test_resumed_run_skips_each_slots_first_game_and_numbers_on(env, tmp_path):
    action, done, reward, expected = _streams(SLOT_GAMES, SPLITS[-1])
    for n in (3, 11):  # files of the run before it was resumed
        (tmp_path / f"selfplay_{n:06d}.sgf").write_text("(;GM[1]SZ[5])")
    recorder = SelfPlayRecorder(env, tmp_path, names=NAMES, fresh=False)
    _feed(recorder, action, done, reward)
    later = [e for e in expected if e[2] > 0]  # slot 1 finished only its first game
    assert [p.name for p in recorder.written] == [
        f"selfplay_{n:06d}.sgf" for n in range(12, 12 + len(later))
    ]
    _check_files(recorder.written, later)


def test_mistakes_are_explained(env, tmp_path):
    with pytest.raises(ValueError, match="Go only .* not tic_tac_toe"):
        SelfPlayRecorder(envs.make("tic_tac_toe"), tmp_path)
    recorder = SelfPlayRecorder(env, tmp_path)
    with pytest.raises(ValueError, match=r"expected action \[T, B\]"):
        recorder.add(np.zeros((4, 2)), np.zeros((4, 2), bool), np.zeros((4, 2)))
    action, done, reward, _ = _streams([["W+3.5"], ["B+F"], ["W+3.5"]], 2)
    with pytest.raises(ValueError, match="replays to W\\+3.5, but its last reward says B"):
        recorder.add(action, done, -reward)
    recorder = SelfPlayRecorder(env, tmp_path)
    recorder.add(action[:1], done[:1], reward[:1])
    with pytest.raises(ValueError, match="2 game slots, but earlier calls had 3"):
        recorder.add(np.zeros((1, 2)), np.zeros((1, 2), bool), np.zeros((1, 2, 2)))
    with pytest.raises(ValueError, match="does not end where it should"):
        game_results(env, [[12, PASS]], batch=3)  # not over after its moves
