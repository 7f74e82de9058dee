"""The configuration of a training run: frozen dataclasses, one section per part of the
system, each checking its own values when built.

A :class:`Config` is passed in, never read from globals; it is hashable, so a compiled
function may close over it. Its sections fall in two groups:

* **the compiled iteration** (``jaxzero.core.loop.make_trainer`` reads only these, and
  ``gate.enabled``): ``game``, ``seed``, ``num_devices``, ``network``, ``search``,
  ``selfplay``, ``replay``, ``optim``;
* **the driver and every evaluating command**: ``evaluation`` (how an evaluating search
  plays — the gate, the periodic evaluation, ``Agent``, ``play``, ``gtp``, ``analyze``,
  ``eval`` — and the periodic evaluation's schedule), ``gate`` (the arena gate) and
  ``train`` (budget, logging, checkpoints).

Each section validates itself when it is built, so a bad setting is a ValueError naming
its dotted key at ``jaxzero train`` time. Names of extension points (``game``,
``network.kind``, ``search.kind``) are registry names or ``module:attribute`` import
paths, resolved by ``envs.make``, :func:`jaxzero.core.networks.make_network` and
:func:`jaxzero.core.policies.make_search`. The sections' defaults are the numbers users
get: ``jaxzero.default_config(env)`` sets only what the game decides, and each preset
(``jaxzero.core.presets``, a pinned Config named after the game it trains) only what it
changes.

    config = get_preset("tic_tac_toe")
    config = apply_overrides(config, {"search.num_simulations": "16", "seed": 3})
    config_from_dict(config_to_dict(config)) == config
"""

from __future__ import annotations

import dataclasses
import json
import math
import types
import typing
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

# A user's constructor arguments: (name, value) pairs sorted by name, values plain (numbers,
# strings, booleans, None, tuples of them), so that a Config stays hashable. JSON: an object.
Arguments = tuple[tuple[str, Any], ...]


def arguments(values: Any) -> Arguments:
    """``values`` (a mapping, JSON text of one, or pairs) as :data:`Arguments`."""
    if isinstance(values, str):
        values = json.loads(values) if values.strip() else {}
    pairs = values.items() if isinstance(values, dict) else values
    return tuple(sorted((str(name), _frozen(value)) for name, value in pairs))


def _frozen(value: Any) -> Any:
    """``value`` with its lists as tuples (hashable)."""
    return tuple(map(_frozen, value)) if isinstance(value, list | tuple) else value


MAX_SELFPLAY_SIMULATIONS = 16_384  # AlphaZero searched 800 a move; more is a typo
MAX_EVALUATION_SIMULATIONS = 1 << 20  # KataGo analyses with 10^5 visits; 10^9 is a typo
MAX_NETWORK_DEPTH = 1000  # layers or residual blocks: AlphaZero's deepest had 40 blocks
MAX_UNROLL_STEPS = 1000  # moves the learned dynamics unrolls: MuZero unrolled 5
MAX_SEED = 2**32 - 1  # jax.random.key(seed) keeps 32 bits of the seed


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)


def _at_least(section: Any, low: float, *names: str) -> None:
    """ValueError unless every field ``names`` of ``section`` is >= ``low``."""
    prefix = _SECTION_NAMES[type(section).__name__]
    for name in names:
        value = getattr(section, name)
        _check(value >= low, f"{prefix}{name} must be >= {low}, got {value}")


def _holds_traced(section: Any) -> bool:
    """Whether a field the section declares ``traced`` holds something other than a
    Python number: a population member's traced value, inside its compiled iteration
    (:func:`with_traced`), whose concrete config passed the section's checks already."""
    return any(not isinstance(getattr(section, name), int | float) for name in section.traced)


def _check_finite(section: Any) -> None:
    """ValueError unless every float field of ``section`` is finite: ``inf`` passes
    every ``>=`` bound, and a NaN or infinite rate or noise scale ruins a run silently."""
    prefix = _SECTION_NAMES[type(section).__name__]
    for field in dataclasses.fields(section):
        value = getattr(section, field.name)
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{prefix}{field.name} must be a finite number, got {value}")


def check_evaluation_simulations(simulations: int, setting: str) -> None:
    """ValueError unless ``simulations`` (of an evaluating search, named ``setting``) is
    below :data:`MAX_EVALUATION_SIMULATIONS`: each is a node of every game's tree."""
    _check(
        simulations <= MAX_EVALUATION_SIMULATIONS,
        f"{setting}={simulations} is beyond {MAX_EVALUATION_SIMULATIONS:,}, surely a typo: "
        "every move of every game searched grows a tree of that many nodes",
    )


