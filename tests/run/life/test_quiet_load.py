"""Loading a run is quiet: orbax's read-only notice is dropped there, and only there."""

import logging

import jax.numpy as jnp
import pytest
from absl import logging as absl_logging
from conftest import tiny_config

from jaxzero.run.agents.agent import load_agent
from jaxzero.run.life.checkpoint import Checkpointer

NOTICE = "Given directory is read only"


def _notices(caplog, capfd) -> list[str]:
    """Every read-only notice logged (caplog) or printed (capfd) so far."""
    logged = [r.getMessage() for r in caplog.records if NOTICE in r.getMessage()]
    printed = [line for line in capfd.readouterr().err.splitlines() if NOTICE in line]
    return logged + printed


@pytest.fixture(scope="module")
def run(tmp_path_factory, train_run):
    run = tmp_path_factory.mktemp("quiet") / "run"
    train_run(run, tiny_config("tic_tac_toe"), iterations=2)
    return run


def test_loading_an_agent_logs_no_read_only_warning(run, caplog, capfd):
    capfd.readouterr()  # what training printed
    with caplog.at_level(logging.DEBUG, logger="absl"):
        agent = load_agent(run)
    assert agent.iteration == 2
    assert _notices(caplog, capfd) == []


def test_only_the_read_only_notice_is_dropped_and_only_while_opening(tmp_path, caplog, capfd):
    with Checkpointer(tmp_path) as checkpointer:
        checkpointer.save(1, {"step": jnp.int32(1)}, {"game": "x"})
    with caplog.at_level(logging.DEBUG, logger="absl"):
        with Checkpointer(tmp_path, read_only=True) as checkpointer:
            assert checkpointer.steps() == [1]
        assert _notices(caplog, capfd) == []
        absl_logging.warning("Given directory is read only=%s", "elsewhere")  # not ours
        absl_logging.warning("another orbax warning")
    messages = [r.getMessage() for r in caplog.records]
    assert "Given directory is read only=elsewhere" in messages
    assert "another orbax warning" in messages
    assert not logging.getLogger("absl").filters  # the filter went with the manager's opening
