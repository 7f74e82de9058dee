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
from pathlib import Path

import jax

ENV_VAR = "JAXZERO_COMPILE_CACHE"
OFF = frozenset({"off", "0", "false", "no", "none"})


def default_folder() -> Path:
    """``$XDG_CACHE_HOME/jaxzero/xla``, or ``~/.cache/jaxzero/xla``."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "jaxzero" / "xla"


def enable_compile_cache(setting: str | None = None) -> Path | None:
    """Turn JAX's persistent compilation cache on, in the folder ``setting`` names.

    Args:
        setting: a folder, ``"off"``, or None for ``$JAXZERO_COMPILE_CACHE`` (then the
            per-user default folder).

    Returns:
        The cache folder, or None when the cache is off or its folder cannot be made
        (compiling then works as without a cache).
    """
    if setting is None:
        setting = os.environ.get(ENV_VAR, "")
    if setting.strip().lower() in OFF:
        return None
    folder = Path(setting).expanduser() if setting.strip() else default_folder()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    jax.config.update("jax_compilation_cache_dir", str(folder))
    # every compile of a training program is worth keeping; tiny ones are not
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)
    return folder