def _check_even_games(key: str, value: int) -> None:
    _check(value >= 2 and value % 2 == 0, f"{key} must be an even number >= 2, got {value}")


_SECTION_NAMES = {
    "NetworkConfig": "network.",
    "SearchConfig": "search.",
    "SelfPlayConfig": "selfplay.",
    "ReplayConfig": "replay.",
    "OptimConfig": "optim.",
    "EvaluationConfig": "evaluation.",
    "GateConfig": "gate.",
    "TrainConfig": "train.",
    "ModelConfig": "model.",
    "Config": "",
}


@dataclasses.dataclass(frozen=True)
class NetworkConfig:
    """The policy/value network (see ``jaxzero.core.networks``).

    ``kind`` "auto" picks a ResNet for board observations (rank 3, H x W x C) and an MLP
    for anything else; "resnet" and "mlp" force one ("mlp" flattens a board); any other
    value is a name given to ``jaxzero.register_network`` or the import path of a user's
    Flax module, ``"module:Class"``, built as ``Class(num_actions=A, **args)`` (``args``:
    its other constructor arguments, which ``make_trainer`` records from the module). ``dtype``
    "bfloat16" computes the network in bfloat16 (mixed precision: parameters, optimiser
    state, targets and the network's outputs stay float32); worth it on GPUs and TPUs,
    slower on most CPUs.

    ``value_head`` "tanh" predicts values in [-1, 1] (two-player games with ±1 outcomes);
    "categorical" predicts ``value_bins`` categories over MuZero's transform h of
    [-value_max, value_max] (``jaxzero.core.values``): for scores (2048) or outcomes
    beyond ±1 (backgammon's gammons). ``value_max`` is the largest return it represents.
    """

    kind: str = "auto"  # "auto", "resnet", "mlp", a registered name or "module:Class"
    num_blocks: int = 2  # ResNet: residual blocks after the stem
    channels: int = 32  # ResNet: channels of every conv
    value_channels: int = 8  # ResNet value head: channels of its 1x1 conv
    value_hidden: int = 128  # ResNet value head: units of its hidden layer (0: channels)
    hidden_size: int = 128  # MLP: width of each hidden layer
    num_layers: int = 2  # MLP: hidden layers
    dtype: Literal["float32", "bfloat16"] = "float32"  # compute dtype of the network
    value_head: Literal["tanh", "categorical"] = "tanh"  # tanh: values in [-1, 1]; or bins
    value_bins: int = 101  # categorical head: bins over [-h(value_max), h(value_max)]
    value_max: float = 1.0  # categorical head: the largest |return| it represents
    args: Arguments = ()  # a user's module (kind "module:Class"): its constructor arguments

    def __post_init__(self) -> None:
        _check_finite(self)
        _check(bool(self.kind), "network.kind must name a network (auto, resnet, mlp, ...)")
        _at_least(self, 1, "num_blocks", "channels", "value_channels", "hidden_size", "num_layers")
        for name in ("num_blocks", "num_layers"):  # tracing 10^5 layers hangs, no line
            depth = getattr(self, name)
            _check(
                depth <= MAX_NETWORK_DEPTH,
                f"network.{name}={depth} is beyond {MAX_NETWORK_DEPTH}, surely a typo "
                "(AlphaZero's deepest network had 40 residual blocks)",
            )
        _at_least(self, 0, "value_hidden")
        _at_least(self, 3, "value_bins")
        _check(self.value_max > 0, f"network.value_max must be > 0, got {self.value_max}")


