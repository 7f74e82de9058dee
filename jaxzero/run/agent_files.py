"""A trained agent as a small folder of its own, and the agents shipped inside the package.

    write_agent(Path("my_agent"), config, params, facts, card)   # all of it, or nothing
    find_agent("connect_four")     # a path that exists, else the shipped agent of that game
    shipped_games()                # ["connect_four", "go_6x6", "star_duel_short", ...]

A run directory holds everything needed to continue training (optimiser state, replay
buffer, games in progress: tens of MB). An agent folder holds only what plays:

    config.json       the run's config (network and search settings)
    params.msgpack    the playing network's variables (flax.serialization, float32)
    agent.json        {"format": 1, "game", "iteration", "positions", "seconds",
                       "parameters", "network", "source"}
    MODEL_CARD.md     what it is, how it was trained, how strong it is and how that was measured

``jaxzero export RUN --out DIR`` writes one; ``jaxzero.load_agent(DIR)`` and every command
that takes a run directory read it. The shipped agents are such folders under
``jaxzero/agents/GAME/``, so ``jaxzero play connect_four`` works on a fresh install.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import jax
import numpy as np
from flax import serialization

from jaxzero.core.config import Config, config_to_dict
from jaxzero.run.checkpoint import CheckpointError
from jaxzero.run.config_file import CONFIG_FILE
from jaxzero.run.files import os_reason, write_atomic

AGENT_FILE = "agent.json"
PARAMS_FILE = "params.msgpack"
CARD_FILE = "MODEL_CARD.md"
FORMAT = 1


def shipped_root() -> Path:
    """The folder of the agents that ship inside the package."""
    return Path(str(resources.files("jaxzero") / "agents"))


def shipped_games() -> list[str]:
    """The games with a shipped agent, sorted."""
    root = shipped_root()
    if not root.is_dir():
        return []
    found = [p for p in root.iterdir() if is_agent_folder(p)]
    return sorted(p.name for p in found if not p.name.startswith("."))  # not a partial export


def shipped_agent(game: str) -> Path | None:
    """The shipped agent folder of ``game`` (an env id, e.g. "connect_four"), or None."""
    folder = shipped_root() / game
    return folder if game in shipped_games() else None


def is_agent_folder(path: Path) -> bool:
    return (path / AGENT_FILE).is_file()


def find_agent(path: str | Path) -> Path:
    """``path`` itself when it exists; else, when it is a bare name (no folder in it) of a
    game with a shipped agent, that agent's folder; CheckpointError otherwise."""
    text = str(path)
    path = Path(path)
    if path.exists():
        return path
    shipped = None if os.sep in text else shipped_agent(text)
    if shipped is not None:
        return shipped
    names = ", ".join(shipped_games()) or "none in this install"
    raise CheckpointError(
        f"{path} does not exist; give a run directory (or RUN/checkpoints/N), an agent "
        f"folder written by `jaxzero export`, or a game with a shipped agent ({names})"
    )


def describe(path: Path) -> str:
    """Where the agent of ``path`` (as :func:`find_agent` found it) comes from, for a
    user: "the shipped GAME agent (see its card)", else the path."""
    if path.resolve().parent == shipped_root().resolve():
        return f"the shipped {path.name} agent (model card: {path / CARD_FILE})"
    return str(path)


def read_facts(folder: Path) -> dict[str, Any]:
    """``agent.json`` of an agent folder, checked to be a format this jaxzero reads."""
    path = folder / AGENT_FILE
    try:
        facts = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise CheckpointError(f"{path} is unreadable ({error}); export the agent again") from None
    if not isinstance(facts, dict) or facts.get("format") != FORMAT:
        found = facts.get("format") if isinstance(facts, dict) else None
        raise CheckpointError(
            f"{path} has format {found!r}, this jaxzero reads format {FORMAT}: upgrade "
            "jaxzero or export the agent again"
        )
    missing = [key for key in ("game", "iteration") if key not in facts]
    if missing:
        raise CheckpointError(f"{path} lacks {', '.join(missing)}; export the agent again")
    return facts


