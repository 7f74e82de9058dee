"""jaxzero.measure.probes: a network's optimal-move share with its interval, judged again
and again without replaying the positions or recompiling the player."""

import jax
from conftest import tiny_config

from jaxzero.core import networks
from jaxzero.measure.positions import MoveQuality
from jaxzero.measure.probes import make_judge, optimal_share
from jaxzero.measure.statistics import wilson_interval


def test_a_judge_scores_any_params_of_its_config_and_compiles_once(ttt):
    config = tiny_config("tic_tac_toe")
    judge = make_judge(config)
    network = networks.make_network(config.network, ttt)
    params = [networks.init_params(network, ttt, jax.random.key(seed)) for seed in (0, 1)]
    shares = [judge(p) for p in params]
    quality = judge.quality(params[0])
    assert quality.positions == 4520  # tic-tac-toe's decision states
    assert shares[0] == optimal_share(quality)
    for share in shares:
        assert list(share) == ["optimal", "optimal_low", "optimal_high"]
        assert 0.0 <= share["optimal_low"] <= share["optimal"] <= share["optimal_high"] <= 1.0
    assert shares[0] != shares[1]  # two networks, two answers
    assert jax.jit(judge.player)._cache_size() == 1  # one compilation, kept with the player


def test_the_share_interval_is_wilsons():
    quality = MoveQuality(positions=200, optimal=0.75, exact=0.5, critical=100, kept=0.5)
    low, high = wilson_interval(150, 200)
    assert optimal_share(quality) == {"optimal": 0.75, "optimal_low": low, "optimal_high": high}