@dataclasses.dataclass(frozen=True)
class SearchConfig:
    """mctx search in self-play. ``kind`` names the policy
    (:mod:`jaxzero.core.policies`): "puct" is AlphaZero's (muzero_policy, Dirichlet root
    noise); "gumbel" is Gumbel MuZero (gumbel_muzero_policy, sequential halving, completed
    Q); another registered name or a ``"module:factory"`` a user's. ``qtransform``,
    ``interior_selection`` and ``root_selection`` are import paths of a user's functions
    (mctx's signatures) that replace the policy's own ("" keeps them). How evaluating
    searches play is :class:`EvaluationConfig`'s."""

    kind: str = "gumbel"  # "gumbel", "puct", a registered name or "module:factory"
    num_simulations: int = 16  # per self-play move
    dirichlet_alpha: float = 0.3  # PUCT root noise concentration
    dirichlet_fraction: float = 0.25  # PUCT root noise weight
    pb_c_init: float = 1.25  # PUCT exploration constant
    pb_c_base: float = 19652.0  # PUCT: c = pb_c_init + log((N + pb_c_base + 1) / pb_c_base)
    # PUCT's Q as its selection reads it. 0: mctx's default, min-max over the node's value
    # and its visited children's Q, unvisited children at the minimum. q > 0: the fixed
    # range [-q, q] (mctx.qtransform_by_min_max), as AlphaZero reads Q on the outcome's
    # range; 1 fits games of ±1 outcomes. Gumbel never reads it.
    q_bound: float = 0.0
    max_num_considered_actions: int = 16  # Gumbel top-k at the root
    gumbel_scale: float = 1.0  # Gumbel root noise scale in self-play (0 when evaluating)
    # Games with hidden information (env.resample_hidden): search from a redealt state the
    # mover cannot tell apart from the true one, never the true state; False peeks (study).
    determinize: bool = True
    # Tree reuse: after a move the chosen child's subtree (at most num_simulations + 1 nodes)
    # is the next search's root, where it is the position reached (jaxzero.core.mcts).
    reuse_tree: bool = False
    # Games that enumerate their chance events (pgx/2048, pgx/backgammon): explicit chance
    # nodes, whose outcomes the search weighs by their probabilities. False: the step key is
    # the chance event, and a tree edge keeps the outcome it first sampled.
    chance_nodes: bool = False
    qtransform: str = ""  # "module:function", mctx's (tree, node) -> Q [A]
    interior_selection: str = ""  # "module:function", mctx's (key, tree, node, depth) -> a
    root_selection: str = ""  # the same at the root (PUCT only); "": the interior's
    # The numbers a population's members may differ in: the iteration only computes with
    # them (jaxzero.core.population); every other field sizes an array or picks code.
    traced: ClassVar[tuple[str, ...]] = (
        "dirichlet_alpha", "dirichlet_fraction", "pb_c_init", "pb_c_base", "gumbel_scale",
    )  # fmt: skip

    def __post_init__(self) -> None:
        if _holds_traced(self):
            return
        _check_finite(self)
        _check(bool(self.kind), "search.kind must name a search (gumbel, puct, ...)")
        _check(
            self.num_simulations <= MAX_SELFPLAY_SIMULATIONS,
            f"search.num_simulations={self.num_simulations} is beyond "
            f"{MAX_SELFPLAY_SIMULATIONS:,}, surely a typo: every move of every self-play game "
            "grows a tree of that many nodes (evaluation.simulations sets how agents play)",
        )
        _check(
            not (self.chance_nodes and self.reuse_tree),
            "search.chance_nodes and search.reuse_tree cannot both be on (a carried tree "
            "keeps no chance nodes): turn one off",
        )
        _at_least(self, 1, "num_simulations", "max_num_considered_actions")
        _at_least(self, 0, "dirichlet_alpha", "gumbel_scale", "pb_c_init", "pb_c_base", "q_bound")
        _check(
            0.0 <= self.dirichlet_fraction <= 1.0,
            f"search.dirichlet_fraction must be between 0 and 1, got {self.dirichlet_fraction}",
        )
        _check(  # Dirichlet(0) is NaN: every root prior NaN, every game the same, no error
            self.dirichlet_alpha > 0 or self.dirichlet_fraction == 0,
            f"search.dirichlet_alpha must be > 0 while search.dirichlet_fraction > 0, got "
            f"{self.dirichlet_alpha}: give a concentration (0.3 is the default) or set "
            "search.dirichlet_fraction=0 for no root noise",
        )


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """What the search plans with (:mod:`jaxzero.core.model`). ``kind`` "rules": the game's
    own step, AlphaZero's search; "learned": a learned model, MuZero's — the network is then
    three (representation, dynamics, prediction) and the search's recurrent function the
    dynamics, never ``env.step``; everything downstream of the search is the same.

    With a learned model each replayed position is unrolled ``unroll_steps`` K moves by the
    dynamics and trained against what followed it in its game (policies, values, rewards;
    absorbing targets past its end). ``td_steps`` n > 0 makes a single-player game's value
    target the n-step return bootstrapped from the search value n moves later (MuZero's
    for scores; a two-player game learns from its outcome, 0). ``reanalyse`` is the share
    of each minibatch searched again with the newest parameters for fresh targets.
    ``inner_legal`` masks moves inside the tree with the true rules (an ablation: MuZero
    masks the root only)."""

    kind: Literal["rules", "learned"] = "rules"  # rules: plan with env.step; learned: MuZero
    unroll_steps: int = 5  # K: moves a replayed position is unrolled by the learned dynamics
    td_steps: int = 0  # n > 0: n-step value targets of single-player games; 0: to the end
    reanalyse: float = 0.0  # share of each minibatch searched again for fresh targets
    inner_legal: bool = False  # mask moves inside the learned tree with the true rules

    def __post_init__(self) -> None:
        _check_finite(self)
        _at_least(self, 1, "unroll_steps")
        _check(
            self.unroll_steps <= MAX_UNROLL_STEPS,
            f"model.unroll_steps={self.unroll_steps} is beyond {MAX_UNROLL_STEPS}, surely a "
            "typo (MuZero unrolls 5 moves)",
        )
        _at_least(self, 0, "td_steps")
        _check(
            0.0 <= self.reanalyse <= 1.0,
            f"model.reanalyse must be between 0 and 1 (a share of each minibatch), got "
            f"{self.reanalyse}",
        )

    @property
    def learned(self) -> bool:
        """Whether the search plans with a learned model."""
        return self.kind == "learned"


