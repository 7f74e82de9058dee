"""Bring your own game: games from a module file (``make("module:Class")``), the string
that rebuilds a game (``game_spec``), games of installed packages (entry points), the
one-line refusals, and the capabilities an Env declares and ``check_env`` holds it to."""

import importlib
import importlib.metadata
import os
import subprocess
import sys
import textwrap

import jax
import numpy as np
import pytest

import envs
from envs import registry
from envs.core import Env
from envs.star_duel import StarDuel
from envs.testing import check_env, check_hidden_information

MODULE = "take_away_game"  # the module every test writes to its own tmp_path

# Take-away: a pile of `pile` tokens, action a takes a + 1 of them (2 only if 2 are left),
# and whoever takes the last token wins. The mover sees the pile; with hidden=True each
# player also holds a card (0..2) that the other player does not see and that changes
# nothing; BadResample's redeal shows (it leaks into the observation).
SOURCE = """
import jax
import jax.numpy as jnp

import envs


@envs.state_dataclass
class TakeAwayState(envs.State):
    pile: jax.Array  # int32 []
    cards: jax.Array  # int32 [2] each player's hidden card


class TakeAway(envs.Env[TakeAwayState]):
    id = "take_away"
    num_actions = 2

    def __init__(self, pile: int = 4):
        self.pile = pile
        self.observation_shape = (pile + 2,)
        self.max_steps = pile

    def _state(self, pile, player, cards, **fields):
        state = TakeAwayState(
            current_player=player,
            observation=jnp.zeros(self.observation_shape, jnp.float32),
            legal_action_mask=jnp.stack([pile >= 1, pile >= 2]),
            step_count=jnp.int32(0),
            pile=pile,
            cards=cards,
            **fields,
        )
        return state.replace(observation=self._observe(state, player))

    def _init(self, key):
        cards = jax.random.randint(key, (2,), 0, 3, jnp.int32)
        no = jnp.bool_(False)
        zero = jnp.zeros(2, jnp.float32)
        return self._state(jnp.int32(self.pile), jnp.int32(0), cards, rewards=zero,
                           terminated=no, truncated=no)

    def _step(self, state, action, key):
        pile = state.pile - action - 1
        won = pile == 0
        mover = jnp.where(jnp.arange(2) == state.current_player, 1.0, -1.0)
        return self._state(
            pile, 1 - state.current_player, state.cards,
            rewards=jnp.where(won, mover, 0.0).astype(jnp.float32),
            terminated=won, truncated=state.truncated,
        ).replace(step_count=state.step_count)

    def _observe(self, state, player):
        return jax.nn.one_hot(state.pile, self.pile + 2)


class HiddenTakeAway(TakeAway):
    has_hidden_information = True

    def resample_hidden(self, state, key):
        other = 1 - state.current_player
        card = jax.random.randint(key, (), 0, 3, jnp.int32)
        return state.replace(cards=state.cards.at[other].set(card))


class BadResample(HiddenTakeAway):
    def _observe(self, state, player):
        seen = jax.nn.one_hot(state.pile, self.pile + 2)
        return seen.at[-1].set(state.cards[1 - player])


class UndeclaredResample(TakeAway):
    def resample_hidden(self, state, key):
        return state


def small(**kwargs):
    return TakeAway(pile=2, **kwargs)


def not_a_game():
    return 42


class NotAnEnv:
    pass


PILE = 4


def register_games():
    envs.register("take_away", f"{__name__}:TakeAway")
    envs.register("take_away_small", f"{__name__}:TakeAway", pile=2)


def broken_registration():
    raise RuntimeError("this package is broken")
"""


def _write(folder, name, source):
    (folder / f"{name}.py").write_text(textwrap.dedent(source))


@pytest.fixture
def game_module(tmp_path, monkeypatch):
    """The module ``take_away_game`` in a folder on sys.path, imported afresh by each test."""
    _write(tmp_path, MODULE, SOURCE)
    monkeypatch.setattr(sys, "path", list(sys.path))  # undoes make's append of the cwd too
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop(MODULE, None)
    yield tmp_path
    sys.modules.pop(MODULE, None)


@pytest.fixture
def fresh_registry(monkeypatch):
    """The registry as ``import envs`` leaves it: built-in ids only, entry points not run."""
    builtin = {k: v for k, v in registry._REGISTRY.items() if not k.startswith("pgx/")}
    monkeypatch.setattr(registry, "_REGISTRY", builtin)
    monkeypatch.setattr(registry, "_FAMILIES", {})
    monkeypatch.setattr(registry, "_entry_points_loaded", False)


def _entry_point(name, value):
    return importlib.metadata.EntryPoint(name=name, value=value, group="jaxzero.games")


