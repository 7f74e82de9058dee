"""The networks: outputs depend on the position (no head collapses to a constant)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from jaxzero.core.config import NetworkConfig
from jaxzero.core.networks import (
    conv_general_dilated,
    init_params,
    make_apply_fn,
    make_network,
    symmetry_averaged,
)
from jaxzero.run.folder.config_file import read_config_dict


@pytest.mark.parametrize("kind, game", [("resnet", "connect_four"), ("mlp", "tic_tac_toe")])
def test_policy_and_value_depend_on_the_position(kind, game):
    env = envs.make(game)
    network = make_network(NetworkConfig(kind=kind, num_blocks=1, channels=8), env)
    params = jax.jit(lambda key: init_params(network, env, key))(jax.random.key(0))
    observations = jax.random.bernoulli(jax.random.key(1), 0.3, (16, *env.observation_shape))
    logits, value = jax.jit(make_apply_fn(network))(params, observations)
    assert logits.shape == (16, env.num_actions) and value.shape == (16,)
    assert float(jnp.std(value)) > 1e-4, "the value head ignores its input"
    assert float(jnp.std(logits, axis=0).mean()) > 1e-4, "the policy head ignores its input"


@pytest.mark.parametrize(
    "kernel_size, padding",
    [((3, 3), "SAME"), ((1, 1), "SAME"), ((3, 2), "VALID"), ((3, 3), ((2, 0), (1, 1)))],
)
def test_conv_has_the_forward_and_gradients_of_lax_conv(kernel_size, padding):
    """Our convolution (hand-written backward pass, fast inside loops) computes what
    lax.conv_general_dilated computes, value and both gradients, for every padding."""
    x = jax.random.normal(jax.random.key(0), (5, 6, 7, 3))
    kernel = jax.random.normal(jax.random.key(1), (*kernel_size, 3, 4))
    numbers = jax.lax.conv_dimension_numbers(x.shape, kernel.shape, ("NHWC", "HWIO", "NHWC"))

    def loss(conv):
        def f(x, kernel):
            y = conv(x, kernel, (1, 1), padding, dimension_numbers=numbers)
            return jnp.sin(y).sum()  # a non-linear readout: every output gradient differs

        return f

    ours, ref = loss(conv_general_dilated), loss(jax.lax.conv_general_dilated)
    assert jnp.allclose(ours(x, kernel), ref(x, kernel))
    for got, want in zip(
        jax.grad(ours, (0, 1))(x, kernel), jax.grad(ref, (0, 1))(x, kernel), strict=True
    ):
        assert got.shape == want.shape
        assert jnp.allclose(got, want, rtol=1e-4, atol=1e-4)


def test_conv_falls_back_to_lax_for_strides():
    x = jax.random.normal(jax.random.key(0), (2, 6, 6, 3))
    kernel = jax.random.normal(jax.random.key(1), (3, 3, 3, 4))
    numbers = ("NHWC", "HWIO", "NHWC")
    got = jax.grad(
        lambda k: conv_general_dilated(x, k, (2, 2), "SAME", dimension_numbers=numbers).sum()
    )(kernel)
    want = jax.grad(
        lambda k: jax.lax.conv_general_dilated(
            x, k, (2, 2), "SAME", dimension_numbers=numbers
        ).sum()
    )(kernel)
    assert jnp.allclose(got, want, rtol=1e-4, atol=1e-4)


def test_value_head_width_is_configurable_and_old_runs_keep_the_original_head():
    """The default head is the wide one (8 channels into 128 units); a run's config.json
    written before these keys existed reads as the head it saved (1 channel, ``channels``
    hidden units), so its checkpoints still load."""
    env = envs.make("connect_four")  # 6 x 7 board
    old = read_config_dict({"network": {"kind": "resnet", "channels": 16}}).network
    assert (old.value_channels, old.value_hidden) == (1, 0)
    assert (NetworkConfig().value_channels, NetworkConfig().value_hidden) == (8, 128)
    shapes = {}
    for value_channels, value_hidden in [(1, 0), (8, 128)]:
        config = NetworkConfig(
            kind="resnet", channels=16, value_channels=value_channels, value_hidden=value_hidden
        )
        network = make_network(config, env)
        params = jax.jit(lambda key, n=network: init_params(n, env, key))(jax.random.key(0))
        params = params["params"]
        shapes[value_channels] = {
            name: layer["kernel"].shape for name, layer in params.items() if "kernel" in layer
        }
        logits, value = jax.jit(make_apply_fn(network))(
            {"params": params}, jnp.zeros((3, *env.observation_shape))
        )
        assert logits.shape == (3, 7) and value.shape == (3,)
    assert (1, 1, 16, 1) in shapes[1].values() and (42, 16) in shapes[1].values()
    assert (1, 1, 16, 8) in shapes[8].values() and (42 * 8, 128) in shapes[8].values()


@pytest.mark.parametrize("game", ["connect_four", "go_6x6"])
def test_symmetry_averaged_network_is_equivariant_and_an_average(game):
    """Averaged over the group, the network's output for a transformed position is the
    transformed output (exactly, up to float error); its policy and value are the means of
    the G views, mapped back to the original actions."""
    env = envs.make(game)
    network = make_network(NetworkConfig(kind="resnet", num_blocks=1, channels=8), env)
    params = jax.jit(lambda key: init_params(network, env, key))(jax.random.key(0))
    plain = make_apply_fn(network)
    averaged = symmetry_averaged(plain, env.symmetries)
    assert averaged == symmetry_averaged(plain, env.symmetries)  # equal: compiles are shared
    sym = env.symmetries
    obs = jax.random.bernoulli(jax.random.key(1), 0.3, (4, *env.observation_shape))
    logits, value = jax.jit(averaged)(params, obs)
    for element in range(sym.size):
        moved = jax.vmap(lambda o, e=element: sym.transform_observation(o, e))(obs)
        logits_moved, value_moved = jax.jit(averaged)(params, moved)
        expected = jax.vmap(lambda x, e=element: sym.transform_actions(x, e))(logits)
        assert jnp.allclose(logits_moved, expected, atol=1e-5)
        assert jnp.allclose(value_moved, value, atol=1e-6)
    # The mean of the views, each mapped back: element 0 (identity) is the plain network.
    views = jax.jit(
        lambda params, obs: [
            plain(params, jax.vmap(lambda o, e=e: sym.transform_observation(o, e))(obs))
            for e in range(sym.size)
        ]
    )(params, obs)
    inverse = np.argsort(sym.action_index, axis=1)
    back = [jax.nn.softmax(lg)[:, inverse[e]] for e, (lg, _) in enumerate(views)]
    assert jnp.allclose(jax.nn.softmax(logits), jnp.mean(jnp.stack(back), 0), atol=1e-6)
    assert jnp.allclose(value, jnp.mean(jnp.stack([v for _, v in views]), 0), atol=1e-6)
    assert not jnp.allclose(views[0][1], value, atol=1e-4)  # the average is not one view


def test_symmetry_averaging_is_a_no_op_for_games_without_symmetries():
    env = envs.make("star_duel")
    plain = make_apply_fn(make_network(NetworkConfig(hidden_size=8, num_layers=1), env))
    assert symmetry_averaged(plain, env.symmetries) is plain


@pytest.mark.parametrize("game", ["tic_tac_toe", "connect_four"])  # an MLP and a ResNet
def test_bfloat16_computes_in_bfloat16_with_float32_parameters_and_outputs(game):
    env = envs.make(game)
    states = jax.jit(jax.vmap(env.init))(jax.random.split(jax.random.key(0), 4))
    outputs = {}
    for dtype in ("float32", "bfloat16"):
        network = make_network(NetworkConfig(dtype=dtype, channels=8, num_blocks=1), env)
        params = jax.jit(lambda key, n=network: init_params(n, env, key))(jax.random.key(1))
        assert {x.dtype for x in jax.tree.leaves(params)} == {jnp.dtype("float32")}
        leaves, tree = jax.tree.flatten(params)  # the heads start at zero: move them
        noise = jax.random.split(jax.random.key(2), len(leaves))
        moved = zip(leaves, noise, strict=True)
        params = jax.tree.unflatten(
            tree, [x + 0.1 * jax.random.normal(k, x.shape) for x, k in moved]
        )
        text = jax.jit(network.apply).lower(params, states.observation).as_text()
        assert ("bf16" in text) == (dtype == "bfloat16")
        outputs[dtype] = jax.jit(network.apply)(params, states.observation)
    for full, mixed in zip(outputs["float32"], outputs["bfloat16"], strict=True):
        assert mixed.dtype == jnp.float32
        np.testing.assert_allclose(mixed, full, atol=0.05)  # the same network, rounded
        assert not np.array_equal(mixed, full)