@dataclasses.dataclass(frozen=True)
class SelfPlayConfig:
    """Batched self-play: ``batch_size`` games stepped together, ``moves_per_iteration``
    moves each per iteration. For the first ``temperature_moves`` plies of a game the move
    is sampled with probability proportional to N(a)^(1/temperature); after that it is the
    search's greedy choice. The first ``opening_plies`` plies are instead uniformly random
    legal moves (the search still runs and its policy is still the target): varied
    openings, so the network also learns positions its own play would never reach.
    ``discount`` is the value-target discount γ (1 = AlphaZero); ``root_value_weight``
    w mixes the search's root value q into it: target = (1 - w) · γ^k · z + w · q.

    Playout-cap randomisation (KataGo, Wu 2019 §3.1) when ``full_search_share`` p < 1:
    each move of the batch is searched in full (``search.num_simulations``, with root
    noise) with probability p, else cheaply (``cheap_simulations``, no root noise) only to
    choose the move. Only full searches' policies are training targets; every position
    keeps its value target."""

    batch_size: int = 64  # B: games played side by side
    moves_per_iteration: int = 16  # T: moves of every game per iteration
    temperature_moves: int = 0  # first plies of a game sampled ∝ N(a)^(1/temperature)
    opening_plies: int = 0  # first plies of a game played uniformly at random
    temperature: float = 1.0  # of the sampled first plies
    discount: float = 1.0  # γ of the value target (1: AlphaZero)
    root_value_weight: float = 0.0  # w: the value target's share of the root value q
    full_search_share: float = 1.0  # p; 1 = every move searched in full (no playout cap)
    cheap_simulations: int = 0  # n of the cheap searches (used when p < 1)
    traced: ClassVar[tuple[str, ...]] = ("temperature", "discount", "root_value_weight")

    def __post_init__(self) -> None:
        if _holds_traced(self):
            return
        _check_finite(self)
        _at_least(self, 1, "batch_size", "moves_per_iteration")
        _at_least(self, 0, "temperature_moves", "opening_plies")
        _check(self.temperature > 0, f"selfplay.temperature must be > 0, got {self.temperature}")
        _check(0 < self.discount <= 1, f"selfplay.discount must be in (0, 1], got {self.discount}")
        weight = self.root_value_weight
        _check(0 <= weight <= 1, f"selfplay.root_value_weight={weight} must be between 0 and 1")
        share = self.full_search_share
        _check(0 < share <= 1, f"selfplay.full_search_share must be in (0, 1], got {share}")
        _check(
            share == 1 or self.cheap_simulations >= 1,
            f"selfplay.full_search_share={share} needs selfplay.cheap_simulations >= 1 "
            "(the simulations of the cheap searches)",
        )

    @property
    def playout_cap(self) -> bool:
        """Whether some moves are searched cheaply (playout-cap randomisation)."""
        return self.full_search_share < 1


@dataclasses.dataclass(frozen=True)
class ReplayConfig:
    """Device ring buffer of finished-game positions, sampled uniformly."""

    capacity: int = 50_000  # positions held (the oldest overwritten first)
    min_size: int = 1_024  # no gradient step until this many positions were written
    augment: bool = True  # apply a random element of env.symmetries to each sample

    def __post_init__(self) -> None:
        _check_finite(self)
        _at_least(self, 1, "capacity")
        _check(
            0 <= self.min_size <= self.capacity,
            f"replay.min_size must be between 0 and replay.capacity={self.capacity} (else no "
            f"update ever runs), got {self.min_size}",
        )


