"""The shared Env conventions: registry, absorbing terminal, illegal move, symmetry tables."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from envs import symmetry


def test_unknown_game_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown game 'chess'; choose one of: .*tic_tac_toe"):
        envs.make("chess")


def test_terminal_state_absorbs_and_pays_nothing():
    env = envs.make("tic_tac_toe")
    state = env.init(jax.random.key(0))
    for action in [0, 3, 1, 4, 2]:  # X wins on the top row
        state = env.step(state, action)
    assert state.terminated and state.rewards.tolist() == [1.0, -1.0]
    assert state.legal_action_mask.all()
    after = env.step(state, 5)
    assert after.rewards.tolist() == [0.0, 0.0]
    assert (after.board == state.board).all() and after.step_count == state.step_count


def test_illegal_action_loses_for_the_mover():
    env = envs.make("tic_tac_toe")
    state = env.step(env.step(env.init(jax.random.key(0)), 4), 4)  # O plays on X's cell
    assert state.terminated
    assert state.rewards.tolist() == [1.0, -1.0]


def test_dihedral_tables_are_permutations_with_identity_first():
    table = symmetry.dihedral_cells(4)
    assert table.shape == (8, 16)
    np.testing.assert_array_equal(table[0], np.arange(16))
    assert all(sorted(row) == list(range(16)) for row in table)
    assert len({tuple(row) for row in table}) == 8


def test_symmetry_transforms_observation_and_actions_together():
    sym = symmetry.dihedral(3)
    obs = jnp.arange(18).reshape(3, 3, 2)
    policy = jnp.arange(9)
    for element in range(8):
        new_obs = sym.transform_observation(obs, element)
        new_policy = sym.transform_actions(policy, element)
        # the cell an action points at carries the same content before and after
        np.testing.assert_array_equal(new_obs.reshape(9, 2)[:, 0] // 2, new_policy)


def test_a_game_says_the_version_of_its_rules():
    import envs

    assert envs.make("tic_tac_toe").version == 1  # the default, until the rules change
    pytest.importorskip("pgx")
    assert envs.make("pgx/othello").version == "v0"  # pgx's own version of the env


def test_the_env_docstring_lists_every_attribute_and_method_a_game_sets():
    """The API reference renders Env's Attributes and Methods sections (mkdocstrings, Google
    style): every attribute Env declares, and every method a game writes or may override
    (all of Env's but the wrappers that call them), so a new one must be documented."""
    import griffe

    from envs.core import Env

    sections = griffe.Docstring(Env.__doc__, parser="google").parse()
    listed = {s.kind.value: [item.name for item in s.value] for s in sections[1:]}
    assert set(listed["attributes"]) == {*Env.__annotations__, "symmetries"}
    wrappers = {"init", "step", "observe", "chance_probs", "step_outcome", "_settle", "__repr__"}
    wrappers |= {"picture"}  # to_svg's, one state or a batch
    methods = {name for name, value in vars(Env).items() if callable(value)} - wrappers
    assert set(listed["functions"]) == methods
