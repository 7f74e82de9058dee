"""Chance in the search: by default a tree edge keeps the chance outcome it first sampled
(experiments/chance_bias.py measures what that costs); explicit chance nodes
(search.chance_nodes) average the outcomes by their probabilities."""

import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import tiny_config

import envs
from jaxzero.core import search
from jaxzero.core.config import SearchConfig, apply_overrides
from jaxzero.core.loop import check_game_fits
from jaxzero.core.policies import make_search
from jaxzero.core.presets import get_preset

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "experiments"))

import chance_bias  # noqa: E402


@pytest.mark.parametrize("kind", ["puct", "gumbel"])
def test_an_edge_keeps_its_first_coin_flip_however_often_it_is_visited(kind):
    m = chance_bias.measure(kind, simulations=16, searches=512)
    # Q(gamble) is one flip, 0 or 1, never the average of several: |Q - 0.5| is 0.5 exactly.
    assert m["q_abs_error"] == pytest.approx(0.5)
    assert 0.4 < m["q_mean"] < 0.6  # unbiased in the mean ...
    assert 0.7 < m["best_q"] < 0.9  # ... but the best Q is 0.8, not 0.6: the winner's curse
    assert 0.4 < m["picks_gamble"] < 0.6  # and the search gambles whenever the flip won


@pytest.mark.parametrize("kind", ["puct", "gumbel"])
def test_a_chance_node_visits_the_outcomes_in_turn_so_its_value_is_their_mean(kind):
    """The gamble's chance node: its first value is one drawn flip, then tails and heads
    in turn (argmax p(o) / (N(o) + 1), first of ties), so after n visits its Q is
    within 1 / n of the exact 0.5 (the drawn flip and one unpaired tails each 0.5 / n);
    the sure 0.6 is always chosen."""
    env, searches = chance_bias.Gamble(), 256
    config = SearchConfig(kind=kind, max_num_considered_actions=2, chance_nodes=True)
    key = jax.random.key(0)
    states = jax.vmap(env.init)(jax.random.split(key, searches))
    output = jax.jit(
        lambda s, k: search.run_search(
            None,
            s,
            k,
            env,
            chance_bias.uniform,
            make_search(config),
            options=search.SearchOptions.of(config),
            num_simulations=32,
            noise=False,
        )  # fmt: skip
    )(states, key)
    tree = output.search_tree
    visits = np.asarray(tree.children_visits[:, 0, 1])  # N(gamble) [searches]
    q = np.asarray(tree.qvalues(jnp.zeros(searches, jnp.int32))[:, 1])
    assert tree.children_visits.shape[-1] == env.num_actions  # the decision part
    assert (visits >= 2).all()
    assert (np.abs(q - 0.5) <= 1 / visits + 1e-6).all()
    assert (np.asarray(make_search(config).greedy_action(output)) == 0).all()


def test_chance_nodes_need_a_game_that_lists_its_events_and_no_tree_reuse():
    with pytest.raises(ValueError, match="set search.chance_nodes=false"):
        check_game_fits(
            tiny_config("connect_four", search__chance_nodes=True), envs.make("connect_four")
        )
    check_game_fits(tiny_config("pgx/2048", search__chance_nodes=True), envs.make("pgx/2048"))
    with pytest.raises(ValueError, match="cannot both be on"):
        apply_overrides(
            get_preset("tic_tac_toe"), {"search.chance_nodes": True, "search.reuse_tree": True}
        )
