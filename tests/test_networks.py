"""The networks: outputs depend on the position (no head collapses to a constant)."""

import jax
import jax.numpy as jnp
import pytest

import envs
from jaxzero.config import NetworkConfig
from jaxzero.networks import init_params, make_apply_fn, make_network


@pytest.mark.parametrize("kind, game", [("resnet", "connect_four"), ("mlp", "tic_tac_toe")])
def test_policy_and_value_depend_on_the_position(kind, game):
    env = envs.make(game)
    network = make_network(NetworkConfig(kind=kind, num_blocks=1, channels=8), env)
    params = init_params(network, env, jax.random.key(0))
    observations = jax.random.bernoulli(jax.random.key(1), 0.3, (16, *env.observation_shape))
    logits, value = make_apply_fn(network)(params, observations)
    assert logits.shape == (16, env.num_actions) and value.shape == (16,)
    assert float(jnp.std(value)) > 1e-4, "the value head ignores its input"
    assert float(jnp.std(logits, axis=0).mean()) > 1e-4, "the policy head ignores its input"