@dataclasses.dataclass(frozen=True)
class OptimConfig:
    """AdamW with global-norm clipping. ``schedule``: "constant" (``learning_rate``
    throughout) or "cosine" (linear warm-up over ``warmup_steps``, then cosine decay to
    ``learning_rate * end_lr_factor`` at update ``decay_steps``, constant after)."""

    learning_rate: float = 2e-3  # AdamW's rate (the peak of a cosine schedule)
    schedule: Literal["constant", "cosine"] = "cosine"  # cosine: warm-up, then decay
    warmup_steps: int = 100  # cosine: updates of linear warm-up from 0
    decay_steps: int = 20_000  # cosine: the update where the decay ends
    end_lr_factor: float = 0.1  # cosine: the final rate, a share of learning_rate
    weight_decay: float = 1e-4  # AdamW's decoupled weight decay
    max_grad_norm: float = 1.0  # gradients clipped to this global norm first; 0: not clipped
    minibatch_size: int = 256  # N: positions sampled for each update
    # K: updates per iteration; 8 of 256 draw each position of 64 games x 16 moves ~2 times
    updates_per_iteration: int = 8
    value_loss_weight: float = 1.0  # loss = policy loss + this x value loss
    traced: ClassVar[tuple[str, ...]] = (
        "learning_rate", "weight_decay", "max_grad_norm", "value_loss_weight",
    )  # fmt: skip

    def __post_init__(self) -> None:
        if _holds_traced(self):
            return
        _check_finite(self)
        # 0 is allowed: a member of a population that keeps its initial network (a baseline)
        _check(
            self.learning_rate >= 0, f"optim.learning_rate must be >= 0, got {self.learning_rate}"
        )
        _at_least(self, 1, "minibatch_size", "updates_per_iteration", "decay_steps")
        _at_least(self, 0, "warmup_steps", "weight_decay", "max_grad_norm", "end_lr_factor")
        _at_least(self, 0, "value_loss_weight")


@dataclasses.dataclass(frozen=True)
class EvaluationConfig:
    """How every evaluating search plays, and the driver's periodic evaluation.

    The gate, the periodic evaluation, ``Agent.act``, ``jaxzero play``, ``gtp``,
    ``analyze`` and ``eval`` all search noise-free with ``simulations`` simulations of
    ``search.kind``, the network averaged over the game's symmetries when
    ``average_symmetries`` is on (G network passes per node: a steadier prior and value;
    self-play always uses one pass). Matches (gate, periodic evaluation) start from
    ``opening_plies`` uniformly random plies, each opening played with both colours.
    Every ``every`` iterations (0 = never) the driver measures the playing network: where
    the game has a solved position set, its raw policy's optimal share (one batched
    forward pass, ``eval/raw_optimal``); and its score against random and one-ply over
    ``games`` games each, whenever those matches fit in ``max_share`` of the run's wall
    time so far (their last duration counted ahead), so that measuring never eats more
    than that share of the training; ``games=0`` plays none. A population's members
    measure ``eval/raw_optimal`` alone and play no matches while they train.
    """

    simulations: int = 32  # of every evaluating search
    average_symmetries: bool = False  # the network averaged over env.symmetries
    opening_plies: int = 2  # random plies that open each pair of match games
    every: int = 50  # iterations between periodic evaluations (0: none)
    games: int = 50  # games against each opponent, half with each colour (0: no matches)
    max_share: float = 0.05  # the periodic matches' largest share of the wall time

    def __post_init__(self) -> None:
        _check_finite(self)
        _at_least(self, 1, "simulations")
        check_evaluation_simulations(self.simulations, "evaluation.simulations")
        _at_least(self, 0, "opening_plies", "every")
        _check(
            self.games == 0 or (self.games >= 2 and self.games % 2 == 0),
            f"evaluation.games must be 0 or an even number >= 2, got {self.games}",
        )  # 0: a single run's periodic evaluation measures the solved positions only
        _check(
            0 < self.max_share <= 1,
            f"evaluation.max_share must be in (0, 1], got {self.max_share}",
        )


