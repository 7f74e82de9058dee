"""Opponents: tactics on hand-built positions, perfect play never loses, MCTS beats random."""

import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxzero.core import games
from jaxzero.games.connect_four import solver as c4
from jaxzero.measure import opponents
from jaxzero.measure.match import play_match
from jaxzero.measure.positions import states_from_moves

REPEATS = 32  # each position is asked this many times, with different keys


def decide(env, player, positions, seed=0):
    """The player's actions for each position (move list), REPEATS times: int [P, REPEATS]."""
    length = max(len(p) for p in positions)
    moves = np.full((len(positions) * REPEATS, max(length, 1)), -1)
    lengths = np.repeat([len(p) for p in positions], REPEATS)
    for i, p in enumerate(positions):
        moves[i * REPEATS : (i + 1) * REPEATS, : len(p)] = p
    states = states_from_moves(env, moves, lengths)
    actions = jax.jit(player)(None, states, jax.random.key(seed))
    return np.asarray(actions).reshape(len(positions), REPEATS)


def test_one_ply_tic_tac_toe(ttt):
    cases = {
        (0, 3, 1, 4): {2},  # X wins at 2 rather than block O at 5
        (0, 4, 1): {2},  # O must block the top row
        (4, 0, 2): {6},  # O must block the anti-diagonal
        (): set(range(9)),  # nothing to win or block: random
    }
    actions = decide(ttt, opponents.one_ply(ttt), list(cases))
    for (position, allowed), chosen in zip(cases.items(), actions, strict=True):
        assert set(chosen.tolist()) <= allowed, position
    assert len(set(actions[-1].tolist())) > 3  # really random on the empty board


def test_one_ply_connect_four(c4_env):
    cases = {
        (0, 0, 1, 1, 2, 2): {3},  # horizontal win
        (0, 1, 1, 2, 3, 2, 2, 3, 6, 3): {3},  # diagonal win
        (0, 6, 0, 6, 0): {0},  # block the vertical three
        (0, 6, 0, 6, 0, 6): {0},  # win rather than block
        (1, 2, 3, 1, 6, 2, 6, 3): {1, 2, 3, 5, 6},  # never play below O's threats at 0 and 4
    }
    actions = decide(c4_env, opponents.one_ply(c4_env), list(cases))
    for (position, allowed), chosen in zip(cases.items(), actions, strict=True):
        assert set(chosen.tolist()) <= allowed, position
    assert len(set(actions[-1].tolist())) >= 3


def test_one_ply_takes_replies_in_chunks_without_changing_its_moves(c4_env, monkeypatch):
    """The replies of 1 (then 3) first moves at a time, as in games of many actions, give
    the same moves as all 7 at once, on the tactical positions above."""
    positions = [(0, 0, 1, 1, 2, 2), (0, 6, 0, 6, 0), (1, 2, 3, 1, 6, 2, 6, 3), ()]
    whole = decide(c4_env, opponents.one_ply(c4_env), positions)
    for steps in (7, 21):  # chunks of 1 and 3 first moves (the last chunk of 1)
        monkeypatch.setattr(opponents, "REPLY_STEPS", steps)
        np.testing.assert_array_equal(decide(c4_env, opponents.one_ply(c4_env), positions), whole)


def test_random_plays_only_legal_moves(c4_env):
    full = [0, 1, 0, 1, 0, 1, 1, 0, 1, 0, 1, 0]  # columns 0 and 1 full, no four
    actions = decide(c4_env, opponents.uniform_random(c4_env), [full])
    assert set(actions[0].tolist()) <= {2, 3, 4, 5, 6}
    assert len(set(actions[0].tolist())) >= 4


def test_minimax_never_loses(ttt):
    minimax = opponents.make_opponent("tic_tac_toe_minimax", ttt)
    random = opponents.uniform_random(ttt)
    result = play_match(ttt, minimax, random, 400, jax.random.key(0), opening_plies=0)
    assert result.losses == 0 and result.wins > 300
    against_itself = play_match(ttt, minimax, minimax, 100, jax.random.key(1), opening_plies=0)
    assert against_itself.draws == 100


