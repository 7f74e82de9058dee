"""Random option values on every command: a clean run or one ``error:`` line, never a traceback.

Every command here is pointed at a run directory that stops it before anything heavy:
``train`` at a run it may not overwrite (refused before compiling), the others at a
checkpoint that does not exist. So what is fuzzed is parsing and validation: option
types and ranges, config overrides (keys and values), search settings, game names.
"""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from jaxzero.cli import app
from jaxzero.core.config import config_to_dict
from jaxzero.core.presets import get_preset
from jaxzero.run.life.driver import prepare_run_dir

runner = CliRunner()
FUZZ = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _keys(tree: dict, prefix: str = "") -> list[str]:
    keys = []
    for name, value in tree.items():
        keys += _keys(value, f"{prefix}{name}.") if isinstance(value, dict) else [prefix + name]
    return keys


KEYS = _keys(config_to_dict(get_preset("tic_tac_toe")))
NUMBERS = st.one_of(
    st.integers(-(2**70), 2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["0", "-1", "1e400", "nan", "-inf", "0x10", "1_000", "", " ", "1.5"]),
)
VALUES = st.one_of(NUMBERS, st.text(max_size=12), st.sampled_from(["true", "no", "gumbel"]))


def _assert_clean(result) -> None:
    assert result.exit_code in (0, 2), (result.exit_code, result.output, result.exception)
    assert "Traceback" not in result.output, result.output
    if result.exit_code == 2:
        lines = [line for line in result.output.splitlines() if line.strip()]
        assert lines and lines[-1].startswith("error: "), result.output


@pytest.fixture(scope="module")
def held_run(tmp_path_factory, ttt_config):
    run = tmp_path_factory.mktemp("fuzz") / "run"
    prepare_run_dir(run, ttt_config, resume=False, force=False)
    return run


@FUZZ
@given(
    overrides=st.lists(
        st.tuples(st.one_of(st.sampled_from(KEYS), st.text(max_size=8)), VALUES), max_size=3
    ),
    seconds=st.one_of(st.none(), NUMBERS),
    iterations=st.one_of(st.none(), NUMBERS),
    game=st.sampled_from(["tic_tac_toe", "connect_four", "go_6x6", "chess", "", "tic_tac_toe="]),
)
def test_train_options_and_overrides(held_run, overrides, seconds, iterations, game):
    args = ["train", game, *[f"{k}={v}" for k, v in overrides], "--out", str(held_run)]
    args += ["--seconds", seconds] if seconds is not None else []
    args += ["--iterations", iterations] if iterations is not None else []
    result = runner.invoke(app, args)
    _assert_clean(result)
    assert result.exit_code == 2  # a held run is never overwritten, whatever was asked


COMMANDS = {
    "play": ["--simulations", "--search", "--human", "--seed", "--set"],
    "gtp": ["--simulations", "--search", "--resign", "--set"],
    "eval": ["--games", "--simulations", "--every", "--seed", "--opponents", "--set"],
    "analyze": ["--simulations", "--search", "--seed", "--moves", "--set"],
}


@FUZZ
@given(
    command=st.sampled_from(sorted(COMMANDS)),
    data=st.data(),
)
def test_agent_command_options(tmp_path, command, data):
    options = data.draw(st.lists(st.sampled_from(COMMANDS[command]), max_size=3, unique=True))
    args = [command]
    args += {"eval": [str(tmp_path / "none")], "analyze": ["tic_tac_toe"]}.get(command, [])
    args += [] if command in ("eval", "analyze") else ["--checkpoint", str(tmp_path / "none")]
    args += ["--checkpoint", str(tmp_path / "none")] if command == "analyze" else []
    for option in options:
        args += [option, data.draw(VALUES)]
    result = runner.invoke(app, args, input="")
    _assert_clean(result)
    assert result.exit_code == 2  # no checkpoint there: every path ends in an error line