@dataclasses.dataclass(frozen=True)
class GateConfig:
    """The arena gate (``jaxzero.measure.gate``). With ``enabled``, a frozen best network
    makes all self-play and the learner trains on it; every ``every`` iterations the
    learner plays ``num_games`` games against the best (evaluation-strength search both
    sides) and replaces it iff its score (wins + draws / 2) / games >= ``threshold``.
    Without it the best is the learner after every update (the plain AlphaZero loop)."""

    enabled: bool = False  # self-play by a frozen best network, replaced by the gate
    every: int = 50  # iterations between arena matches
    num_games: int = 200  # games of each arena match, half with each colour
    threshold: float = 0.55  # the score that promotes the learner

    def __post_init__(self) -> None:
        _check_finite(self)
        _at_least(self, 1, "every")
        _check_even_games("gate.num_games", self.num_games)
        _check(
            0.5 < self.threshold <= 1, f"gate.threshold must be in (0.5, 1], got {self.threshold}"
        )


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """The driver's budget, logging and checkpoints."""

    iterations: int = 1_000  # the budget when the command gives none
    log_every: int = 5  # iterations between metric rows (metrics.jsonl, TensorBoard)
    checkpoint_every: int = 25  # iterations between checkpoints
    keep_every: int = 0  # besides the newest 3, keep checkpoints at multiples of this (0: none)

    def __post_init__(self) -> None:
        _check_finite(self)
        _at_least(self, 1, "iterations", "log_every", "checkpoint_every")
        _at_least(self, 0, "keep_every")
        keep, every = self.keep_every, self.checkpoint_every
        _check(
            not keep or keep % every == 0,
            f"train.keep_every={keep} would keep only the checkpoints saved at multiples of "
            f"both it and train.checkpoint_every={every}; make it a multiple of {every}",
        )


@dataclasses.dataclass(frozen=True)
class Config:
    """A training run. The compiled iteration reads ``game`` to ``optim``; the driver and
    the evaluating commands read ``evaluation``, ``gate`` and ``train``.

    Frozen and hashable; change it with ``dataclasses.replace`` or :func:`apply_overrides`.

    Attributes:
        game: the env's registry name or ``"module:attribute"`` path (``envs.make``).
        seed: the run's PRNG seed (the initial state's key, the gate's and evaluation's).
            Within [0, 2**32): jax.random.key keeps 32 bits, so 2**32 would be seed 0.
        num_devices: devices of the data mesh (``jaxzero.core.sharding``); 0: all JAX sees.
        network: the network section, :class:`NetworkConfig`.
        search: the self-play search section, :class:`SearchConfig`.
        selfplay: batched self-play, :class:`SelfPlayConfig`.
        replay: the replay buffer, :class:`ReplayConfig`.
        optim: the optimiser and its updates, :class:`OptimConfig`.
        evaluation: how evaluating searches play, :class:`EvaluationConfig`.
        gate: the arena gate, :class:`GateConfig`.
        train: the driver's budget, logging and checkpoints, :class:`TrainConfig`.

    Raises:
        ValueError: a setting out of range, naming its dotted key (each section checks its
            own; the whole config checks ``num_devices`` and, with playout-cap
            randomisation, that ``selfplay.cheap_simulations`` is below
            ``search.num_simulations``).
    """

    game: str = "tic_tac_toe"
    seed: int = 0
    num_devices: int = 0  # devices of the data mesh (jaxzero.core.sharding); 0 = all JAX sees
    network: NetworkConfig = NetworkConfig()
    search: SearchConfig = SearchConfig()
    selfplay: SelfPlayConfig = SelfPlayConfig()
    replay: ReplayConfig = ReplayConfig()
    optim: OptimConfig = OptimConfig()
    evaluation: EvaluationConfig = EvaluationConfig()
    gate: GateConfig = GateConfig()
    train: TrainConfig = TrainConfig()
    model: ModelConfig = ModelConfig()

    def __post_init__(self) -> None:
        _check_finite(self)
        _at_least(self, 0, "num_devices")
        _check(  # jax.random.key(seed) reads 32 bits: key(2**32) is key(0)
            0 <= self.seed <= MAX_SEED,
            f"seed must be between 0 and {MAX_SEED} (2**32 - 1: jax.random.key's range, where "
            f"seeds 2**32 apart are one key), got {self.seed}",
        )
        cheap, full = self.selfplay.cheap_simulations, self.search.num_simulations
        _check(
            not self.selfplay.playout_cap or cheap < full,
            f"selfplay.cheap_simulations={cheap} must be below search.num_simulations={full} "
            "(a cheap search is the smaller one)",
        )
        if self.model.learned:
            _check_learned(self)


def _check_learned(config: Config) -> None:
    """The settings a learned model cannot honour, each refused naming the key to change."""
    for key in ("reuse_tree", "chance_nodes"):
        _check(
            not getattr(config.search, key),
            f"search.{key} needs the true rules (the tree is keyed by game states), but "
            f"model.kind=learned plans in the model's latent space: set search.{key}=false",
        )
    _check(
        not (config.model.inner_legal and config.model.reanalyse > 0),
        "model.inner_legal masks with the true game's states, which a reanalysed position "
        "of replay does not have: set model.reanalyse=0 or model.inner_legal=false",
    )
    k, capacity = config.model.unroll_steps, config.replay.capacity
    _check(
        k < capacity,
        f"model.unroll_steps={k} unrolls {k + 1} consecutive positions, more than "
        f"replay.capacity={capacity} holds: lower model.unroll_steps or raise replay.capacity",
    )


