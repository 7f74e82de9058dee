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
    checksums.sha256  the sha256 of agent.json, config.json and params.msgpack (``sha256sum``
                      format), as checkpoints carry; not of the card, which is completed by
                      hand after export (its strength)

Every load checks what it reads: the checksums (when the folder has them: one exported
before them still loads), each parameter's dtype (floating, as the network's), shape and
finiteness, and agent.json's fields by type; a failure is one CheckpointError line naming
the file and the field or parameter.

``jaxzero export RUN --out DIR`` writes one; ``jaxzero.load_agent(DIR)`` and every command
that takes a run directory read it. The shipped agents are such folders under
``jaxzero/agents/GAME/``, so ``jaxzero play connect_four`` works on a fresh install.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import jax
import numpy as np
from flax import serialization

from jaxzero.core.config import Config, NetworkConfig, config_to_dict, flatten, unflatten
from jaxzero.run.folder.files import os_reason, sha256
from jaxzero.run.folder.layout import AGENT_FILE, CARD_FILE, CHECKSUMS, CONFIG_FILE, PARAMS_FILE
from jaxzero.run.folder.nolink import write_atomic, write_json
from jaxzero.run.folder.reads import (
    MB,
    SMALL,
    FileRefused,
    read_bytes,
    read_json,
    read_text,
    sha256_inside,
)
from jaxzero.run.life.checkpoint import CheckpointError

BUILT_IN_NETWORKS = ("auto", "resnet", "mlp")  # described by their shape settings
CHECKSUMMED = (AGENT_FILE, CONFIG_FILE, PARAMS_FILE)  # what plays; the card is edited by hand
FORMAT = 1
_LISTING_LINE = re.compile(r"([0-9a-f]{64}) [ *](.+)")  # sha256sum's text and binary modes


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
    """``agent.json`` of an agent folder, checked to be a format this jaxzero reads, with
    ``game`` a string and ``iteration`` an integer >= 0; agent.json and config.json are
    checked against the folder's checksums first."""
    path = folder / AGENT_FILE
    check_checksums(folder, {AGENT_FILE: SMALL, CONFIG_FILE: SMALL})
    try:
        facts = read_json(path, folder)
    except (OSError, ValueError) as error:
        raise CheckpointError(f"{path} is unreadable ({error}); export the agent again") from None
    if not isinstance(facts, dict):
        raise CheckpointError(f"{path} holds no JSON object; export the agent again")
    if "format" in facts and not _is_int(facts["format"]):
        raise _bad_field(path, "format", facts, f"the integer {FORMAT}")
    if facts.get("format") != FORMAT:  # first: another format may hold other fields
        raise CheckpointError(
            f"{path} has format {facts.get('format')!r}, this jaxzero reads format {FORMAT}: "
            "upgrade jaxzero or export the agent again"
        )
    missing = [key for key in ("game", "iteration") if key not in facts]
    if missing:
        raise CheckpointError(f"{path} lacks {', '.join(missing)}; export the agent again")
    if not isinstance(facts["game"], str) or not facts["game"]:
        raise _bad_field(path, "game", facts, "a string")
    if not _is_int(facts["iteration"]) or facts["iteration"] < 0:
        raise _bad_field(path, "iteration", facts, "an integer >= 0")
    return facts


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)  # JSON true is no number


def _bad_field(path: Path, field: str, facts: dict[str, Any], expected: str) -> CheckpointError:
    found = json.dumps(facts[field])
    found = found if len(found) <= 40 else found[:37] + "..."
    return CheckpointError(
        f'{path}: field "{field}" is {found}, expected {expected}; export the agent again'
    )


