"""The examples and the tutorial notebook: each runs at toy size, writes only under its
``--out``, uses only the public names of ``jaxzero`` and ``envs``, and the notebook is
stored without outputs.

Each script runs as a user runs it (``python examples/NAME.py --smoke``, in a scratch
working directory), the notebook in a kernel. At toy size they are compile-bound, so
they run with XLA's backend optimisations off (about half the compile time; what is
checked is behaviour, not speed) and share a JAX compilation cache: three examples
replay tic-tac-toe's solved positions the same way.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from conftest import FAST_COMPILE

import envs
import jaxzero

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SCRIPTS = ("custom_game", "custom_network", "custom_search", "experiment", "pgx_game")
NOTEBOOK = EXAMPLES / "tutorial.ipynb"
MAX_LINES = 120
PUBLIC = {"jaxzero": {*jaxzero.__all__}, "envs": {*envs.__all__}}


@pytest.fixture(scope="module")
def toy_environment(tmp_path_factory) -> dict[str, str]:
    """The environment variables the examples and the notebook run with: the suite's
    compilation cache where conftest.py set one (the same flags, so the same keys: a
    program the suite compiled already is read back), else one of their own."""
    flags = os.environ.get("XLA_FLAGS", "")
    if FAST_COMPILE not in flags:
        flags = f"{flags} {FAST_COMPILE}".strip()
    cache = os.environ.get("JAX_COMPILATION_CACHE_DIR") or str(
        tmp_path_factory.mktemp("jax_compilation_cache")
    )
    return {
        "XLA_FLAGS": flags,
        "JAX_COMPILATION_CACHE_DIR": cache,
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",  # small shared ones too
    }


def test_the_folder_holds_the_listed_examples_and_its_readme_names_each():
    assert sorted(path.stem for path in EXAMPLES.glob("*.py")) == sorted(SCRIPTS)
    readme = (EXAMPLES / "README.md").read_text()
    for name in (*[f"{script}.py" for script in SCRIPTS], "tutorial.ipynb"):
        assert f"]({name})" in readme, name


def _private_uses(tree: ast.Module) -> list[str]:
    """Imports of jaxzero's or envs' submodules or of underscored names, and attributes of
    ``jaxzero``/``envs`` outside their ``__all__``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
            found += [n for n in names if n.split(".")[0] in PUBLIC and n not in PUBLIC]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in PUBLIC:
            if node.module not in PUBLIC:
                found.append(f"from {node.module}")
            found += [f"{node.module}.{a.name}" for a in node.names if a.name.startswith("_")]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            module = node.value.id
            if module in PUBLIC and node.attr not in PUBLIC[module] | {"__version__"}:
                found.append(f"{module}.{node.attr}")
    return found


def test_the_privacy_check_sees_what_it_forbids():
    source = (
        "import jaxzero.core.loop\nfrom envs.core import _x\nimport envs\nenvs.make\njaxzero._y"
    )
    assert _private_uses(ast.parse(source)) == [
        "jaxzero.core.loop", "from envs.core", "envs.core._x", "jaxzero._y",
    ]  # fmt: skip


@pytest.mark.parametrize("name", SCRIPTS)
def test_an_example_is_short_documented_and_uses_only_public_names(name):
    text = (EXAMPLES / f"{name}.py").read_text()
    assert len(text.splitlines()) <= MAX_LINES
    tree = ast.parse(text)
    docstring = ast.get_docstring(tree) or ""
    assert f"python examples/{name}.py --smoke" in docstring  # says what it shows, how to run
    assert _private_uses(tree) == []


def _config(run: Path) -> dict:
    return json.loads((run / "config.json").read_text())


def _custom_game(out: Path, printed: str) -> None:
    assert _config(out)["game"] == "custom_game:TakeAway"  # the script's game, by its name
    result = re.search(r"against random .*: \+(\d+) =(\d+) -(\d+) of 8", printed)
    assert result and sum(map(int, result.groups())) == 8, printed
    assert re.search(r"move wins in \d+ of the 12 piles that can be won", printed), printed


def _custom_network(out: Path, printed: str) -> None:
    network = _config(out)["network"]
    assert network["kind"].endswith(":BoardTransformer")
    assert network["args"] == {"width": 8, "depth": 1}  # the smoke sizes
    assert re.search(r"raw network after 3 iterations: optimal \d+\.\d% of 4520", printed)


