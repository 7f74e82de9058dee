"""A run beyond the machine's memory is refused in one line naming the setting, before
anything is allocated or written (it used to hang in the allocator)."""

import pytest
from typer.testing import CliRunner

from jaxzero.cli import app
from jaxzero.core.memory import (
    available_memory,
    check_memory,
    check_search_memory,
    memory_needs,
)

runner = CliRunner()


def test_the_estimate_names_each_part_and_the_largest_is_refused(trainers, ttt_config):
    trainer = trainers(ttt_config)
    needs = memory_needs(trainer)
    parts = {"replay.capacity", "selfplay.batch_size", "search trees", "network"}
    assert set(needs) == parts | {"evaluation search trees"}  # evaluation.every > 0
    assert all(size > 0 for size in needs.values())
    check_memory(trainer, available=sum(needs.values()))  # fits exactly
    largest = r"free: lower evaluation.simulations \(now 4\) or evaluation.games \(now 100\)"
    with pytest.raises(ValueError, match=largest):  # 100 games' trees: the largest part
        check_memory(trainer, available=1)
    assert available_memory() > 0


@pytest.mark.parametrize(
    "override, setting",
    [("replay.capacity=10000000000", "lower replay.capacity (now 10000000000)"),
     ("selfplay.batch_size=1000000000", "lower selfplay.batch_size (now 1000000000)")],
)  # fmt: skip
def test_sizes_beyond_memory_fail_in_one_line_and_write_nothing(tmp_path, override, setting):
    run = tmp_path / "run"
    result = runner.invoke(app, ["train", "connect_four", override, "--out", str(run)])
    assert result.exit_code == 2, result.output
    line = [line for line in result.output.splitlines() if line.strip()][-1]
    assert line.startswith("error: the run needs about") and setting in line
    assert not run.exists()


AGENT = "jaxzero/agents/tic_tac_toe"  # a shipped agent folder: its config checked on loading


@pytest.mark.parametrize(
    "args, message",
    [  # each grew to the OOM killer, raised MemoryError or hung (issue 45, item 6)
        (["train", "tic_tac_toe", "evaluation.simulations=1000000000", "evaluation.every=1"],
         "evaluation.simulations=1000000000 is beyond 1,048,576"),
        (["train", "tic_tac_toe", "evaluation.simulations=1000000", "evaluation.games=100000",
          "evaluation.every=1"], "lower evaluation.simulations (now 1000000)"),
        (["train", "tic_tac_toe", "network.kind=mlp", "network.num_layers=100000"],
         "network.num_layers=100000 is beyond 1000"),
        (["train", "connect_four", "network.num_blocks=100000"],
         "network.num_blocks=100000 is beyond 1000"),
        (["eval", AGENT, "--simulations", "1000000000"], "simulations=1000000000 is beyond"),
        (["eval", AGENT, "--games", "100000000"], "for the search trees of 100000000 games"),
        (["play", "tic_tac_toe", "--simulations", "1000000000"], "is beyond 1,048,576"),
        (["analyze", "tic_tac_toe", "--simulations", "1000000000"], "is beyond 1,048,576"),
        (["play", "--checkpoint", AGENT, "--set", "evaluation.simulations=1000000000"],
         "evaluation.simulations=1000000000 is beyond"),
    ],
)  # fmt: skip
def test_every_command_checks_its_search_and_network_sizes_first(tmp_path, args, message):
    out = ["--out", str(tmp_path / "run")] if args[0] == "train" else []
    result = runner.invoke(app, args + out, input="")
    assert result.exit_code == 2, result.output
    line = [line for line in result.output.splitlines() if line.strip()][-1]
    assert line.startswith("error: ") and message in line, result.output
    assert not (tmp_path / "run").exists()


def test_a_search_tree_beyond_memory_names_its_setting():
    import envs

    env = envs.make("tic_tac_toe")
    check_search_memory(env, 64, "--simulations", available=10**9)
    with pytest.raises(ValueError, match="--simulations=64 needs about .* lower --simulations"):
        check_search_memory(env, 64, "--simulations", games=10**6, available=10**9)