def read_params(folder: Path, template: Any) -> Any:
    """The network variables of an agent folder, restored into ``template``'s structure
    (the network's ``jax.ShapeDtypeStruct`` tree). CheckpointError, naming the file and
    the parameter, when the file does not match its checksum or is unreadable, or a
    parameter is missing, unknown, not an array, of another shape, not floating where the
    network's is (another dtype where it is not), or not finite in the network's dtype."""
    path = folder / PARAMS_FILE
    check_checksums(folder, {PARAMS_FILE: _params_cap(template)})
    try:
        stored = serialization.msgpack_restore(read_bytes(path, folder, _params_cap(template)))
    except (OSError, ValueError, TypeError) as error:
        raise CheckpointError(f"{path} is unreadable ({error}); export the agent again") from None
    # every leaf by its path; an empty dict is a leaf, whatever the network has there
    wanted = flatten(serialization.to_state_dict(template), keep_empty=True)
    found = flatten(stored, keep_empty=True) if isinstance(stored, dict) else {}
    misfit = _misfit(wanted, found)
    if misfit:
        raise CheckpointError(
            f"{path} does not fit the network of {folder / CONFIG_FILE} ({misfit}); the two "
            "files come from different agents: export the agent again"
        )
    checked = {key: _checked_leaf(path, key, found[key], like) for key, like in wanted.items()}
    tree = unflatten(checked)
    return jax.tree.map(jax.numpy.asarray, serialization.from_state_dict(template, tree))


def _params_cap(template: Any) -> int:
    """The most bytes params.msgpack may hold for ``template``'s network: each number in
    float64 at most (an export writes float32) and a megabyte for msgpack's names and headers."""
    numbers = sum(int(np.prod(leaf.shape)) for leaf in jax.tree.leaves(template))
    return 8 * numbers + MB


def _name(key: tuple[str, ...]) -> str:
    return ".".join(key)  # params.Dense_0.kernel, as checkpoint messages name them


def _misfit(wanted: dict[tuple[str, ...], Any], found: dict[tuple[str, ...], Any]) -> str:
    """'' when ``found`` has ``wanted``'s parameters with their shapes, else the first
    difference."""
    missing = sorted(wanted.keys() - found.keys())
    if missing:
        return f"parameter {_name(missing[0])} missing"
    unknown = sorted(found.keys() - wanted.keys())
    if unknown:
        return f"unknown parameter {_name(unknown[0])}"
    for key, like in wanted.items():
        shape = getattr(found[key], "shape", None)
        if shape is not None and tuple(shape) != tuple(like.shape):
            return (
                f"parameter {_name(key)}: shape {list(shape)} in the file, {list(like.shape)} here"
            )
    return ""


def _checked_leaf(path: Path, key: tuple[str, ...], leaf: Any, like: Any) -> np.ndarray:
    """``leaf`` as an array of ``like``'s dtype, checked to be one of its kind, finite."""
    name = _name(key)
    if not isinstance(leaf, np.ndarray | np.generic):
        raise CheckpointError(
            f"{path}: parameter {name} is a {type(leaf).__name__}, not an array of numbers; "
            "export the agent again"
        )
    floating = jax.numpy.issubdtype(like.dtype, jax.numpy.floating)
    same_kind = jax.numpy.issubdtype(leaf.dtype, jax.numpy.floating) == floating
    if not same_kind or not floating and leaf.dtype != like.dtype:
        raise CheckpointError(
            f"{path}: parameter {name} is {leaf.dtype}, the network's is {like.dtype}; "
            "export the agent again"
        )
    with np.errstate(all="ignore"):  # a value beyond float32 becomes inf: refused below
        value = np.asarray(leaf, like.dtype)
    if floating and not np.isfinite(value).all():
        raise CheckpointError(
            f"{path}: parameter {name} holds NaN or infinite values ({like.dtype}); the file "
            "is damaged: export the agent again"
        )
    return value


def write_checksums(folder: Path) -> None:
    """``folder/checksums.sha256`` of an agent folder's :data:`CHECKSUMMED` files, in
    ``sha256sum`` format (``sha256sum -c checksums.sha256`` checks it)."""
    lines = "".join(f"{sha256(folder / name)}  {name}\n" for name in CHECKSUMMED)
    write_atomic(folder, folder / CHECKSUMS, lines)


