"""A game's symmetry group as index tables over observation positions and actions.

Element ``s`` maps a position to an equivalent one:

    new_obs.reshape(P, -1)[p] = obs.reshape(P, -1)[observation_index[s, p]]
    new_policy[a]             = policy[action_index[s, a]]

For a board game, P = H * W (the observation's spatial cells) and each row of
``observation_index`` is a permutation of the cells; actions on cells use the same
permutation. Element 0 is always the identity.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np


class Symmetries(NamedTuple):
    """A group of S symmetries as index tables (see the module docstring); element 0 is
    the identity. ``env.symmetries`` declares a game's group; replay applies a random
    element to each sample (``replay.augment``), and evaluating searches may average the
    network over the group (``evaluation.average_symmetries``).

    Attributes:
        observation_index: int32 [S, P]: row s maps each of the P positions of the
            observation (a board's cells) to the position it is read from.
        action_index: int32 [S, A]: row s maps each action to the action it is read from.
    """

    observation_index: np.ndarray  # int32 [S, P]
    action_index: np.ndarray  # int32 [S, A]

    @property
    def size(self) -> int:
        """S, the number of elements (1: the trivial group)."""
        return self.observation_index.shape[0]

    def transform_observation(self, observation: jax.Array, element: jax.Array) -> jax.Array:
        """Apply group element ``element`` (int32 []) to one observation."""
        index = jnp.asarray(self.observation_index)[element]  # [P]
        flat = observation.reshape(index.shape[0], -1)
        return flat[index].reshape(observation.shape)

    def transform_actions(self, values: jax.Array, element: jax.Array) -> jax.Array:
        """Apply group element ``element`` to per-action values (policy, mask): [A] -> [A]."""
        return values[jnp.asarray(self.action_index)[element]]


def identity(num_positions: int, num_actions: int) -> Symmetries:
    """The trivial group (games without symmetry)."""
    return Symmetries(
        observation_index=np.arange(num_positions, dtype=np.int32)[None],
        action_index=np.arange(num_actions, dtype=np.int32)[None],
    )


def dihedral_cells(n: int) -> np.ndarray:
    """The 8 symmetries of an n x n board as cell permutations: int32 [8, n * n].

    Row s lists, for each target cell, the source cell it is read from. Element 0 is the
    identity; 1-3 are rotations; 4-7 are those rotations after a transpose.
    """
    cells = np.arange(n * n, dtype=np.int32).reshape(n, n)
    out = []
    for transpose in (False, True):
        grid = cells.T if transpose else cells
        for k in range(4):
            out.append(np.rot90(grid, k).reshape(-1))
    return np.stack(out)


def dihedral(n: int, extra_actions: int = 0) -> Symmetries:
    """The dihedral group (8 elements) of an n x n board whose actions are its cells.

    Args:
        n: the board's side; the observation is [n, n, C] and actions 0..n*n-1 its cells.
        extra_actions: actions after the cells that no symmetry moves (Go's pass: 1).

    Returns:
        The :class:`Symmetries` for ``env.symmetries``.
    """
    cells = dihedral_cells(n)
    extras = np.broadcast_to(
        np.arange(n * n, n * n + extra_actions, dtype=np.int32), (8, extra_actions)
    )
    return Symmetries(observation_index=cells, action_index=np.concatenate([cells, extras], axis=1))


def left_right(height: int, width: int) -> Symmetries:
    """Identity and the mirror image of a board whose actions are its columns.

    Args:
        height: the board's rows (the observation is [height, width, C]).
        width: its columns, one action each (Connect Four: 6, 7).

    Returns:
        The :class:`Symmetries` for ``env.symmetries``.
    """
    cells = np.arange(height * width, dtype=np.int32).reshape(height, width)
    columns = np.arange(width, dtype=np.int32)
    return Symmetries(
        observation_index=np.stack([cells.reshape(-1), cells[:, ::-1].reshape(-1)]),
        action_index=np.stack([columns, columns[::-1]]),
    )