def _custom_search(out: Path, printed: str) -> None:
    table = (out / "comparison.txt").read_text().splitlines()
    assert [line.split()[0] for line in table[2:]] == ["puct", "gumbel", "puct+fpu"]
    assert "3 iterations of 8 games, 4 simulations a move" in table[0]


def _experiment(out: Path, printed: str) -> None:
    """A study of two arms, each a population of two seeds measured at iterations 1 and
    2, and its report comparing them."""
    assert sorted(path.name for path in (out / "arms").iterdir()) == ["kind-gumbel", "kind-puct"]
    for arm in ("kind-gumbel", "kind-puct"):
        for k in "01":
            rows = (out / "arms" / arm / "members" / k / "metrics.jsonl").read_text().splitlines()
            shares = [json.loads(row)["eval/raw_optimal"] for row in rows]
            assert len(shares) == 2 and all(0 < share <= 1 for share in shares)
    summary = (out / "report" / "summary.md").read_text()
    assert "kind-puct − kind-gumbel" in summary
    assert (out / "report" / "eval_raw_optimal.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    lines = summary.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Differences"))
    [difference] = [line for line in lines[start:] if line.startswith("| eval/raw_optimal")]
    assert difference.count("[") == 1 and difference in printed


def _pgx_game(out: Path, printed: str) -> None:
    assert _config(out)["game"] == "pgx/tic_tac_toe"
    assert "3 iterations in" in printed and "iteration    3  policy loss" in printed


CHECKS = {
    "custom_game": _custom_game,
    "custom_network": _custom_network,
    "custom_search": _custom_search,
    "experiment": _experiment,
    "pgx_game": _pgx_game,
}


@pytest.mark.parametrize("name", SCRIPTS)
def test_an_example_runs_at_toy_size_and_writes_under_its_out(name, tmp_path, toy_environment):
    if name == "pgx_game":
        pytest.importorskip("pgx")
    out = tmp_path / "out" / name
    command = [sys.executable, str(EXAMPLES / f"{name}.py"), "--smoke", "--out", str(out)]
    ran = subprocess.run(
        command,
        cwd=tmp_path,  # anything written beside --out would land here
        env={**os.environ, **toy_environment},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert ran.returncode == 0, ran.stderr[-4000:]
    CHECKS[name](out, ran.stdout)
    assert [path.name for path in tmp_path.iterdir()] == ["out"]


def test_the_tutorial_is_stored_without_outputs():
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(notebook)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert code and all(cell.outputs == [] for cell in code)
    assert all(cell.execution_count is None for cell in code)


def test_the_tutorial_runs_at_toy_size(tmp_path, monkeypatch, toy_environment):
    nbclient = pytest.importorskip("nbclient")
    for variable, value in {**toy_environment, "JAXZERO_TUTORIAL_SMOKE": "1"}.items():
        monkeypatch.setenv(variable, value)  # the kernel inherits them
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        notebook,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()  # CellExecutionError, with the cell and its traceback, on any error
    outputs = [output for cell in notebook.cells for output in cell.get("outputs", [])]
    figures = [output for output in outputs if "image/png" in output.get("data", {})]
    assert len(figures) == 3  # the search's root, the curve, the agent's root
    pictures = [output["data"]["image/svg+xml"] for output in outputs
                if "image/svg+xml" in output.get("data", {})]  # fmt: skip
    assert len(pictures) == 2  # the board, the agent's root on the board
    for picture in pictures:
        envs.pictures.check_svg(picture if isinstance(picture, str) else "".join(picture))
    text = "".join(output.get("text", "") for output in outputs)
    assert "toy sizes" in text and "chosen move:" in text
    assert (tmp_path / "runs" / "tutorial" / "metrics.jsonl").exists()


def test_an_example_refuses_a_run_in_its_way_and_an_unwritable_out_in_one_line(tmp_path):
    # it always trained with force=True (deleting the run in --out), and traced back
    from jaxzero.run.life.driver import prepare_run_dir

    run = tmp_path / "run"
    prepare_run_dir(run, jaxzero.get_preset("tic_tac_toe"), resume=False, force=False)
    (tmp_path / "file").write_text("not a folder\n")
    script = str(EXAMPLES / "custom_game.py")
    for out, message in [(run, "already holds a run"), (tmp_path / "file" / "run", "error: ")]:
        command = [sys.executable, script, "--smoke", "--out", str(out)]
        ran = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert ran.returncode == 2, ran.stderr[-2000:]
        assert "Traceback" not in ran.stderr and message in ran.stderr.splitlines()[-1]
    assert (run / "config.json").exists()  # the run it was asked not to replace, kept
