"""The README's two commands, as the Makefile runs them."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("code", "ok"), [(130, True), (2, False)])
def test_make_train_takes_a_clean_ctrl_c_as_success(tmp_path, code, ok):
    """`jaxzero train` stopped by Ctrl-C saves and exits 130: `make train` says no
    "Error 130" for it; any other failure is still make's error."""
    if shutil.which("make") is None:
        pytest.skip("needs make")
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    fake = venv / "bin" / "jaxzero"  # stands in for the real one, stopped by Ctrl-C
    fake.write_text(f"#!/bin/sh\necho interrupted >&2\nexit {code}\n")
    fake.chmod(0o755)
    (venv / "bin" / ".installed").touch()  # set up already: make installs nothing
    later = max((ROOT / name).stat().st_mtime for name in ("pyproject.toml", "constraints.txt"))
    os.utime(venv / "bin" / ".installed", (later + 60, later + 60))
    done = subprocess.run(
        ["make", "-C", str(ROOT), "train", f"VENV={venv}"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert (done.returncode == 0) == ok, done.stderr
    assert ("Error" in done.stderr) != ok, done.stderr
