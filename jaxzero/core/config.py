"""Every knob of a training run, as frozen dataclasses, with one pinned preset per game.

A :class:`Config` is passed in, never read from globals; it is hashable, so a compiled
function may close over it. Presets are named, pinned Configs (like a named policy
version): change a preset and you change what ``jaxzero train GAME`` means.

    config = get_preset("tic_tac_toe")
    config = apply_overrides(config, {"search.num_simulations": "16", "seed": 3})
    config_from_dict(config_to_dict(config)) == config
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any


@dataclasses.dataclass(frozen=True)
class NetworkConfig:
    """The policy/value network (see ``jaxzero.core.networks``).

    ``kind`` "auto" picks a ResNet for board observations (rank 3, H x W x C) and an MLP
    for anything else; "resnet" and "mlp" force one ("mlp" flattens a board).
    """

    kind: str = "auto"  # "auto" | "resnet" | "mlp"
    num_blocks: int = 2  # ResNet: residual blocks after the stem
    channels: int = 32  # ResNet: channels of every conv
    value_channels: int = 1  # ResNet value head: channels of its 1x1 conv
    value_hidden: int = 0  # ResNet value head: units of its hidden layer (0: channels)
    hidden_size: int = 128  # MLP: width of each hidden layer
    num_layers: int = 2  # MLP: hidden layers


@dataclasses.dataclass(frozen=True)
class SearchConfig:
    """mctx search. ``kind`` "puct" is AlphaZero's (muzero_policy, Dirichlet root noise);
    "gumbel" is Gumbel MuZero (gumbel_muzero_policy, sequential halving, completed Q)."""

    kind: str = "gumbel"  # "gumbel" | "puct"
    num_simulations: int = 32  # per move in self-play
    eval_simulations: int = 64  # per move when evaluating / playing (noise off)
    dirichlet_alpha: float = 0.3  # PUCT root noise concentration
    dirichlet_fraction: float = 0.25  # PUCT root noise weight
    pb_c_init: float = 1.25  # PUCT exploration constant
    pb_c_base: float = 19652.0
    max_num_considered_actions: int = 16  # Gumbel top-k at the root
    gumbel_scale: float = 1.0  # Gumbel root noise scale in self-play (0 when evaluating)
    # Games with hidden information (env.resample_hidden): search from a redealt state the
    # mover cannot tell apart from the true one, never the true state; False peeks (study).
    determinize: bool = True
    # Evaluation searches (arena, evaluation, play, GTP, eval) average the network over
    # the game's symmetries (networks.symmetry_averaged): G network passes per node, a
    # steadier prior and value. Self-play always uses one pass.
    average_symmetries: bool = False


@dataclasses.dataclass(frozen=True)
class SelfPlayConfig:
    """Batched self-play: ``batch_size`` games stepped together, ``moves_per_iteration``
    moves each per iteration. For the first ``temperature_moves`` plies of a game the move
    is sampled with probability proportional to N(a)^(1/temperature); after that it is the
    search's greedy choice. The first ``opening_plies`` plies are instead uniformly random
    legal moves (the search still runs and its policy is still the target): varied
    openings, so the network also learns positions its own play would never reach.
    ``discount`` is the value-target discount γ (1 = AlphaZero); ``root_value_weight``
    w mixes the search's root value q into it: target = (1 - w) · γ^k · z + w · q."""

    batch_size: int = 256  # B
    moves_per_iteration: int = 16  # T
    temperature_moves: int = 0
    opening_plies: int = 0
    temperature: float = 1.0
    discount: float = 1.0
    root_value_weight: float = 0.0


@dataclasses.dataclass(frozen=True)
class ReplayConfig:
    """Device ring buffer of finished-game positions, sampled uniformly."""

    capacity: int = 100_000  # positions
    min_size: int = 1_000  # no gradient step until this many positions were written
    augment: bool = True  # apply a random element of env.symmetries to each sample


