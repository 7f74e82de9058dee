"""One training iteration as one compiled function, and the state it threads.

    trainer = make_trainer(config)       # or make_trainer(config, env=..., network=..., search=...)
    state = trainer.init(jax.random.key(config.seed))
    for _ in range(n):
        state, metrics, moves = trainer.iteration(state)   # one jax.jit, no host round trip

An iteration: T self-play moves of B games (finished games' positions go to replay), then
K minibatch updates (``lax.scan``), each on ``minibatch_size`` positions sampled uniformly
from replay with a random symmetry; updates are skipped (parameters unchanged) until the
buffer holds ``replay.min_size`` positions. Metrics are reduced on device; ``finite``
(1.0 or 0.0) says whether the iteration's losses and gradient norms, and the parameters
and optimizer state it leaves, are all finite (the driver stops a run at a 0.0).

Self-play always plays with ``best_params`` (every prior and value in the tree); the
updates train ``params``. With the arena gate off (``config.gate.enabled`` False),
``best_params`` is set to the updated ``params`` at the end of every iteration: the plain
AlphaZero loop, the newest network plays. With the gate on, ``best_params`` stays frozen
and only the driver replaces it, when the learner wins an arena match (``jaxzero.measure.gate``).

``TrainState`` is a plain pytree of arrays (the PRNG key is stored as raw ``uint32`` key
data), so orbax can save and restore it against ``trainer.init``'s structure.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax
from jax.sharding import PartitionSpec as P

import envs
from envs.core import Env, state_dataclass
from jaxzero.core import learner, networks, policies, replay, selfplay, sharding, unroll
from jaxzero.core import model as model_lib
from jaxzero.core.config import Config
from jaxzero.core.policies import SearchPolicy
from jaxzero.core.search import SearchOptions

Array = jax.Array
Metrics = dict[str, Array]
# The metric that says the iteration stayed finite (1.0 or 0.0; the driver's guard reads it).
FINITE = "finite"
# The learner's metrics of every update that the ``finite`` metric checks.
FINITE_METRICS = ("policy_loss", "value_loss", "grad_norm")


@state_dataclass
class TrainState:
    """Everything one training iteration reads and writes: a plain pytree of arrays.

    ``trainer.init(key)`` builds it and ``trainer.iteration`` threads it; orbax saves and
    restores it against ``init``'s structure (hence the key as raw ``uint32`` data).

    Attributes:
        params: network variables ``{"params": ...}``: the learner.
        best_params: the network that plays self-play (== ``params`` when the gate is off).
        opt_state: the optimizer's state for ``params`` (``trainer.optimizer``).
        replay: the device ring buffer of finished-game positions (``config.replay``).
        selfplay: the B games in progress, their positions so far and, with tree reuse,
            their carried trees (:class:`~jaxzero.core.selfplay.SelfPlayState`).
        key: uint32 [2], ``jax.random.key_data`` of the loop's key.
        iteration: int32 [], iterations completed.
        env_steps: int32 [], self-play moves played (over all games).
        positions_written: int32 [], positions written to replay.
        updates: int32 [], optimizer steps taken.
    """

    params: dict  # network variables {"params": ...}: the learner
    best_params: dict  # the network that plays self-play (== params when the gate is off)
    opt_state: optax.OptState
    replay: replay.ReplayBuffer
    selfplay: selfplay.SelfPlayState
    key: Array  # uint32 [2]  jax.random.key_data of the loop's key
    iteration: Array  # int32 []  iterations completed
    env_steps: Array  # int32 []  self-play moves played (over all games)
    positions_written: Array  # int32 []  positions written to replay
    updates: Array  # int32 []  optimizer steps taken

    def replace(self, **changes) -> TrainState:
        return dataclasses.replace(self, **changes)


@dataclasses.dataclass(frozen=True)
class Trainer:
    """What ``make_trainer`` builds: the pieces a driver, evaluator or agent needs.

    ``config`` records what the trainer was given (a custom game, network or search as
    import paths), so that a run's config.json rebuilds it.

    Attributes:
        config: the run's settings, recording the env, network and search by name.
        env: the game.
        network: the unbound ``flax.linen.Module``.
        search: the self-play :class:`~jaxzero.core.policies.SearchPolicy`.
        apply_fn: ``network.apply`` as jaxzero calls it
            (:class:`~jaxzero.core.networks.ApplyFn`).
        optimizer: the optax transformation the learner applies (``config.optim``).
        init: jitted ``key -> TrainState``; ``key`` a typed PRNG key or its raw data.
        iteration: jitted ``state -> (state, metrics, moves)``: ``metrics`` device
            scalars, ``moves`` the iteration's self-play moves (``{"action", "done",
            "reward", "value"}``, [T, B] each, ``reward`` [T, B, players]; ``value`` the
            search's verdict for the mover) for game records.
        options: how the searches treat the game, and with ``config.model.kind=learned``
            the learned model they plan with (``options.model``).
    """

    config: Config
    env: Env
    network: nn.Module
    search: SearchPolicy
    apply_fn: networks.ApplyFn
    optimizer: optax.GradientTransformation
    init: Callable[[Array], TrainState]
    # state -> (state, metrics, moves): metrics are device scalars; moves the iteration's
    # self-play moves ({"action", "done", "value": [T, B], "reward": [T, B, players]})
    iteration: Callable[[TrainState], tuple[TrainState, Metrics, dict[str, Array]]]
    # how self-play searches the game: the rules, or the learned model (options.model)
    options: SearchOptions = SearchOptions()


def make_trainer(
    config: Config,
    *,
    env: Env | None = None,
    network: nn.Module | None = None,
    search: SearchPolicy | None = None,
    donate: bool = False,
) -> Trainer:
    """Build the env, network, search, optimizer, ``init`` and the jitted ``iteration``.

    Args:
        config: the run's settings (a preset, ``jaxzero.default_config(env)``, or by hand).
        env: the game; default ``envs.make(config.game)``. Any ``envs.Env``.
        network: a ``flax.linen.Module`` meeting :mod:`jaxzero.core.networks`' contract
            (observation [B, ...] -> logits [B, A], value [B]); default
            ``make_network(config.network, env)``.
        search: a search policy (``jaxzero.PuctSearch(...)``, ``jaxzero.GumbelSearch(...)``
            or a user's :class:`~jaxzero.core.policies.SearchPolicy`); default
            ``make_search(config.search)``. Built or given here, once: everything inside
            takes the objects.
        donate: let XLA reuse the input TrainState's buffers (less copying of the replay
            buffer); the caller must then not touch a state after passing it in.

    Returns:
        A :class:`Trainer` whose ``config`` records the env, network and search given (as
        names or import paths), and whose ``iteration(state) -> (state, metrics, moves)``
        is one compiled function: ``moves`` are the T self-play moves of the B games as
        played (``jaxzero.core.selfplay.make_selfplay_fn``), a small array a game recorder
        may keep and everyone else ignores.

    Raises:
        ValueError: one line naming the setting that names nothing buildable (an unknown
            game, ``network.kind`` or ``search.kind``), or that cannot train this game or
            fit the devices.

    ``init`` and ``iteration`` run data-parallel over a mesh of ``config.num_devices``
    devices (``jaxzero.core.sharding``): games, replay and minibatches split, networks
    replicated. On n > 1 devices the iteration runs under ``jax.shard_map``: each device
    plays and searches its own B / n games with its own key into its own ring of replay,
    and samples its share of each minibatch from it; the only collectives are the
    gradient mean of each update and the metric sums. One device is today's program.
    """
    env, config = resolve_env(config, env)
    network, config = resolve_network(config, env, network)
    if search is None:
        search = policies.make_search(config.search)
    else:
        config = record_search(config, search)
    mesh = sharding.make_mesh(config.num_devices)
    sharding.check_divisible(config, mesh.size)
    shards = mesh.size
    check_game_fits(config, env)
    apply_fn = networks.make_apply_fn(network)
    options = SearchOptions.of(config.search, model_lib.learned_model(config, env, network))
    optimizer = learner.make_optimizer(config.optim)
    init = make_init(config, env, network, optimizer, shards)
    state_sharding = sharding.state_shardings(jax.eval_shape(init, jax.random.key(0)), mesh)
    if shards == 1:
        step = make_step(config, env, apply_fn, optimizer, search, options=options)
    else:
        step = jax.shard_map(
            make_step(
                config,
                env,
                apply_fn,
                optimizer,
                search,
                options=options,
                axis_name=sharding.DATA_AXIS,
                shards=shards,
            ),  # fmt: skip
            mesh=mesh,
            in_specs=(sharding.specs(state_sharding),),
            out_specs=(sharding.specs(state_sharding), P(), P(None, sharding.DATA_AXIS)),
            check_vma=False,  # mctx's loops start from unvarying constants; see make_step
        )
    return Trainer(
        config=config,
        env=env,
        network=network,
        search=search,
        apply_fn=apply_fn,
        optimizer=optimizer,
        init=jax.jit(init, out_shardings=state_sharding),
        iteration=jax.jit(
            step,
            in_shardings=(state_sharding,),
            # moves [T, B] gathered (once, after the loop): every process may record games
            out_shardings=(state_sharding, sharding.replicated(mesh), sharding.replicated(mesh)),
            donate_argnums=(0,) if donate else (),
        ),
        options=options,
    )


def make_init(
    config: Config,
    env: Env,
    network: nn.Module,
    optimizer: optax.GradientTransformation,
    shards: int = 1,
) -> Callable[[Array], TrainState]:
    """``init(key) -> TrainState``, not jitted: what ``Trainer.init`` compiles (a
    population vmaps it over its members' keys).

    Args:
        config: the run's settings (batch, replay capacity, tree reuse).
        env: the game.
        network: the flax module whose parameters it initialises.
        optimizer: the optax transformation whose state it initialises.
        shards: replay rings, one per device.

    Returns:
        A function of a typed PRNG key or its raw ``uint32`` data.
    """
    b = config.selfplay.batch_size
    reuse_simulations = config.search.num_simulations if config.search.reuse_tree else None
    learned = config.model.learned
    record_moves = learned or config.model.td_steps > 0

    def init(key: Array) -> TrainState:
        if not jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
            key = jax.random.wrap_key_data(key)
        key, k_params, k_games = jax.random.split(key, 3)
        params = networks.init_params(network, env, k_params)
        return TrainState(
            params=params,
            best_params=jax.tree.map(jnp.copy, params),
            opt_state=optimizer.init(params),
            replay=replay.init_replay(env, config.replay.capacity, shards, sequences=learned),
            selfplay=selfplay.init_selfplay(env, b, k_games, reuse_simulations, record_moves),
            key=jax.random.key_data(key),
            iteration=jnp.int32(0),
            env_steps=jnp.int32(0),
            positions_written=jnp.int32(0),
            updates=jnp.int32(0),
        )

    return init


def resolve_env(config: Config, env: Env | None = None) -> tuple[Env, Config]:
    """``env``, or the game ``config.game`` names; and ``config`` naming it. A game no
    name rebuilds (a class made inside a function, settings only keyword arguments give)
    is recorded as such, so that loading its run asks for the env instead of building
    another game."""
    if env is None:
        return envs.make(config.game), config
    if config.game == env.id:
        return env, config
    try:
        game = envs.game_spec(env)
    except ValueError as error:
        game = f"<{env.id}, not rebuildable: {error}>"
    return env, dataclasses.replace(config, game=game)


def resolve_network(
    config: Config, env: Env, network: nn.Module | None = None
) -> tuple[nn.Module, Config]:
    """``network``, or the one ``config.network`` names (a learned model's with
    ``model.kind=learned``); and ``config`` recording it."""
    if network is None:
        return model_lib.make_network(config, env), config
    if config.model.learned:
        model_lib.check_learned_network(network, type(network).__name__)
        if model_lib.builds(config, env, network):
            return network, config
    section = networks.network_config(network, config.network, env)
    return network, dataclasses.replace(config, network=section)


def record_search(config: Config, search: SearchPolicy) -> Config:
    """``config`` recording the policy ``search`` (its kind, settings and functions)."""
    return dataclasses.replace(config, search=search.to_config(config.search))


def recorded(config: Config, trainer: Trainer) -> Config:
    """``config`` recording ``trainer``'s env, network and search, as ``make_trainer``
    records what it is given."""
    config = resolve_env(config, trainer.env)[1]
    config = resolve_network(config, trainer.env, trainer.network)[1]
    return record_search(config, trainer.search)


def check_game_fits(config: Config, env: Env) -> None:
    """ValueError, naming the setting to change, when ``config`` cannot train ``env``: a
    single-player game pays scores a tanh value head cannot reach, and has no arena;
    explicit chance nodes need a game that lists its chance events; the model section
    asks what the game cannot give (:func:`jaxzero.core.model.check_game`)."""
    model_lib.check_game(config, env)
    if config.search.chance_nodes and env.num_chance_outcomes == 0:
        raise ValueError(
            f"search.chance_nodes needs a game that lists its chance events (pgx/2048, "
            f"pgx/backgammon); {env.id} does not: set search.chance_nodes=false"
        )
    if env.num_players != 1:
        return
    if config.network.value_head == "tanh":
        raise ValueError(
            f"{env.id} is a single-player game that pays scores, beyond a tanh value head's "
            "[-1, 1]: set network.value_head=categorical and network.value_max to its "
            "largest return"
        )
    if config.gate.enabled:
        raise ValueError(
            f"{env.id} is a single-player game: the arena gate plays two-player matches; "
            "set gate.enabled=false"
        )


def make_step(
    config: Config,
    env: Env,
    apply_fn: networks.ApplyFn,
    optimizer: optax.GradientTransformation,
    search: SearchPolicy,
    *,
    options: SearchOptions | None = None,
    axis_name: str | None = None,
    shards: int = 1,
    member_axis: str | None = None,
) -> Callable:
    """The iteration on what one device holds: ``step(state) -> (state, metrics, moves)``.

    Without ``axis_name`` it is the whole iteration on one device. With it, ``step`` runs
    inside ``shard_map`` over ``shards`` devices (or inside ``vmap`` with that axis name
    and size, which computes the same on one device): ``state`` holds this device's games
    and replay ring (:func:`jaxzero.core.replay.local`), its keys are folded with the
    device's index, and gradients, counts and sums are reduced over the axis. Self-play
    searches with ``search`` as ``options`` say (default: ``config.search``'s, with the
    rules; a learned model comes in ``options.model``, as ``Trainer.options`` holds it);
    ``member_axis`` names the population axis the step is vmapped over, if any."""
    if options is None:
        options = SearchOptions.of(config.search)
    model = options.model
    if config.model.learned and model is None:
        raise ValueError("model.kind=learned: pass the learned model in options.model")
    play = selfplay.make_selfplay_fn(
        config.selfplay, env, apply_fn, search, options,
        num_simulations=config.search.num_simulations, member_axis=member_axis,
        td_steps=config.model.td_steps,
    )  # fmt: skip
    if model is None:
        learn = _make_learn(config, env, apply_fn, optimizer, axis_name, shards)
    else:
        learn = _make_learn_unrolled(config, env, model, optimizer, search, axis_name, shards)
    minibatch = config.optim.minibatch_size // shards
    total, own = _over_devices(axis_name)

    def step(state: TrainState):
        key = jax.random.wrap_key_data(state.key)
        key, k_play, k_learn = jax.random.split(key, 3)
        ring = state.replay if axis_name is None else replay.local(state.replay)
        with jax.named_scope("selfplay"):  # tests read this scope's collectives: none
            sp, buffer, sums, moves = play(state.best_params, state.selfplay, ring, own(k_play))
        sums = jax.tree.map(total, sums)
        size = total(buffer.size)
        ready = size >= config.replay.min_size
        params, opt_state, learned = learn(state.params, state.opt_state, buffer, ready, k_learn)
        error_sum, error_count = _recent_value_error(
            apply_fn, state.best_params, buffer, max(minibatch, 1)
        )
        value_error = total(error_sum) / jnp.maximum(total(error_count), 1.0)
        written = sums["positions_written"].astype(jnp.int32)
        positions = config.selfplay.batch_size * config.selfplay.moves_per_iteration
        metrics = _metrics(config, env, state, sums, learned, ready, value_error) | {
            "buffer_fill": size.astype(jnp.float32) / (buffer.capacity * shards),
            FINITE: _finite(params, opt_state, learned, ready),
        }
        if model is not None:
            k_model = own(jax.random.fold_in(k_learn, 1))
            diagnosed = unroll.sample_unroll(
                buffer, k_model, max(minibatch, 1), config.model.unroll_steps
            )
            errors = unroll.model_errors(state.best_params, model.network, diagnosed)
            metrics |= _model_metrics(jax.tree.map(total, errors), sums)
        new_state = TrainState(
            params=params,
            best_params=state.best_params if config.gate.enabled else params,
            opt_state=opt_state,
            replay=buffer if axis_name is None else replay.unlocal(buffer),
            selfplay=sp,
            key=jax.random.key_data(key),
            iteration=state.iteration + 1,
            env_steps=state.env_steps + positions,
            positions_written=state.positions_written + written,
            updates=state.updates + ready.astype(jnp.int32) * config.optim.updates_per_iteration,
        )
        return new_state, metrics, moves

    return step


def _over_devices(axis_name: str | None) -> tuple[Callable, Callable]:
    """``(total, own)``: a sum over the devices' axis, and a key folded with the device's
    index; both the identity on one device (no axis)."""

    def total(x: Array) -> Array:
        return x if axis_name is None else jax.lax.psum(x, axis_name)

    def own(key: Array) -> Array:
        return key if axis_name is None else jax.random.fold_in(key, jax.lax.axis_index(axis_name))

    return total, own


def _model_metrics(errors: Metrics, sums: Metrics) -> Metrics:
    """A learned model's diagnostics under ``model/``: its errors k = 1 .. K moves into
    the unroll (:func:`jaxzero.core.unroll.model_errors`) and the share of the searches'
    nodes off the true rules' paths; the reward loss under its own name."""
    metrics = {}
    for k in range(errors["value"].shape[0]):
        positions = jnp.maximum(errors["positions"][k], 1.0)
        metrics[f"model/value_error_{k + 1}"] = errors["value"][k] / positions
        metrics[f"model/policy_distance_{k + 1}"] = errors["policy"][k] / positions
        metrics[f"model/reward_error_{k + 1}"] = errors["reward"][k] / jnp.maximum(
            errors["moves"][k], 1.0
        )
    metrics["model/off_rules"] = sums["off_rules_sum"] / jnp.maximum(sums["expanded_sum"], 1.0)
    return metrics


def _make_learn(
    config: Config,
    env: Env,
    apply_fn: networks.ApplyFn,
    optimizer: optax.GradientTransformation,
    axis_name: str | None,
    shards: int,
) -> Callable:
    """``learn(params, opt_state, buffer, ready, key) -> (params, opt_state, metrics)``:
    the K minibatch updates of an iteration (``lax.scan``), each kept only when the buffer
    is ``ready`` (bool []); ``metrics`` [K] each."""
    optim = config.optim
    update = learner.make_update_fn(
        apply_fn, optimizer, optim, axis_name, networks.value_transform(config.network)
    )
    symmetries = env.symmetries if config.replay.augment else None
    minibatch = optim.minibatch_size // shards

    def sample(params, buffer: replay.ReplayBuffer, key: Array) -> replay.Batch:
        return replay.sample(buffer, key, minibatch, symmetries)

    return _updates(sample, update, optim.updates_per_iteration, axis_name)


def _make_learn_unrolled(
    config: Config,
    env: Env,
    model: model_lib.LearnedModel,
    optimizer: optax.GradientTransformation,
    search: SearchPolicy,
    axis_name: str | None,
    shards: int,
) -> Callable:
    """A learned model's ``learn``, as :func:`_make_learn`'s: K updates of unrolled
    minibatches (:mod:`jaxzero.core.unroll`), the first ``model.reanalyse`` share of each
    reanalysed with the parameters of the moment."""
    optim = config.optim
    update = unroll.make_unroll_update_fn(
        model.network, optimizer, optim, axis_name, networks.value_transform(config.network)
    )
    symmetries = env.symmetries if config.replay.augment else None
    minibatch = optim.minibatch_size // shards
    rows = round(config.model.reanalyse * minibatch)

    def sample(params, buffer: replay.ReplayBuffer, key: Array) -> unroll.Unroll:
        k_sample, k_search = jax.random.split(key)
        batch = unroll.sample_unroll(
            buffer, k_sample, minibatch, config.model.unroll_steps, symmetries
        )
        if rows == 0:
            return batch
        return unroll.reanalyse(
            params, batch, k_search, model=model, env=env, policy=search,
            num_simulations=config.search.num_simulations, rows=rows,
        )  # fmt: skip

    return _updates(sample, update, optim.updates_per_iteration, axis_name)


def _updates(sample: Callable, update: Callable, count: int, axis_name: str | None) -> Callable:
    """``learn`` of ``count`` updates in a ``lax.scan``: each draws its minibatch with
    ``sample(params, buffer, key)`` (the key folded with the device's index) and applies
    ``update(params, opt_state, batch)``, kept only when the buffer is ``ready``."""
    own = _over_devices(axis_name)[1]

    def learn(params, opt_state, buffer: replay.ReplayBuffer, ready: Array, key: Array):
        def one(carry, k):
            params, opt_state = carry
            batch = sample(params, buffer, own(k))
            new_params, new_opt_state, m = update(params, opt_state, batch)
            params, opt_state = jax.tree.map(
                lambda new, old: jnp.where(ready, new, old),
                (new_params, new_opt_state),
                (params, opt_state),
            )
            return (params, opt_state), m

        keys = jax.random.split(key, count)
        (params, opt_state), metrics = jax.lax.scan(one, (params, opt_state), keys)
        return params, opt_state, metrics

    return learn


def _metrics(
    config: Config,
    env: Env,
    state: TrainState,
    sums: Metrics,
    learned: Metrics,
    ready: Array,
    value_error: Array,
) -> Metrics:
    """The iteration's metrics from self-play's sums and the learner's [K] metrics (the
    learner's zero until the buffer is ``ready``)."""
    games = sums["games_finished"]
    per_game = jnp.maximum(games, 1.0)
    positions = jnp.float32(config.selfplay.batch_size * config.selfplay.moves_per_iteration)
    readyf = ready.astype(jnp.float32)
    written = sums["positions_written"].astype(jnp.int32)
    return (
        {
            "policy_loss": learned["policy_loss"].mean() * readyf,
            "value_loss": learned["value_loss"].mean() * readyf,
            "policy_entropy": learned["policy_entropy"].mean() * readyf,
            "grad_norm": learned["grad_norm"].mean() * readyf,
            "kl_search_prior": sums["kl_search_prior_sum"] / positions,
            "prior_entropy": sums["prior_entropy_sum"] / positions,
            "search_entropy": sums["search_entropy_sum"] / positions,
            "root_value": sums["root_value_sum"] / positions,
            "value_error": value_error,
            "games_finished": games,
            "game_length": sums["game_length_sum"] / per_game,
            "positions_written": (state.positions_written + written).astype(jnp.float32),
            "updated": readyf,
        }
        | _learned_only(learned, readyf)
        | _outcome_metrics(env.num_players, sums, per_game)
    )


def _learned_only(learned: Metrics, readyf: Array) -> Metrics:
    """The learner's metrics a rules learner has not (a learned model's reward loss)."""
    return (
        {"reward_loss": learned["reward_loss"].mean() * readyf} if "reward_loss" in learned else {}
    )


def _finite(params, opt_state, learn_metrics: Metrics, ready: Array) -> Array:
    """float32 []: 1.0 while training stays finite (the driver stops the run at a 0.0):
    this iteration's losses and gradient norms [K each], and the parameters and optimizer
    state it leaves. Updates before min_size are discarded: their losses are not read."""
    losses = jnp.stack([learn_metrics[name] for name in FINITE_METRICS])  # [M, K]
    return _all_finite((params, opt_state), jnp.where(ready, losses, 0.0)).astype(jnp.float32)


def _outcome_metrics(num_players: int, sums: Metrics, per_game: Array) -> Metrics:
    """The finished games' results: a score for one player, first-player rates for two."""
    if num_players == 1:  # a score, not an outcome
        return {"game_return": sums["first_player_return_sum"] / per_game}
    return {
        "first_player_win_rate": sums["first_player_wins"] / per_game,
        "draw_rate": sums["draws"] / per_game,
        "first_player_loss_rate": sums["first_player_losses"] / per_game,
    }


def _all_finite(*trees) -> Array:
    """bool []: every floating-point number of ``trees`` is finite (no NaN, no inf)."""
    leaves = [x for x in jax.tree.leaves(trees) if jnp.issubdtype(x.dtype, jnp.inexact)]
    return jnp.all(jnp.stack([jnp.isfinite(x).all() for x in leaves]))


def _recent_value_error(
    apply_fn: networks.ApplyFn, best_params, buffer: replay.ReplayBuffer, count: int
) -> tuple[Array, Array]:
    """(sum of (v(s) - z)^2, positions) of the self-play network over the ``count``
    positions written last (the newest finished games, labelled with their outcomes).
    Taken before this iteration's updates, so the newest positions are unseen."""
    count = min(count, buffer.capacity)
    slots = (buffer.insert_index - 1 - jnp.arange(count)) % buffer.capacity  # [count]
    valid = buffer.written[slots].astype(jnp.float32)
    _, value = apply_fn(best_params, buffer.observation[slots])
    error = (value - buffer.value_target[slots]) ** 2
    return (error * valid).sum(), valid.sum()