def read_params(folder: Path, template: Any) -> Any:
    """The network variables of an agent folder, restored into ``template``'s structure;
    CheckpointError when the file is unreadable or does not fit the config's network."""
    path = folder / PARAMS_FILE
    try:
        stored = serialization.msgpack_restore(path.read_bytes())
    except (OSError, ValueError, TypeError) as error:
        raise CheckpointError(f"{path} is unreadable ({error}); export the agent again") from None
    if _shapes(stored) != _shapes(serialization.to_state_dict(template)):
        raise CheckpointError(
            f"{path} does not fit the network of {folder / CONFIG_FILE} (different layers "
            "or shapes); the two files come from different agents: export the agent again"
        )
    return jax.tree.map(jax.numpy.asarray, serialization.from_state_dict(template, stored))


def _shapes(tree: Any) -> dict[str, tuple[int, ...]]:
    """Each leaf's path and shape: what a network's variables must match."""
    leaves = jax.tree_util.tree_flatten_with_path(tree)[0]
    return {jax.tree_util.keystr(path): tuple(leaf.shape) for path, leaf in leaves}


def write_agent(
    folder: Path, config: Config, params: Any, facts: Mapping[str, Any], card: str
) -> None:
    """Write an agent folder at ``folder``, which must not exist yet (or be empty): all of
    it or none (written beside it, then renamed). FileExistsError if it holds anything."""
    folder = folder.absolute()  # (`--out .` has no name to put a partial folder beside)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise FileExistsError(f"{folder} already exists")
    partial = folder.with_name(f".{folder.name}.partial-{os.getpid()}")
    try:
        partial.mkdir(parents=True)
        variables = jax.tree.map(lambda x: np.asarray(x, np.float32), params)
        write_atomic(partial / PARAMS_FILE, serialization.msgpack_serialize(variables))
        write_atomic(partial / CONFIG_FILE, json.dumps(config_to_dict(config), indent=2) + "\n")
        stored = {"format": FORMAT, **facts}
        write_atomic(partial / AGENT_FILE, json.dumps(stored, indent=2) + "\n")
        write_atomic(partial / CARD_FILE, card)
        if folder.exists():
            folder.rmdir()
        os.replace(partial, folder)
    except OSError as error:
        shutil.rmtree(partial, ignore_errors=True)
        raise CheckpointError(f"cannot write the agent into {folder}: {os_reason(error)}") from None
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise


def model_card(config: Config, facts: Mapping[str, Any]) -> str:
    """The facts an export knows, as a model card; its strength is measured afterwards."""
    net = config.network
    if facts.get("network") == "ResNet":
        shape = f"ResNet of {net.num_blocks} blocks x {net.channels} channels"
    else:
        shape = f"MLP of {net.num_layers} layers x {net.hidden_size}"
    count = lambda key: f"{facts[key]:,}" if facts.get(key) is not None else "?"
    seconds = facts.get("seconds")
    trained = "an unknown time" if seconds is None else f"{seconds / 60:.0f} minutes"
    if seconds is not None and seconds < 120:
        trained = f"{seconds} seconds"
    return (
        f"# jaxzero agent: {config.game}\n\n"
        f"- Network: {shape}, {count('parameters')} parameters, {net.value_head} value head.\n"
        f"- Training: iteration {facts.get('iteration')}, {count('positions')} self-play "
        f"positions, {trained} (from `{facts.get('source')}`).\n"
        f"- Plays with: {config.search.kind} search, {config.evaluation.simulations} "
        "simulations (the run's evaluation settings).\n\n"
        "## Strength\n\nNot measured at export. Measure it, for example, with\n\n"
        "    jaxzero eval AGENT_FOLDER --opponents one_ply --games 100\n"
    )
