"""jaxzero.measure.positions: a player is probed as the Player contract says, by calling it."""

import jax.numpy as jnp

from jaxzero.measure.positions import SolvedPositions


class FirstLegal:
    """A player carrying an unrelated ``jitted`` attribute, which a probe must not use."""

    def __call__(self, params, states, key):
        return jnp.argmax(states.legal_action_mask, axis=-1).astype(jnp.int32)

    def jitted(self, params, states, key):
        raise AssertionError("a player is called, not probed for other attributes")


def test_the_probe_calls_the_player_itself(ttt):
    quality = SolvedPositions(ttt).quality(FirstLegal())
    assert quality.positions == 4520
    assert 0.0 < quality.optimal < 1.0
