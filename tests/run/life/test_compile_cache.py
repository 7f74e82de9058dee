"""JAX's persistent compilation cache: on by default for the command line, moved or
turned off by an option or an environment variable."""

import jax
import pytest
from typer.testing import CliRunner

from jaxzero.cli import app
from jaxzero.run.life import compile_cache


@pytest.fixture
def restore_cache_dir():
    before = jax.config.jax_compilation_cache_dir
    yield
    jax.config.update("jax_compilation_cache_dir", before)


def test_a_folder_or_off(tmp_path, monkeypatch, restore_cache_dir):
    folder = tmp_path / "xla"
    assert compile_cache.enable_compile_cache(str(folder)) == folder
    assert folder.is_dir() and jax.config.jax_compilation_cache_dir == str(folder)
    jax.config.update("jax_compilation_cache_dir", "unchanged")
    for off in ("off", "OFF", "0"):
        assert compile_cache.enable_compile_cache(off) is None
    monkeypatch.setenv(compile_cache.ENV_VAR, "off")
    assert compile_cache.enable_compile_cache() is None
    assert jax.config.jax_compilation_cache_dir == "unchanged"  # left as the caller made it
    monkeypatch.setenv(compile_cache.ENV_VAR, str(tmp_path / "moved"))
    assert compile_cache.enable_compile_cache() == tmp_path / "moved"


def test_the_default_is_per_user(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert compile_cache.default_folder() == tmp_path / "jaxzero" / "xla"


def test_the_command_line_option(tmp_path, restore_cache_dir):
    folder = tmp_path / "cli_cache"
    result = CliRunner().invoke(app, ["--compile-cache", str(folder), "train", "--seconds", "0"])
    assert result.exit_code == 2 and "--seconds must be > 0" in result.output
    assert jax.config.jax_compilation_cache_dir == str(folder) and folder.is_dir()


def test_a_file_named_as_the_cache_is_refused_not_ignored(tmp_path, restore_cache_dir):
    # the cache was silently off: every run compiled again and nothing said why
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine\n")
    result = CliRunner().invoke(app, ["--compile-cache", str(a_file), "train", "--seconds", "0"])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert (
        lines[-1].startswith("error: the compile cache") and "name a folder, or 'off'" in lines[-1]
    )
    assert a_file.read_text() == "mine\n"


def test_an_unreadable_cache_entry_is_one_line(tmp_path, monkeypatch, capsys, restore_cache_dir):
    import warnings

    monkeypatch.setattr(warnings, "showwarning", warnings.showwarning)  # restored after
    folder = compile_cache.enable_compile_cache(str(tmp_path / "xla"))
    for _ in range(3):  # jax._src.compiler's warning, raw: a file path, a source line
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.warn(
                "Error reading persistent compilation cache entry for 'jit_step': "
                "XlaRuntimeError: INVALID_ARGUMENT: corrupt",
                stacklevel=1,
            )
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        f"warning: the compile cache in {folder} has an entry jaxzero cannot read "
        f"(XlaRuntimeError); it compiles instead (to clear the cache: rm -r {folder})"
    ]


def test_python_turns_it_on_with_one_public_call(tmp_path, restore_cache_dir):
    """`import jaxzero` leaves JAX's settings alone; a script opts in by name."""
    import jaxzero

    folder = tmp_path / "from_python"
    assert jaxzero.enable_compile_cache(str(folder)) == folder
    assert jax.config.jax_compilation_cache_dir == str(folder)
