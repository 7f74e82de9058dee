"""Configs check themselves when built, and old run directories' configs still read."""

import re

import pytest

from jaxzero.core import config as config_lib
from jaxzero.core.presets import PRESETS, get_preset
from jaxzero.run.folder.config_file import read_config_dict

OLD_LAYOUT = {  # a config.json as runs before the evaluation and gate sections wrote it
    "game": "connect_four",
    "search": {"kind": "puct", "num_simulations": 8, "eval_simulations": 96,
               "average_symmetries": True},
    "train": {"iterations": 50, "log_every": 5, "checkpoint_every": 25, "keep_every": 100,
              "num_devices": 1},
    "arena": {"enabled": True, "every": 10, "num_games": 40, "threshold": 0.6,
              "opening_plies": 3, "simulations": 0, "eval_every": 25, "eval_games": 50},
    "seed": 4,
}  # fmt: skip


def test_a_config_of_the_old_layout_reads_in_the_new_one():
    config = read_config_dict(OLD_LAYOUT)
    assert config.search.kind == "puct" and config.search.num_simulations == 8
    assert config.evaluation == config_lib.EvaluationConfig(
        simulations=96, average_symmetries=True, opening_plies=3, every=25, games=50
    )
    assert config.gate == config_lib.GateConfig(enabled=True, every=10, num_games=40, threshold=0.6)
    assert config.num_devices == 1 and config.seed == 4 and config.train.iterations == 50
    # arena.simulations, when set, was the gate's and the evaluation's count
    set_ = OLD_LAYOUT | {"arena": OLD_LAYOUT["arena"] | {"simulations": 32}}
    assert read_config_dict(set_).evaluation.simulations == 32


def test_presets_name_their_game_and_round_trip():
    for name, preset in PRESETS.items():
        assert preset.game == name
        assert config_lib.config_from_dict(config_lib.config_to_dict(preset)) == preset


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("gate.num_games", 7, "gate.num_games must be an even number >= 2, got 7"),
        ("gate.threshold", 0.5, "gate.threshold must be in (0.5, 1], got 0.5"),
        ("evaluation.simulations", 0, "evaluation.simulations must be >= 1, got 0"),
        ("evaluation.games", 3, "evaluation.games must be 0 or an even number >= 2"),
        ("search.kind", "", "search.kind must name a search"),
        ("network.kind", "", "network.kind must name a network"),
        ("network.args", "[1", "network.args: expected a JSON object"),
        ("search.num_simulations", 100_000, "search.num_simulations=100000 is beyond 16,384"),
        ("optim.schedule", "linear", "optim.schedule: expected one of constant, cosine"),
        ("replay.min_size", 10**9, "replay.min_size must be between 0 and replay.capacity"),
        ("train.keep_every", 7, "make it a multiple of"),
        ("selfplay.discount", 1.5, "selfplay.discount must be in (0, 1]"),
        ("num_devices", -1, "num_devices must be >= 0"),
        ("seed", "1e400", "seed: expected an integer, got '1e400'"),  # inf
        ("seed", "1.5e0", "seed: expected an integer, got '1.5e0'"),
        ("selfplay.full_search_share", 0, "selfplay.full_search_share must be in (0, 1]"),
    ],
)
def test_a_bad_setting_names_its_key_when_the_config_is_built(key, value, message):
    with pytest.raises(ValueError) as error:
        config_lib.apply_overrides(get_preset("tic_tac_toe"), {key: value})
    assert message in str(error.value)


@pytest.mark.parametrize(
    "overrides, message",
    [  # each accepted before: NaN root noise, an inf rate that diverged, a seed past 2**32
        ({"search.dirichlet_alpha": 0}, "search.dirichlet_alpha must be > 0 while"),
        ({"search.gumbel_scale": "inf"}, "search.gumbel_scale must be a finite number, got inf"),
        ({"optim.learning_rate": "inf"}, "optim.learning_rate must be a finite number, got inf"),
        ({"search.pb_c_init": "nan"}, "search.pb_c_init must be a finite number, got nan"),
        ({"seed": 2**32}, "seed must be between 0 and 4294967295"),
        ({"seed": str(2**64)}, "seed must be between 0 and 4294967295"),
        ({"seed": -1}, "seed must be between 0 and 4294967295"),
    ],
)
def test_a_setting_is_checked_for_meaning_not_only_type(overrides, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        config_lib.apply_overrides(get_preset("tic_tac_toe"), overrides)


def test_no_root_noise_needs_no_concentration():
    no_noise = {"search.dirichlet_alpha": 0, "search.dirichlet_fraction": 0}
    assert (
        config_lib.apply_overrides(get_preset("tic_tac_toe"), no_noise).search.dirichlet_alpha == 0
    )


def test_an_integer_may_be_written_with_an_exponent():
    assert config_lib.apply_overrides(get_preset("tic_tac_toe"), {"seed": "1E3"}).seed == 1000


def test_a_section_is_checked_once_with_all_its_changes():
    """keep_every must divide checkpoint_every: changing both at once is fine."""
    changed = config_lib.apply_overrides(
        get_preset("tic_tac_toe"), {"train.checkpoint_every": 3, "train.keep_every": 30}
    )
    assert changed.train.checkpoint_every == 3 and changed.train.keep_every == 30
    with pytest.raises(ValueError, match="unknown config key 'search.eval_simulations'"):
        config_lib.apply_overrides(changed, {"search.eval_simulations": 8})


def test_an_unknown_name_is_refused_where_it_is_resolved():
    import envs
    from jaxzero.core import networks, policies

    config = config_lib.apply_overrides(get_preset("tic_tac_toe"), {"search.kind": "mcts"})
    with pytest.raises(ValueError, match="search.kind: unknown search 'mcts'; choose gumbel, puct"):
        policies.make_search(config.search)
    config = config_lib.apply_overrides(config, {"network.kind": "cnn"})
    with pytest.raises(ValueError, match="network.kind: unknown network 'cnn'; choose auto, mlp"):
        networks.make_network(config.network, envs.make("tic_tac_toe"))


def test_network_args_round_trip_as_a_json_object():
    config = config_lib.apply_overrides(
        config_lib.Config(),
        {"network.kind": "mynets:Net", "network.args": '{"width": 8, "d": [1, 2]}'},
    )
    assert config.network.args == (("d", (1, 2)), ("width", 8))
    data = config_lib.config_to_dict(config)
    assert data["network"]["args"] == {"d": (1, 2), "width": 8}
    assert config_lib.config_from_dict(data) == config


def test_flatten_names_leaves_by_their_path_and_unflatten_undoes_it():
    tree = {"optim": {"learning_rate": 0.1, "schedule": {}}, "seed": 3}
    flat = config_lib.flatten(tree)
    assert flat == {("optim", "learning_rate"): 0.1, ("seed",): 3}  # the empty section dropped
    assert config_lib.flatten(tree, sep=".") == {"optim.learning_rate": 0.1, "seed": 3}
    kept = config_lib.flatten(tree, keep_empty=True)
    assert kept[("optim", "schedule")] == {}
    assert config_lib.unflatten(kept) == tree
    assert config_lib.unflatten(config_lib.flatten(tree, sep="."), sep=".") == {
        "optim": {"learning_rate": 0.1},
        "seed": 3,
    }