def traced_keys() -> tuple[str, ...]:
    """The dotted keys of every setting a section declares ``traced``: the numbers a
    population's members may differ in (``"optim.learning_rate"``, ...)."""
    return tuple(
        f"{name}.{field}"
        for name, kind in _field_types(Config).items()
        for field in getattr(kind, "traced", ())
    )


def with_traced(config: Config, values: Mapping[str, Any]) -> Config:
    """``config`` with each setting ``"section.field"`` of ``values`` set to that value:
    a member's traced float32 [] inside a population's compiled iteration (the sections
    holding them skip their checks, which the member's own config passed).

    Args:
        config: the settings the members share.
        values: dotted keys of :func:`traced_keys` to their values.

    Returns:
        A new Config (``config`` itself unchanged).
    """
    changes: dict[str, dict[str, Any]] = {}
    for key, value in values.items():
        section, field = key.split(".")
        changes.setdefault(section, {})[field] = value
    sections = {
        name: dataclasses.replace(getattr(config, name), **fields)
        for name, fields in changes.items()
    }
    return dataclasses.replace(config, **sections)


def _field_types(cls: type) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


def _leaf_keys(cls: type, prefix: str = "") -> list[str]:
    keys: list[str] = []
    for name, kind in _field_types(cls).items():
        if isinstance(kind, type) and dataclasses.is_dataclass(kind):
            keys += _leaf_keys(kind, f"{prefix}{name}.")
        else:
            keys.append(prefix + name)
    return keys


def valid_keys() -> list[str]:
    """The dotted keys ``apply_overrides`` accepts, e.g. ``"search.num_simulations"``."""
    return _leaf_keys(Config)


def _parse_number(value: Any, kind: type, key: str) -> Any:
    what = "an integer" if kind is int else "a number"
    if isinstance(value, bool) or (
        kind is int and isinstance(value, float) and not value.is_integer()
    ):
        raise ValueError(f"{key}: expected {what}, got {value!r}")
    try:
        if kind is int and isinstance(value, str) and "e" in value.lower():
            number = float(value)  # "1e6"; "1e400" is inf, "1.5e0" not whole: refused
            if not number.is_integer():
                raise ValueError(value)
            return int(number)
        return kind(value)
    except (TypeError, ValueError):
        raise ValueError(f"{key}: expected {what}, got {value!r}") from None


def _parse(value: Any, kind: Any, key: str) -> Any:
    """Convert ``value`` (often a command-line string) to the field type ``kind``."""
    if isinstance(kind, types.UnionType):
        kind = next(k for k in typing.get_args(kind) if k is not type(None))
    if typing.get_origin(kind) is Literal:
        choices = typing.get_args(kind)
        if str(value) not in choices:
            raise ValueError(f"{key}: expected one of {', '.join(choices)}, got {value!r}")
        return str(value)
    if kind is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"{key}: expected a boolean, got {value!r}")
    if kind in (int, float):
        return _parse_number(value, kind, key)
    if kind is str:
        return str(value)
    if kind == Arguments:
        try:
            return arguments(value)
        except (ValueError, TypeError):
            raise ValueError(f"{key}: expected a JSON object, got {value!r}") from None
    raise TypeError(f"{key}: unsupported field type {kind!r}")


def _unknown(key: str) -> ValueError:
    return ValueError(f"unknown config key {key!r}; valid keys: {', '.join(valid_keys())}")


def _nest(overrides: dict[str, Any]) -> dict[str, Any]:
    """``{"search.kind": v}`` -> ``{"search": {"kind": (v, "search.kind")}}``."""
    nested: dict[str, Any] = {}
    for key, value in overrides.items():
        *sections, name = key.split(".")
        node = nested
        for section in sections:
            node = node.setdefault(section, {})
            if not isinstance(node, dict):
                raise _unknown(key)
        node[name] = (value, key)
    return nested


