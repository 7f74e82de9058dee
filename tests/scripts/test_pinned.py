"""experiments/pinned.py: commands run at once, each on CPUs of its own."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from experiments import pinned

ROOT = Path(__file__).resolve().parents[2]
AFFINITY = "import os; print(sorted(os.sched_getaffinity(0)), os.environ.get('XLA_FLAGS', ''))"


def test_cpu_groups_deal_this_processes_cpus_apart():
    cpus = sorted(os.sched_getaffinity(0))
    groups = pinned.cpu_groups(len(cpus))
    assert sorted(cpu for group in groups for cpu in group) == cpus
    assert pinned.cpu_groups(1) == [cpus]
    for jobs in (0, len(cpus) + 1):
        with pytest.raises(ValueError, match=f"--jobs {jobs}: this process may use"):
            pinned.cpu_groups(jobs)


def test_each_command_runs_on_its_own_cpus_and_a_failure_names_its_log(tmp_path):
    jobs = min(2, len(os.sched_getaffinity(0)))
    logs = [tmp_path / f"{i}.txt" for i in range(3)]
    commands = [[sys.executable, "-c", AFFINITY]] * 3
    lines = []
    pinned.run_pinned(commands, logs, jobs, names=["a", "b", "c"], log=lines.append)
    groups = [str(group) for group in pinned.cpu_groups(jobs)]
    for log in logs:
        cpus, _, flags = log.read_text().strip().partition(" ")
        assert cpus in groups  # exactly one group's CPUs
        assert (pinned.SINGLE_THREAD_XLA in flags) == (cpus.count(",") == 0)
    assert sorted(line.split()[1] for line in lines if "finished" in line) == ["a", "b", "c"]
    failing = [[sys.executable, "-c", "raise SystemExit(3)"]]
    with pytest.raises(RuntimeError, match=r"0 failed \(exit 3\); see .*bad\.txt"):
        pinned.run_pinned(failing, [tmp_path / "bad.txt"], 1, log=lambda line: None)


def test_the_experiments_runner_script_still_pins_a_command():
    """``python -m experiments.runner CPUS COMMAND...``, as the docs quote it."""
    cpu = min(os.sched_getaffinity(0))
    command = [sys.executable, "-m", "experiments.runner", str(cpu), sys.executable, "-c"]
    done = subprocess.run([*command, AFFINITY], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"[{cpu}]")
    usage = subprocess.run([*command[:4]], cwd=ROOT, capture_output=True, text=True)
    assert f"expected CPU[,CPU...] COMMAND [ARG...], got '{cpu}'" in usage.stderr
