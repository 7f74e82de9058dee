"""What a config makes jaxzero import, and when a config read from a file may.

A run's or an agent's ``config.json`` records a user's game, network and search functions
by import path (``"mygames:ConnectThree"``, ``network.kind="mynets:ResMLP"``,
``search.interior_selection="myrules:ucb1"``), so that a later process can rebuild them.
Importing a module runs it, and a folder is data that anyone can write. So a config that
comes from a file names code only through what installed code registered (the built-in
names, ``register_*``, entry points); a recorded import path is imported only when the
user allows it on this call, in one of three ways:

* ``trust_code=True`` (``--trust-code`` on the command line): "I trust whoever wrote it";
* naming the same path on this call (``jaxzero play mygames:ConnectThree --checkpoint
  RUN``, ``--set search.kind=myrules:factory``), as typing it would import it anyway;
* passing the object itself (``load_agent(RUN, env=..., network=..., search=...)``),
  which leaves the recorded path unread.

A config built in Python or from the command line is the user's own and imports freely.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from envs.registry import imports_code as game_imports_code
from jaxzero.core import networks, policies
from jaxzero.core.config import Config

# True (trust whoever wrote the file), or the import paths the user named on this call.
TrustCode = bool | Collection[str]
# The argument of load_agent / make_trainer that stands in for each recorded setting.
_ARGUMENT = {"game": "env", "network.kind": "network"}


class UntrustedCode(ValueError):
    """A config read from a file names code that the user did not allow on this call."""


def imported_code(config: Config) -> dict[str, str]:
    """``{setting: "module:attribute"}`` of every setting of ``config`` whose object
    jaxzero would build by importing a module (and so running it)."""
    found = {"game": config.game} if game_imports_code(config.game) else {}
    if networks.imports_code(config.network.kind):
        found["network.kind"] = config.network.kind
    return found | policies.imports_code(config.search)


def check_trusted(
    config: Config,
    source: str | Path,
    *,
    trust_code: TrustCode = False,
    given: Collection[str] = (),
) -> None:
    """Refuse a config read from ``source`` that names code the user did not allow.

    Args:
        config: the config as read (with the settings of this call applied).
        source: the file it was read from, named in the error.
        trust_code: True: the user trusts whoever wrote ``source``, everything is
            allowed; else the import paths the user named on this call (a game typed on
            the command line, ``--set`` values), the only ones allowed.
        given: the objects the caller passes instead of rebuilding them: "env",
            "network", "search" (their recorded paths are never imported).

    Raises:
        UntrustedCode: one line naming each setting, and both ways to allow it.
    """
    if trust_code is True:
        return
    allowed = set(trust_code or ())
    found = {
        key: path
        for key, path in imported_code(config).items()
        if path not in allowed and _ARGUMENT.get(key, "search") not in given
    }
    if not found:
        return
    settings = ", ".join(f"{key}={path}" for key, path in found.items())
    arguments = ", ".join(dict.fromkeys(f"{_ARGUMENT.get(key, 'search')}=..." for key in found))
    raise UntrustedCode(
        f"{source} names code to import ({settings}), and jaxzero never runs what a file "
        "names unless told to: if you trust whoever wrote it, add --trust-code (in Python "
        f"trust_code=True), or pass the objects themselves (load_agent(..., {arguments}))"
    )