def _replace(obj: Any, changes: dict[str, Any]) -> Any:
    """``obj`` with every change of a section applied at once (so that each section is
    checked once, with all its new values)."""
    types_ = _field_types(type(obj))
    values = {}
    for name, change in changes.items():
        if name not in types_:
            raise _unknown(change[1] if isinstance(change, tuple) else f"{name}.")
        kind = types_[name]
        if isinstance(change, dict):
            if not dataclasses.is_dataclass(kind):
                raise _unknown(next(iter(_flat(change))))
            values[name] = _replace(getattr(obj, name), change)
        elif dataclasses.is_dataclass(kind):
            raise ValueError(
                f"{change[1]!r} is a section, not a value; valid keys: {', '.join(valid_keys())}"
            )
        else:
            values[name] = _parse(change[0], kind, change[1])
    return dataclasses.replace(obj, **values)


def _flat(changes: dict[str, Any]) -> list[str]:
    keys: list[str] = []
    for change in changes.values():
        keys += _flat(change) if isinstance(change, dict) else [change[1]]
    return keys


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


def apply_overrides(config: Config, overrides: Mapping[str, Any]) -> Config:
    """A copy of ``config`` with dotted keys replaced, values parsed to the field's type.

    ``apply_overrides(c, {"search.num_simulations": "16", "search.kind": "puct"})``.
    Each section is checked once with all of its changes.

    Args:
        config: the config to start from (left unchanged).
        overrides: dotted keys (:func:`valid_keys`) to values, often command-line text:
            ``"16"``, ``"true"``, ``"1e6"``; ``network.args`` takes a JSON object.

    Returns:
        A new :class:`Config`.

    Raises:
        ValueError: an unknown key or a section named as a value (naming the valid keys),
            a value that does not parse to the field's type, or one the section refuses.
    """
    return _replace(config, _nest(dict(overrides)))


def config_to_dict(config: Config) -> dict[str, Any]:
    """A JSON-ready nested dict of ``config``."""
    data = dataclasses.asdict(config)
    data["network"]["args"] = dict(config.network.args)
    return data


def _from_dict(cls: type, data: dict[str, Any], prefix: str) -> Any:
    if not isinstance(data, dict):
        raise ValueError(f"{prefix or 'config'}: expected a mapping, got {data!r}")
    types_ = _field_types(cls)
    unknown = sorted(set(data) - set(types_))
    if unknown:
        names = ", ".join(_shown_key(prefix + k) for k in unknown)
        raise ValueError(f"unknown config keys: {names}; valid keys: {', '.join(valid_keys())}")
    values = {}
    for name, value in data.items():
        kind = types_[name]
        if isinstance(kind, type) and dataclasses.is_dataclass(kind):
            values[name] = _from_dict(kind, value, f"{prefix}{name}.")
        else:
            values[name] = _parse(value, kind, prefix + name)
    return cls(**values)


def _shown_key(key: str) -> str:
    """A key as an error shows it: as it is, or quoted when it holds what is no name (a
    line break would break the one-line error)."""
    return key if key.isprintable() and key.strip() == key and key else repr(key)


def config_from_dict(data: dict[str, Any]) -> Config:
    """Inverse of :func:`config_to_dict`; missing keys take their defaults, unknown keys
    raise ValueError. (Run directories' older layouts: ``jaxzero.run.folder.config_file``.)"""
    return _from_dict(Config, data, "")


def flatten(
    tree: Mapping[str, Any], *, sep: str | None = None, keep_empty: bool = False
) -> dict[Any, Any]:
    """Nested mappings as one level: ``{"optim": {"learning_rate": x}}`` ->
    ``{("optim", "learning_rate"): x}``, or with ``sep="."`` ``{"optim.learning_rate": x}``
    (``flax.traverse_util.flatten_dict``'s convention). Keys are named by ``str``. An empty
    mapping is dropped, or with ``keep_empty`` a leaf of its own."""
    flat: dict[Any, Any] = {}

    def walk(node: Mapping[str, Any], path: tuple[str, ...]) -> None:
        for key, value in node.items():
            here = (*path, str(key))
            if isinstance(value, Mapping) and (value or not keep_empty):
                walk(value, here)
            else:
                flat[here if sep is None else sep.join(here)] = value

    walk(tree, ())
    return flat


def unflatten(flat: Mapping[Any, Any], *, sep: str | None = None) -> dict[str, Any]:
    """:func:`flatten` undone: ``{("optim", "learning_rate"): x}`` (or ``"optim.learning_rate"``
    with ``sep="."``) -> ``{"optim": {"learning_rate": x}}``."""
    tree: dict[str, Any] = {}
    for key, value in flat.items():
        *sections, name = key if sep is None else key.split(sep)
        node = tree
        for section in sections:
            node = node.setdefault(section, {})
        node[name] = value
    return tree