@dataclasses.dataclass(frozen=True)
class OptimConfig:
    """AdamW with global-norm clipping. ``schedule``: "constant" (``learning_rate``
    throughout) or "cosine" (linear warm-up over ``warmup_steps``, then cosine decay to
    ``learning_rate * end_lr_factor`` at update ``decay_steps``, constant after)."""

    learning_rate: float = 1e-3
    schedule: str = "constant"  # "constant" | "cosine"
    warmup_steps: int = 0
    decay_steps: int = 10_000
    end_lr_factor: float = 0.1
    weight_decay: float = 1e-4
    max_grad_norm: float = 1.0
    minibatch_size: int = 256
    updates_per_iteration: int = 8  # K
    value_loss_weight: float = 1.0


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Knobs of the Python driver around the compiled iteration."""

    iterations: int = 1_000
    log_every: int = 10
    checkpoint_every: int = 100
    keep_every: int = 100  # besides the newest 3, keep checkpoints at multiples of this (0: none)
    num_devices: int = 0  # devices of the data mesh (jaxzero.core.sharding); 0 = all JAX sees


@dataclasses.dataclass(frozen=True)
class ArenaConfig:
    """The arena gate and the driver's periodic evaluation (``jaxzero.measure.gate``).

    With ``enabled``, a frozen best network makes all self-play and the learner trains
    on it; every ``every`` iterations the learner plays ``num_games`` games against the
    best (eval-strength search both sides, paired random openings of ``opening_plies``
    plies) and replaces it iff its score (wins + draws / 2) / games >= ``threshold``.
    Without it the best is the learner after every update (the plain AlphaZero loop).
    Every ``eval_every`` iterations (0 = never) the driver logs the agent's score
    against random and one-ply over ``eval_games`` games each, gate on or off.
    """

    enabled: bool = False
    every: int = 50  # iterations between arena matches
    num_games: int = 200  # even; at least this many games to promote
    threshold: float = 0.55  # promote iff the learner's score >= threshold
    opening_plies: int = 2  # uniformly random plies before the players take over
    simulations: int = 0  # search simulations per arena/evaluation move; 0 = eval_simulations
    eval_every: int = 100  # iterations between evaluations against fixed opponents; 0 = off
    eval_games: int = 100  # even; games against each fixed opponent


@dataclasses.dataclass(frozen=True)
class Config:
    game: str = "tic_tac_toe"
    network: NetworkConfig = NetworkConfig()
    search: SearchConfig = SearchConfig()
    selfplay: SelfPlayConfig = SelfPlayConfig()
    replay: ReplayConfig = ReplayConfig()
    optim: OptimConfig = OptimConfig()
    train: TrainConfig = TrainConfig()
    arena: ArenaConfig = ArenaConfig()
    seed: int = 0


_STAR_DUEL = Config(
    game="star_duel_short",
    network=NetworkConfig(kind="mlp", hidden_size=128, num_layers=2),
    search=SearchConfig(
        kind="gumbel", num_simulations=16, eval_simulations=64, max_num_considered_actions=8
    ),
    selfplay=SelfPlayConfig(batch_size=64, moves_per_iteration=16, discount=1.0),
    replay=ReplayConfig(capacity=100_000, min_size=2_048, augment=False),
    optim=OptimConfig(
        learning_rate=1e-3,
        schedule="cosine",
        warmup_steps=100,
        decay_steps=20_000,
        minibatch_size=256,
        updates_per_iteration=8,
    ),
    train=TrainConfig(iterations=3_000, log_every=10, checkpoint_every=100),
    arena=ArenaConfig(eval_every=0),
    seed=0,
)

PRESETS: dict[str, Config] = {
    # Small MLP, Gumbel with 16 simulations: perfect play in ~200-300 iterations, well under
    # a minute of training on two CPU cores (tests/test_gate_tic_tac_toe.py). The first 4
    # plies are sampled ∝ N(a) so that replay covers the odd positions the gate also asks
    # about, and the learning rate decays so the policy settles rather than oscillates.
    "tic_tac_toe": Config(
        game="tic_tac_toe",
        network=NetworkConfig(kind="mlp", hidden_size=128, num_layers=2),
        search=SearchConfig(kind="gumbel", num_simulations=16, eval_simulations=64),
        selfplay=SelfPlayConfig(batch_size=128, moves_per_iteration=9, temperature_moves=4),
        replay=ReplayConfig(capacity=20_000, min_size=512),
        optim=OptimConfig(
            learning_rate=3e-3,
            schedule="cosine",
            warmup_steps=50,
            decay_steps=4_800,
            end_lr_factor=0.05,
            minibatch_size=256,
            updates_per_iteration=8,
        ),
        train=TrainConfig(iterations=600, log_every=10, checkpoint_every=100),
        seed=0,
    ),
    # Sized for a CPU: the 2 x 32 ResNet of the self-play benchmark and Gumbel with 16
    # simulations (Gumbel keeps improving the policy at low budgets; 8 did no better in a
    # same-compute 30-minute A/B, docs/compare_search.md); the first 6 plies
    # are sampled for opening variety; scores against random and one-ply every 25
    # iterations make the learning curve. 32 updates of 256 per 4,096 positions played
    # (each position is sampled ~2x while in replay): with gradients fast inside the
    # compiled loop (networks.conv_general_dilated) they cost ~1/3 of the self-play.
    # The value head reads 8 channels into 128 units (not 1 into 32): nearly free, and in
    # the gated hour it kept the result in 89.1% of critical positions, not 86.9%.
    # Evaluation searches average the network over the board's mirror image (2 passes):
    # 90.7% for that hour's agent, 98-1 against pure MCTS.
    "connect_four": Config(
        game="connect_four",
        network=NetworkConfig(
            kind="resnet", num_blocks=2, channels=32, value_channels=8, value_hidden=128
        ),
        search=SearchConfig(
            kind="gumbel", num_simulations=16, eval_simulations=64, average_symmetries=True
        ),
        selfplay=SelfPlayConfig(batch_size=256, moves_per_iteration=16, temperature_moves=6),
        replay=ReplayConfig(capacity=200_000, min_size=4_096),
        optim=OptimConfig(
            learning_rate=2e-3,
            schedule="cosine",
            warmup_steps=100,
            decay_steps=40_000,
            minibatch_size=256,
            updates_per_iteration=32,
        ),
        arena=ArenaConfig(eval_every=25, eval_games=100),
        train=TrainConfig(iterations=5_000, log_every=5, checkpoint_every=25),
        seed=0,
    ),
    # Small-board Go: area scoring, komi 3.5 (6x6) / 7.5 (9x9), positional superko.
    # go_6x6 takes Connect Four's lessons: a value head of 8 channels into 128 units and
    # 16 updates of 256 per 2,048 positions played (each position sampled ~2x); the
    # cosine ends after ~24k updates, about 2 hours (~4.7 s an iteration) on a 2-core CPU.
    "go_6x6": Config(
        game="go_6x6",
        network=NetworkConfig(
            kind="resnet", num_blocks=3, channels=32, value_channels=8, value_hidden=128
        ),
        search=SearchConfig(kind="gumbel", num_simulations=32, eval_simulations=128),
        selfplay=SelfPlayConfig(batch_size=128, moves_per_iteration=16, temperature_moves=4),
        replay=ReplayConfig(capacity=100_000, min_size=4_096),
        optim=OptimConfig(
            learning_rate=2e-3,
            schedule="cosine",
            warmup_steps=200,
            decay_steps=24_000,
            minibatch_size=256,
            updates_per_iteration=16,
        ),
        train=TrainConfig(iterations=5_000, log_every=10, checkpoint_every=50),
        seed=0,
    ),
    "go_9x9": Config(
        game="go_9x9",
        network=NetworkConfig(kind="resnet", num_blocks=6, channels=64),
        search=SearchConfig(kind="gumbel", num_simulations=32, eval_simulations=200),
        selfplay=SelfPlayConfig(batch_size=128, moves_per_iteration=16, temperature_moves=8),
        replay=ReplayConfig(capacity=200_000, min_size=8_192),
        optim=OptimConfig(
            learning_rate=2e-3,
            schedule="cosine",
            warmup_steps=200,
            decay_steps=100_000,
            minibatch_size=256,
            updates_per_iteration=8,
        ),
        train=TrainConfig(iterations=20_000, log_every=10, checkpoint_every=100),
        seed=0,
    ),
    # Star Duel, trained on the short game (authority 10, 20-turn cap: envs id
    # "star_duel_short"), where games take ~100 actions. Hidden cards: the search is
    # determinised (search.determinize). Named like policy versions: "star_duel" is plain
    # AlphaZero (γ = 1), "star_duel_fast" discounts value targets by γ = 0.98 per action so
    # that quick wins are worth more.
    "star_duel": _STAR_DUEL,
    "star_duel_fast": dataclasses.replace(
        _STAR_DUEL, selfplay=dataclasses.replace(_STAR_DUEL.selfplay, discount=0.98)
    ),
}


def get_preset(name: str) -> Config:
    """The pinned Config named ``name``."""
    if name not in PRESETS:
        raise ValueError(f"no preset {name!r}; choose one of: {', '.join(sorted(PRESETS))}")
    return PRESETS[name]


def _field_types(cls: type) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


def _leaf_keys(cls: type, prefix: str = "") -> list[str]:
    keys = []
    for name, kind in _field_types(cls).items():
        if dataclasses.is_dataclass(kind):
            keys += _leaf_keys(kind, f"{prefix}{name}.")
        else:
            keys.append(prefix + name)
    return keys


def valid_keys() -> list[str]:
    """The dotted keys ``apply_overrides`` accepts, e.g. ``"search.num_simulations"``."""
    return _leaf_keys(Config)


def _parse(value: Any, kind: Any, key: str) -> Any:
    """Convert ``value`` (often a command-line string) to the field type ``kind``."""
    if isinstance(kind, types.UnionType):
        kind = next(k for k in typing.get_args(kind) if k is not type(None))
    if kind is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"{key}: expected a boolean, got {value!r}")
    if kind is int:
        if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
            raise ValueError(f"{key}: expected an integer, got {value!r}")
        try:
            return int(float(value)) if isinstance(value, str) and "e" in value else int(value)
        except (TypeError, ValueError):
            raise ValueError(f"{key}: expected an integer, got {value!r}") from None
    if kind is float:
        if isinstance(value, bool):
            raise ValueError(f"{key}: expected a number, got {value!r}")
        try:
            return float(value)
        except (TypeError, ValueError):
            raise ValueError(f"{key}: expected a number, got {value!r}") from None
    if kind is str:
        return str(value)
    raise TypeError(f"{key}: unsupported field type {kind!r}")


def _set(obj: Any, path: list[str], value: Any, key: str) -> Any:
    types_ = _field_types(type(obj))
    name = path[0]
    if name not in types_:
        raise ValueError(f"unknown config key {key!r}; valid keys: {', '.join(valid_keys())}")
    kind = types_[name]
    if len(path) == 1:
        if dataclasses.is_dataclass(kind):
            raise ValueError(
                f"{key!r} is a section, not a value; valid keys: {', '.join(valid_keys())}"
            )
        return dataclasses.replace(obj, **{name: _parse(value, kind, key)})
    if not dataclasses.is_dataclass(kind):
        raise ValueError(f"unknown config key {key!r}; valid keys: {', '.join(valid_keys())}")
    return dataclasses.replace(obj, **{name: _set(getattr(obj, name), path[1:], value, key)})


def parse_key_values(
    items: list[str] | tuple[str, ...], what: str = "override", example: str = "search.kind=puct"
) -> dict[str, str]:
    """``["search.kind=puct", ...]`` -> ``{"search.kind": "puct"}``, values still text
    (:func:`apply_overrides` types them). ValueError naming ``what`` for an item with no
    ``=`` or no key."""
    parsed = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"{what} {item!r} is not KEY=VALUE (e.g. {example})")
        parsed[key.strip()] = value.strip()
    return parsed


def apply_overrides(config: Config, overrides: dict[str, Any]) -> Config:
    """A copy of ``config`` with dotted keys replaced, values parsed to the field's type.

    ``apply_overrides(c, {"search.num_simulations": "16", "search.kind": "puct"})``.
    Unknown keys raise ValueError naming the valid keys.
    """
    for key, value in overrides.items():
        config = _set(config, key.split("."), value, key)
    return config


def config_to_dict(config: Config) -> dict[str, Any]:
    """A JSON-ready nested dict of ``config``."""
    return dataclasses.asdict(config)


def _from_dict(cls: type, data: dict[str, Any], prefix: str) -> Any:
    if not isinstance(data, dict):
        raise ValueError(f"{prefix or 'config'}: expected a mapping, got {data!r}")
    types_ = _field_types(cls)
    unknown = sorted(set(data) - set(types_))
    if unknown:
        names = ", ".join(prefix + k for k in unknown)
        raise ValueError(f"unknown config keys: {names}; valid keys: {', '.join(valid_keys())}")
    values = {}
    for name, value in data.items():
        kind = types_[name]
        if dataclasses.is_dataclass(kind):
            values[name] = _from_dict(kind, value, f"{prefix}{name}.")
        else:
            values[name] = _parse(value, kind, prefix + name)
    return cls(**values)


def config_from_dict(data: dict[str, Any]) -> Config:
    """Inverse of :func:`config_to_dict`; missing keys take their defaults, unknown keys
    raise ValueError."""
    return _from_dict(Config, data, "")
