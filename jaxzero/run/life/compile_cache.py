"""JAX's persistent compilation cache, for the command line and the experiment scripts.

Compiling the training iteration takes 10-30 s on a CPU, often longer than a short run
trains; an identical program (same config, same shapes, same jax) compiled by an earlier
process is read back from disk instead. The cache is JAX's own
(``jax_compilation_cache_dir``), in a per-user folder:

* ``$JAXZERO_COMPILE_CACHE`` when set: a folder, or ``off`` to turn the cache off;
* else ``$XDG_CACHE_HOME/jaxzero/xla`` (``~/.cache/jaxzero/xla``).

``jaxzero --compile-cache DIR|off COMMAND`` overrides both. The library never turns it on
by itself: ``import jaxzero`` leaves JAX's settings as the caller made them.
"""

from __future__ import annotations

import os
import re
import sys
import warnings
from pathlib import Path

import jax

ENV_VAR = "JAXZERO_COMPILE_CACHE"
OFF = frozenset({"off", "0", "false", "no", "none"})


def default_folder() -> Path:
    """``$XDG_CACHE_HOME/jaxzero/xla``, or ``~/.cache/jaxzero/xla``."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "jaxzero" / "xla"


MIN_SECONDS_VAR = "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"  # JAX reads it on import


def enable_compile_cache(setting: str | None = None) -> Path | None:
    """Turn JAX's persistent compilation cache on, in the folder ``setting`` names.

    Args:
        setting: a folder, ``"off"``, or None for ``$JAXZERO_COMPILE_CACHE`` (then the
            per-user default folder).

    Returns:
        The cache folder, or None when the cache is off or the default folder cannot be
        made (compiling then works as without a cache).

    Raises:
        ValueError: ``setting`` names a folder that cannot be made (a file, say).
    """
    if setting is None:
        setting = os.environ.get(ENV_VAR, "")
    if setting.strip().lower() in OFF:
        return None
    folder = Path(setting).expanduser() if setting.strip() else default_folder()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        if not setting.strip():  # the default folder: compiling works as without a cache
            return None
        raise ValueError(  # one the user named: silently off would be a surprise
            f"the compile cache {setting!r} is not a folder jaxzero can use "
            f"({error.strerror or error}): name a folder, or 'off'"
        ) from None
    jax.config.update("jax_compilation_cache_dir", str(folder))
    _warn_in_one_line(folder)
    # every compile of a training program is worth keeping; tiny ones are not, unless
    # JAX's own variable says otherwise (a test suite whose processes share tiny ones)
    if MIN_SECONDS_VAR not in os.environ:
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)
    return folder


_CACHE_ERROR = re.compile(
    r"Error (reading|writing) persistent compilation cache entry for '[^']*': (\w+)"
)


def _warn_in_one_line(folder: Path) -> None:
    """JAX's warning about a cache entry it cannot read or write (a corrupt file, a full
    disk) as one line, once, saying what it means and how to clear it; other warnings
    as before."""
    shown = warnings.showwarning
    said: set[str] = set()

    def show(message, category, filename, lineno, file=None, line=None):
        found = _CACHE_ERROR.match(str(message))
        if found is None:
            return shown(message, category, filename, lineno, file, line)
        how, kind = found.groups()
        if how in said:
            return None
        said.add(how)
        print(
            f"warning: the compile cache in {folder} has an entry jaxzero cannot {how[:-3]} "
            f"({kind}); it compiles instead (to clear the cache: rm -r {folder})",
            file=sys.stderr,
        )
        return None

    if getattr(shown, "__name__", "") != "show":  # once a process
        warnings.showwarning = show
