"""Star Duel through the training machinery: determinised search, backups through
multi-action turns, presets, the greedy opponent and one compiled training iteration."""

import functools
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from envs import star_duel, symmetry
from envs.core import Env, State
from envs.star_duel import StarDuel
from jaxzero.core import config as config_lib
from jaxzero.core import loop, presets, search
from jaxzero.core.config import SearchConfig
from jaxzero.core.policies import make_search
from jaxzero.measure import opponents

SHORT = envs.make("star_duel_short")


def stack(states: list[State]) -> State:
    return jax.tree.map(lambda *xs: jnp.stack(xs), *states)


def linear_net(params, observation):
    """A fixed 'network' that reads the whole observation: [B, O] -> [B, A], [B]."""
    w, v = params
    return observation @ w, jnp.tanh(observation @ v)


def net_params(env: Env):
    kw, kv = jax.random.split(jax.random.key(7))
    size = env.observation_shape[0]
    return (
        jax.random.normal(kw, (size, env.num_actions)),
        jax.random.normal(kv, (size,)) * 0.3,
    )


@functools.cache
def star_search(determinize: bool):
    cfg = SearchConfig(
        kind="gumbel", num_simulations=24, max_num_considered_actions=8, determinize=determinize
    )
    return jax.jit(
        functools.partial(
            search.run_search,
            env=SHORT,
            apply_fn=linear_net,
            policy=make_search(cfg),
            num_simulations=cfg.num_simulations,
            options=search.SearchOptions.of(cfg),
            noise=False,
        )  # fmt: skip
    )


def hidden_twin(state: State) -> State:
    """A state that differs from ``state`` only in the other player's hidden hand."""
    for i in range(100):
        twin = SHORT.resample_hidden(state, jax.random.key(100 + i))
        if (np.asarray(twin.other_hand) != np.asarray(state.other_hand)).any():
            return twin
    raise AssertionError("no redeal changed the hidden hand")


def test_determinised_search_never_depends_on_hidden_cards():
    state = SHORT.init(jax.random.key(3))
    twin = hidden_twin(state)
    np.testing.assert_array_equal(state.observation, twin.observation)
    np.testing.assert_array_equal(
        state.other_hand + state.other_deck, twin.other_hand + twin.other_deck
    )
    params = net_params(SHORT)
    key = jax.random.key(11)
    on = [star_search(True)(params, stack([s]), key) for s in (state, twin)]
    # Same observation, same key: the whole search (tree, values, weights, action) agrees.
    for a, b in zip(jax.tree.leaves(on[0]), jax.tree.leaves(on[1]), strict=True):
        np.testing.assert_array_equal(a, b)
    tree = on[0].search_tree
    assert int(tree.node_visits[0, 0]) == 25  # the search did run below the root
    # The switch off searches the true states: the trees hold the two different hands.
    off = [star_search(False)(params, stack([s]), key) for s in (state, twin)]
    hands = [np.asarray(o.search_tree.embeddings.other_hand[0, 0]) for o in off]
    np.testing.assert_array_equal(hands[0], state.other_hand)
    np.testing.assert_array_equal(hands[1], twin.other_hand)
    # Only envs with resample_hidden are determinised.
    assert search.determinizes(SHORT, search.SearchOptions())
    assert not search.determinizes(envs.make("tic_tac_toe"), search.SearchOptions())


class TurnChain(Env):
    """One action per step, five steps: player 0 takes a turn of three actions, player 1 a
    turn of two, and then player 0 has won (the last action, player 1's, gets -1).

    The observation is the one-hot step [6]; movers by step are 0, 0, 0, 1, 1."""

    id = "turn_chain"
    num_actions = 1
    observation_shape = (6,)
    max_steps = 10
    symmetries = symmetry.identity(6, 1)

    def _init(self, key):
        del key
        return self._make(jnp.int32(0))

    def _make(self, step):
        done = step >= 5
        return State(
            current_player=jnp.where(step >= 3, 1, 0).astype(jnp.int32),
            observation=jax.nn.one_hot(step, 6),
            legal_action_mask=jnp.ones(1, jnp.bool_),
            rewards=jnp.where(done, jnp.array([1.0, -1.0]), 0.0).astype(jnp.float32),
            terminated=done,
            truncated=jnp.bool_(False),
            step_count=step,
        )

    def _step(self, state, action, key):
        del action, key
        return self._make(state.step_count + 1)

    def _observe(self, state, player):
        del player
        return jax.nn.one_hot(state.step_count, 6)


STEP_VALUES = jnp.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.0])  # net value at each step, mover's view


def step_value_net(params, observation):
    del params
    return jnp.zeros((observation.shape[0], 1)), observation @ STEP_VALUES


