"""Defaults in one place: the config sections' own defaults are what users get. A game
without a preset trains ``default_config(env)``, which sets only what the game decides; a
preset states only what it changes; the tests start from what users get; and none of
them changed what it was when this was made (tests/data/presets_and_default_configs.json)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from conftest import TINY, tiny_config

import envs
from jaxzero.core.config import Config, apply_overrides, config_to_dict, flatten
from jaxzero.core.defaults import default_config, starting_config
from jaxzero.core.presets import presets
from jaxzero.run.folder.config_file import read_config_dict

PINNED_FILE = Path(__file__).parents[1] / "data" / "presets_and_default_configs.json"
PINNED = json.loads(PINNED_FILE.read_text())
# What default_config reads from the game: its network from the observation (a board or
# not, one player or two), how many actions Gumbel considers, the sampled first plies and
# the periodic matches (two players), the symmetries replay applies.
FROM_THE_GAME = {
    "game", "network.kind", "network.value_head", "network.value_max",
    "search.max_num_considered_actions", "selfplay.temperature_moves", "replay.augment",
    "evaluation.every",
}  # fmt: skip


RESNET_ONLY = ("network.num_blocks", "network.channels", "network.value_channels",
               "network.value_hidden")  # fmt: skip


def _flat(config: Config) -> dict:
    return flatten(config_to_dict(config), sep=".", keep_empty=True)


def _what_it_builds(flat: dict) -> dict:
    """A flat config without the ResNet's keys where the network is an MLP, which never
    reads them (their defaults are the ResNet's)."""
    unread = RESNET_ONLY if flat["network.kind"] == "mlp" else ()
    return {key: value for key, value in flat.items() if key not in unread}


@pytest.mark.parametrize("game", sorted(PINNED["default_config"]))
def test_default_config_sets_only_what_the_game_decides(game):
    made = _flat(default_config(envs.make(game)))
    assert _what_it_builds(made) == _what_it_builds(PINNED["default_config"][game])
    defaults = _flat(Config())
    assert {key for key in made if made[key] != defaults[key]} <= FROM_THE_GAME


def test_every_preset_is_what_it_was():
    now = {name: _what_it_builds(_flat(preset)) for name, preset in presets().items()}
    assert now == {name: _what_it_builds(flat) for name, flat in PINNED["presets"].items()}


@pytest.mark.parametrize("game", ["tic_tac_toe", "pgx/tic_tac_toe", "go", "star_duel"])
def test_the_tests_start_from_what_users_get(game):
    made = dataclasses.replace(default_config(envs.make(game)), game=game)
    assert starting_config(game) == presets().get(game, made)  # as `jaxzero train` starts
    assert tiny_config(game) == apply_overrides(starting_config(game), TINY)


def test_a_config_file_without_a_key_keeps_the_value_of_its_time():
    """config.json records every key: one lacks a key only if written before it existed,
    when the defaults were those of before this change, which its run keeps."""
    old = read_config_dict({"game": "connect_four", "network": {"kind": "resnet"}})
    assert (old.network.value_channels, old.network.value_hidden) == (1, 0)  # its shapes
    assert (old.search.num_simulations, old.selfplay.batch_size) == (32, 256)
    assert (old.optim.schedule, old.optim.learning_rate, old.train.keep_every) == (
        "constant", 1e-3, 100,
    )  # fmt: skip
    for config in (Config(), *presets().values()):  # a file of today reads as written
        assert read_config_dict(config_to_dict(config)) == config
    with pytest.raises(ValueError, match="network"):
        read_config_dict({"game": "tic_tac_toe", "network": 3})