def check_checksums(folder: Path, names: Mapping[str, int] | None = None) -> None:
    """CheckpointError, naming the file, when one of ``names`` (each with the most bytes
    it may hold, checked before it is hashed; default: every :data:`CHECKSUMMED` file, the
    parameters up to a gigabyte) does not match the folder's checksum listing or the
    listing lacks it; nothing when the folder has no listing (an agent exported before
    checksums)."""
    if names is None:
        names = {AGENT_FILE: SMALL, CONFIG_FILE: SMALL, PARAMS_FILE: 1 << 30}
    listing = folder / CHECKSUMS
    if not listing.exists():
        return
    try:
        lines = read_text(listing, folder).splitlines()
    except FileRefused as error:
        raise CheckpointError(f"{error}; export the agent again") from None
    except (OSError, ValueError) as error:
        raise CheckpointError(
            f"{listing} is unreadable ({os_reason(error)}); export the agent again"
        ) from None
    matches = [_LISTING_LINE.fullmatch(line) for line in lines if line.strip()]
    if not all(matches):
        raise CheckpointError(f"{listing} is not a sha256sum listing; export the agent again")
    expected = {match.group(2): match.group(1) for match in matches if match}
    for name in names:
        if name not in expected:
            raise CheckpointError(f"{listing} lists no checksum for {name}; export the agent again")
        try:
            digest = sha256_inside(folder / name, folder, names[name])
        except FileRefused as error:
            raise CheckpointError(f"{error}; export the agent again") from None
        except OSError as error:
            raise CheckpointError(
                f"{folder / name} is unreadable ({os_reason(error)}); export the agent again"
            ) from None
        if digest != expected[name]:
            raise CheckpointError(
                f"{folder / name} does not match its checksum in {listing}: the agent folder "
                "was damaged or edited after export; export the agent again"
            )


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
        partial.mkdir(parents=True)  # FileExistsError: someone's, never removed below
    except OSError as error:
        raise CheckpointError(f"cannot write the agent into {folder}: {os_reason(error)}") from None
    try:
        variables = jax.tree.map(lambda x: np.asarray(x, np.float32), params)
        params = serialization.msgpack_serialize(variables)
        write_atomic(partial, partial / PARAMS_FILE, params)  # a folder just made: our own
        write_json(partial, partial / CONFIG_FILE, config_to_dict(config))
        write_json(partial, partial / AGENT_FILE, {"format": FORMAT, **facts})
        write_atomic(partial, partial / CARD_FILE, card)
        write_checksums(partial)
        if folder.exists():
            folder.rmdir()
        os.replace(partial, folder)
    except OSError as error:
        shutil.rmtree(partial, ignore_errors=True)
        raise CheckpointError(f"cannot write the agent into {folder}: {os_reason(error)}") from None
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise


def network_description(net: NetworkConfig, built: str | None) -> str:
    """The network a run recorded, in words: a built-in one by its shape; any other (a
    registered name, a user's ``module:Class``) by its kind and the arguments it was given,
    since the built-in shape settings do not describe it."""
    if net.kind not in BUILT_IN_NETWORKS:
        given = ", ".join(f"{name}={value!r}" for name, value in net.args)
        return f"`{net.kind}`" + (f" ({given})" if given else "")
    if built == "ResNet":
        return f"ResNet of {net.num_blocks} blocks x {net.channels} channels"
    return f"MLP of {net.num_layers} layers x {net.hidden_size}"


def planning(config: Config) -> str:
    """What the agent's search plans with, in words (a model card's line)."""
    if config.model.learned:
        return (
            "Plans with: a learned model (MuZero: representation, dynamics and prediction, "
            f"each on the network above; trained on unrolls of {config.model.unroll_steps} "
            "moves); the rules only mask the root's moves."
        )
    return "Plans with: the game's rules (AlphaZero: the search steps the game itself)."


def model_card(config: Config, facts: Mapping[str, Any]) -> str:
    """The facts an export knows, as a model card; its strength is measured afterwards."""
    net = config.network
    shape = network_description(net, facts.get("network"))
    count = lambda key: f"{facts[key]:,}" if facts.get(key) is not None else "?"
    seconds = facts.get("seconds")
    trained = "an unknown time" if seconds is None else f"{seconds / 60:.0f} minutes"
    if seconds is not None and seconds < 120:
        trained = f"{seconds} seconds"
    return (
        f"# jaxzero agent: {config.game}\n\n"
        f"- Network: {shape}, {count('parameters')} parameters, {net.value_head} value head.\n"
        f"- {planning(config)}\n"
        f"- Training: iteration {facts.get('iteration')}, {count('positions')} self-play "
        f"positions, {trained} (from `{facts.get('source')}`).\n"
        f"- Plays with: {config.search.kind} search, {config.evaluation.simulations} "
        "simulations (the run's evaluation settings).\n\n"
        "## Strength\n\nNot measured at export. Measure it, for example, with\n\n"
        "    jaxzero eval AGENT_FOLDER --opponents one_ply --games 100\n"
    )