@pytest.mark.parametrize("kind", ["puct", "gumbel"])
def test_values_back_up_through_a_multi_action_turn_and_a_turn_pass(kind):
    """Five simulations down the single line expand steps 1..5 in order. By hand, with
    v_k the net value at step k from its mover's view and mctx's running means:

    step 4 (P1): (0.5 + (-1)) / 2                       = -0.25   (reward -1, discount 0)
    step 3 (P1): (0.4 + 0.5 + (-1)) / 3                 = -1/30   (discount +1: same player)
    step 2 (P0): (0.3 - 0.4 - 0.5 + 1) / 4              =  0.1    (discount -1: turn passes)
    step 1 (P0): (0.2 + 0.3 - 0.4 - 0.5 + 1) / 5        =  0.12   (discount +1)
    step 0 (P0): (0.1 + 0.2 + 0.3 - 0.4 - 0.5 + 1) / 6  =  7/60   (discount +1)
    """
    env = TurnChain()
    cfg = SearchConfig(kind=kind, num_simulations=5, max_num_considered_actions=1)
    run = functools.partial(
        search.run_search, policy=make_search(cfg), env=env, apply_fn=step_value_net,
        num_simulations=5, noise=False,
    )  # fmt: skip
    out = jax.jit(run)(None, stack([env.init(jax.random.key(0))]), jax.random.key(1))
    tree = out.search_tree
    steps = np.asarray(tree.embeddings.step_count)[0]  # node -> step
    values = np.asarray(tree.node_values)[0]
    visits = np.asarray(tree.node_visits)[0]
    by_step = {int(s): (float(v), int(n)) for s, v, n in zip(steps, values, visits, strict=True)}
    expected = {0: 7 / 60, 1: 0.12, 2: 0.1, 3: -1 / 30, 4: -0.25, 5: 0.0}
    for step, value in expected.items():
        assert by_step[step][0] == pytest.approx(value, abs=1e-6), step
        assert by_step[step][1] == 6 - step
    # The root's Q of its only action: reward 0 + (+1) * value(step 1).
    q = np.asarray(tree.qvalues(jnp.zeros(1, jnp.int32)))[0, 0]
    assert q == pytest.approx(0.12, abs=1e-6)


def test_the_preset_trains_the_short_game_and_round_trips_through_json():
    plain = presets.get_preset("star_duel_short")
    fast = config_lib.apply_overrides(plain, {"selfplay.discount": "0.98"})
    assert plain.selfplay.discount == 1.0 and fast.selfplay.discount == 0.98
    for preset in (plain, fast):
        env = envs.make(preset.game)
        assert isinstance(env, StarDuel) and env.authority == 10
        assert preset.network.kind == "mlp"
        assert preset.search.determinize
        assert preset.evaluation.simulations > preset.search.num_simulations
        data = json.loads(json.dumps(config_lib.config_to_dict(preset)))
        assert config_lib.config_from_dict(data) == preset
    off = config_lib.apply_overrides(plain, {"search.determinize": "false"})
    assert not off.search.determinize
    assert not search.determinizes(SHORT, search.SearchOptions.of(off.search))


def test_greedy_opponent_plays_legal_star_duel_moves_and_only_star_duel():
    policy = opponents.make_opponent("greedy", SHORT)

    @jax.jit
    def play(key):
        def move(states, k):
            k_act, k_step = jax.random.split(k)
            actions = policy(None, states, k_act)  # int32 [8]
            legal = states.legal_action_mask[jnp.arange(8), actions]  # bool [8]
            states = jax.vmap(SHORT.step)(states, actions, jax.random.split(k_step, 8))
            return states, (legal, actions)

        states = jax.vmap(SHORT.init)(jax.random.split(key, 8))
        return jax.lax.scan(move, states, jax.random.split(key, 60))

    _, (legal, actions) = play(jax.random.key(0))  # bool, int32 [60, 8]
    assert np.asarray(legal).all()
    # Sixty greedy actions span several turns, with cards played, bought and attacks.
    a = np.asarray(actions)
    played = a < star_duel.T
    bought = (a >= star_duel.BUY) & (a <= star_duel.BUY_EXPLORER)
    for taken in (played, bought, a == star_duel.ATTACK_PLAYER, a == star_duel.END_TURN):
        assert taken.any(0).all()
    with pytest.raises(ValueError, match="no greedy player for .tic_tac_toe.: it plays star_duel"):
        opponents.make_opponent("greedy", envs.make("tic_tac_toe"))


def test_a_tiny_star_duel_iteration_compiles_once_with_determinised_search():
    """A one-turn game (turn cap 1) so that games end, replay fills and gradients flow."""
    config = config_lib.apply_overrides(
        presets.get_preset("star_duel_short"),
        {
            "network.hidden_size": 16,
            "search.num_simulations": 4,
            "search.max_num_considered_actions": 4,
            "selfplay.batch_size": 8,
            "selfplay.moves_per_iteration": 12,
            "replay.capacity": 512,
            "replay.min_size": 8,
            "optim.minibatch_size": 8,
            "optim.updates_per_iteration": 1,
        },
    )
    assert config.search.determinize
    trainer = loop.make_trainer(config, env=StarDuel(authority=10, turn_cap=1))
    state = trainer.init(jax.random.key(0))
    finished = 0.0
    for _ in range(3):
        state, metrics, _ = trainer.iteration(state)
        assert all(np.isfinite(v) for v in jax.device_get(metrics).values()), metrics
        finished += float(metrics["games_finished"])
    assert trainer.iteration._cache_size() == 1
    assert finished > 0
    assert float(metrics["policy_loss"]) > 0