def test_a_game_in_a_module_file_is_made_by_its_import_path(game_module):
    env = envs.make(f"{MODULE}:TakeAway", pile=3)
    assert type(env).__name__ == "TakeAway" and env.pile == 3
    assert envs.make(f"{MODULE}:small").pile == 2  # a factory, called with the kwargs
    state = env.step(env.init(jax.random.key(0)), 1)  # take two of three
    state = env.step(state, 0)  # the other player takes the last one
    assert state.terminated and state.rewards.tolist() == [-1.0, 1.0]
    check_env(env, num_games=4)


def test_the_working_directory_is_searched_last(tmp_path, monkeypatch):
    _write(tmp_path, MODULE, SOURCE)
    sys.modules.pop(MODULE, None)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    try:
        assert envs.make(f"{MODULE}:TakeAway").pile == 4
        assert sys.path[-1] == str(tmp_path)  # appended: installed modules still come first
    finally:
        sys.modules.pop(MODULE, None)


@pytest.mark.parametrize(
    "spec, message",
    [
        ("no_such_game", r"unknown game 'no_such_game'; choose one of: .*tic_tac_toe.*"
                         r"any pgx/<name>, or an import path module:Class"),
        ("no_such_module_here:Game", r"no module named 'no_such_module_here' here or in the "
                                     r"environment: run from the folder that holds it"),
        (f"{MODULE}:Missing", r"module 'take_away_game' has no attribute 'Missing'; its Env "
                              r"classes: BadResample, HiddenTakeAway, TakeAway, "
                              r"UndeclaredResample$"),
        (f"{MODULE}:PILE", r"'take_away_game:PILE' is neither an envs.Env subclass nor a "
                           r"function that returns an Env, but a value of type int"),
        (f"{MODULE}:NotAnEnv", r"'take_away_game:NotAnEnv' is a class but not an envs.Env "
                               r"subclass"),
        (f"{MODULE}:not_a_game", r"game 'take_away_game:not_a_game' built an object of type "
                                 r"int, not an envs.Env"),
        (f"{MODULE}:", r"'take_away_game:' is not an import path: write module:attribute"),
        ("broken_dependency:Game", r"game 'broken_dependency:Game': importing "
                                   r"'broken_dependency' failed: No module named 'no_such_lib'"),
        ("pgx/", r"unknown game 'pgx/'"),
    ],
)  # fmt: skip
def test_each_refusal_is_one_line_that_says_what_to_do(game_module, spec, message):
    _write(game_module, "broken_dependency", "import no_such_lib\n")
    importlib.invalidate_caches()
    with pytest.raises(ValueError, match=message) as refused:
        envs.make(spec)
    assert "\n" not in str(refused.value)
    sys.modules.pop("broken_dependency", None)


def test_game_spec_rebuilds_registered_games_by_id():
    for env_id in ["tic_tac_toe", "go_6x6", "star_duel", "star_duel_short"]:
        env = envs.make(env_id)
        assert envs.game_spec(env) == env_id
        assert type(envs.make(env_id)) is type(env)
    # star_duel_short's env.id is "star_duel": the id whose settings match is found instead
    short = envs.make("envs.star_duel:StarDuel", authority=10, turn_cap=20)
    assert short.id == "star_duel" and envs.game_spec(short) == "star_duel_short"


def test_game_spec_rebuilds_a_custom_game_by_import_path(game_module):
    env = envs.make(f"{MODULE}:TakeAway")
    spec = envs.game_spec(env)
    assert spec == f"{MODULE}:TakeAway"  # its id, take_away, is not registered
    assert type(envs.make(spec)) is type(env) and envs.make(spec).pile == env.pile


def test_game_spec_refuses_what_no_spec_rebuilds(game_module):
    with pytest.raises(ValueError, match=r"envs.register\('my_game', 'take_away_game:TakeAway'"):
        envs.game_spec(envs.make(f"{MODULE}:TakeAway", pile=3))  # settings only kwargs give
    with pytest.raises(ValueError, match=r"Go\(size=7.*envs.register\('my_game', 'envs.go:Go'"):
        envs.game_spec(envs.make("go", size=7))

    class Local(type(envs.make(f"{MODULE}:TakeAway"))):
        pass

    with pytest.raises(ValueError, match="defined inside a function") as refused:
        envs.game_spec(Local())
    assert "\n" not in str(refused.value)


def test_entry_points_register_games_on_the_first_miss(game_module, fresh_registry, monkeypatch):
    calls = []

    def entry_points():
        calls.append(1)
        return [_entry_point("take_away", f"{MODULE}:register_games")]

    monkeypatch.setattr(registry, "_entry_points", entry_points)
    assert envs.make("tic_tac_toe").id == "tic_tac_toe" and not calls  # a hit loads nothing
    assert envs.make("take_away_small").pile == 2 and len(calls) == 1
    assert {"take_away", "take_away_small", "tic_tac_toe"} <= set(envs.available())
    with pytest.raises(ValueError, match="unknown game 'still_unknown'"):
        envs.make("still_unknown")
    assert len(calls) == 1  # once per process


