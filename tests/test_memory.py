"""A run beyond the machine's memory is refused in one line naming the setting, before
anything is allocated or written (it used to hang in the allocator)."""

import pytest
from typer.testing import CliRunner

from jaxzero.cli import app
from jaxzero.core.memory import available_memory, check_memory, memory_needs

runner = CliRunner()


def test_the_estimate_names_each_part_and_the_largest_is_refused(trainers, ttt_config):
    trainer = trainers(ttt_config)
    needs = memory_needs(trainer)
    assert set(needs) == {"replay.capacity", "selfplay.batch_size", "search trees", "network"}
    assert all(size > 0 for size in needs.values())
    check_memory(trainer, available=sum(needs.values()))  # fits exactly
    with pytest.raises(ValueError, match=r"free: lower replay.capacity \(now 256\)"):
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
