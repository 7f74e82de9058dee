"""``--durations-file`` (tests/durations_file.py): every test's time lands in the file,
failing runs included, and pytest's exit status is the tests' own."""

import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent


@pytest.mark.parametrize("workers", [[], ["-p", "xdist.plugin", "-n", "2"]])
def test_every_phase_is_written_slowest_first_and_a_failure_still_fails(tmp_path, workers):
    (tmp_path / "test_two.py").write_text(
        "import time\n\ndef test_slow():\n    time.sleep(0.3)\n\n"
        "def test_fails():\n    assert False\n"
    )
    out = tmp_path / "build" / "durations.txt"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "durations_file", "-p"]
    command += ["no:cacheprovider", "--rootdir", str(tmp_path), "--durations-file", str(out)]
    env = {"PYTHONPATH": str(TESTS), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    result = subprocess.run(
        [*command, *workers, "test_two.py"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert result.returncode == 1, result.stdout + result.stderr
    header, *lines = out.read_text().splitlines()
    assert header.startswith("6 test phases") and "exit status 1" in header
    assert lines[0].split()[1:] == ["call", "test_two.py::test_slow", "passed"]
    assert float(lines[0].split()[0].rstrip("s")) >= 0.3
    assert "call     test_two.py::test_fails failed" in "\n".join(lines)