def test_pure_mcts_beats_random_at_tic_tac_toe(ttt):
    mcts = opponents.pure_mcts(ttt, num_simulations=48)
    random = opponents.uniform_random(ttt)
    result = play_match(ttt, mcts, random, 64, jax.random.key(0), opening_plies=0)
    assert result.score > 0.8 and result.losses <= 4, result


def test_connect_four_solver_plays_best_scores(c4_env):
    position = [1, 5, 4, 6, 4, 5, 4, 0, 1]  # "265756512", a loss in -12: only column 4 holds
    actions = decide(c4_env, opponents.make_opponent("connect_four_solver", c4_env), [position])
    scores = c4.Solver().move_scores(position)
    assert scores.max() == -12 and (scores[actions[0]] == -12).all()


def test_connect_four_solver_falls_back_to_one_ply_over_budget(c4_env):
    player = opponents.make_opponent("connect_four_solver", c4_env, max_nodes=100)
    actions = decide(c4_env, player, [[3], [0, 6, 0, 6, 0]])
    assert len(set(actions[0].tolist())) > 1  # not solved: one-ply's random choice
    assert (actions[1] == 0).all()  # one-ply still blocks


def test_factory(ttt, c4_env):
    assert opponents.make_opponent("random", ttt) is not None
    with pytest.raises(ValueError, match="one_ply") as error:
        opponents.make_opponent("alphabeta", ttt)
    assert "pure_mcts" in str(error.value) and "perfect" in str(error.value)
    with pytest.raises(ValueError, match="tic_tac_toe"):
        opponents.make_opponent("tic_tac_toe_minimax", c4_env)
    with pytest.raises(ValueError, match="connect_four"):
        opponents.make_opponent("connect_four_solver", ttt)
    with pytest.raises(ValueError, match="no perfect player"):
        opponents.make_opponent("perfect", types.SimpleNamespace(id="go_9x9"))


def first_legal(env):
    """An opponent of the user's own: the first legal action of each state."""
    del env

    def player(params, states, key):
        return jnp.argmax(states.legal_action_mask, axis=-1).astype(jnp.int32)

    return player


@pytest.fixture
def registered():
    """``first_legal`` registered as "first_legal" for one test."""
    opponents.register_opponent("first_legal", first_legal)
    yield "first_legal"
    opponents.OPPONENTS.pop("first_legal")


def test_a_registered_opponent_is_made_by_name(ttt, registered):
    states = states_from_moves(ttt, np.array([[4, 0], [0, 1]]), np.array([2, 0]))
    actions = opponents.make_opponent(registered, ttt)(None, states, jax.random.key(0))
    assert actions.tolist() == [1, 0]


@pytest.mark.parametrize("name", ["", "mine:first", "a,b", "two words"])
def test_an_opponent_name_is_a_plain_word(name):
    with pytest.raises(ValueError, match="plain word"):
        opponents.register_opponent(name, first_legal)
    assert name not in opponents.OPPONENTS


def test_greedy_and_perfect_are_the_players_the_game_kit_names(ttt, registered, monkeypatch):
    """A game's heuristic and perfect player are whatever its kit names: no opponent
    knows the game otherwise."""
    kit = games.GameKit("tic_tac_toe", heuristic=registered)
    monkeypatch.setattr(games, "_KITS", games.game_kits() | {"tic_tac_toe": kit})
    states = states_from_moves(ttt, np.array([[4, 0]]), np.array([2]))
    assert opponents.make_opponent("greedy", ttt)(None, states, jax.random.key(0)).tolist() == [1]
    with pytest.raises(ValueError, match="no perfect player for 'tic_tac_toe'"):
        opponents.make_opponent("perfect", ttt)
    kit = games.GameKit("tic_tac_toe", perfect=registered)
    monkeypatch.setattr(games, "_KITS", games.game_kits() | {"tic_tac_toe": kit})
    assert opponents.make_opponent("perfect", ttt)(None, states, jax.random.key(0)).tolist() == [1]


def test_every_player_a_game_kit_names_exists():
    for game, kit in games.game_kits().items():
        for name in (kit.heuristic, kit.perfect):
            assert name is None or name in opponents.opponents(), (game, name)