def test_a_broken_entry_point_warns_and_the_others_still_register(
    game_module, fresh_registry, monkeypatch
):
    entry_points = [
        _entry_point("broken", f"{MODULE}:broken_registration"),
        _entry_point("missing", "no_such_package_here:register"),
        _entry_point("take_away", f"{MODULE}:register_games"),
    ]
    monkeypatch.setattr(registry, "_entry_points", lambda: entry_points)
    with pytest.warns(UserWarning) as warned:
        assert envs.make("take_away").pile == 4
    messages = [str(w.message) for w in warned]
    assert any("'broken'" in m and "RuntimeError: this package is broken" in m for m in messages)
    assert any("'missing'" in m and "ModuleNotFoundError" in m for m in messages)
    assert all("\n" not in m for m in messages)


def test_pgx_registers_through_its_entry_point(fresh_registry):
    """envs knows nothing of pgx: the installed entry point registers its ids and family."""
    assert ("pgx", "envs.pgx:register") in {(e.name, e.value) for e in registry._entry_points()}
    core = open(envs.core.__file__).read()
    assert "envs.pgx" not in core and '"pgx/"' not in core
    assert not any(k.startswith("pgx/") for k in registry._REGISTRY)
    pytest.importorskip("pgx")
    assert "pgx/othello" in envs.available()  # listed: the entry point ran
    with pytest.raises(ValueError, match="pgx/kuhn_poker has hidden information") as refused:
        envs.make("pgx/kuhn_poker")  # not listed: the family answers
    assert "\n" not in str(refused.value)
    with pytest.raises(ValueError, match="pgx has no game 'no_such_game'"):
        envs.make("pgx/no_such_game")
    assert envs.game_spec(envs.make("pgx/tic_tac_toe")) == "pgx/tic_tac_toe"


def test_import_envs_runs_no_entry_point():
    code = (
        "import sys, envs\n"
        "from envs import registry\n"
        "assert not registry._entry_points_loaded and 'envs.pgx' not in sys.modules\n"
        "assert 'scipy' not in sys.modules\n"
    )
    subprocess.run(
        [sys.executable, "-c", code], check=True, env={**os.environ, "JAX_PLATFORMS": "cpu"}
    )


def test_without_pgx_a_pgx_game_says_how_to_get_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "pgx", None)  # import pgx fails as if not installed
    with pytest.raises(ImportError, match=r"pip install 'jaxzero\[pgx\]'") as missing:
        envs.make("pgx/othello")
    assert "\n" not in str(missing.value)


def test_capability_defaults(game_module):
    env = envs.make(f"{MODULE}:TakeAway")
    state = env.init(jax.random.key(0))
    assert Env.has_hidden_information is False and env.has_hidden_information is False
    assert env.resample_hidden(state, jax.random.key(1)) is state
    assert env.num_chance_outcomes == 0
    with pytest.raises(TypeError, match="does not enumerate its chance events"):
        env.chance_probs(state, 0)
    assert env.symmetries.size == 1  # the trivial group, the observation one position
    np.testing.assert_array_equal(env.symmetries.observation_index, [[0]])
    np.testing.assert_array_equal(env.symmetries.action_index, [[0, 1]])
    assert env.action_to_text(1) == "1" and env.text_to_action(" 1 ") == 1
    assert env.render(state).endswith("player 0 to move; legal: 0 1")  # a plain default
    assert StarDuel.has_hidden_information is True
    assert envs.make("tic_tac_toe").symmetries.size == 8  # a game's own group wins


def test_check_env_checks_declared_hidden_information(game_module):
    module = importlib.import_module(MODULE)
    check_env(module.HiddenTakeAway(), num_games=4)
    with pytest.raises(AssertionError, match=r"resample_hidden changed the observe\(state, "):
        check_env(module.BadResample(), num_games=4)
    with pytest.raises(AssertionError, match="has_hidden_information is False"):
        check_env(module.UndeclaredResample(), num_games=4)
    with pytest.raises(AssertionError, match="does not declare hidden information"):
        check_hidden_information(module.TakeAway())


def test_star_duel_keeps_what_the_mover_sees_when_resampled():
    check_hidden_information(StarDuel(authority=10, turn_cap=4), num_games=4, num_steps=24)


def test_check_env_checks_the_notation(game_module):
    class Misread(type(envs.make(f"{MODULE}:TakeAway"))):
        def text_to_action(self, text):
            return 0

    with pytest.raises(AssertionError, match=r"text_to_action\('1'\) is 0"):
        check_env(Misread(), num_games=2)


def test_the_checkers_are_exported():
    for name in ["check_env", "check_symmetries", "check_chance", "check_hidden_information"]:
        assert name in envs.__all__ and getattr(envs, name) is getattr(envs.testing, name)
    assert "game_spec" in envs.__all__ and envs.game_spec is registry.game_spec
