"""A reusable contract checker for any :class:`envs.Env`, ours or a user's.

    from envs.testing import check_env, check_symmetries
    check_env(envs.make("connect_four"))
    check_symmetries(envs.make("connect_four"))

``check_env`` plays random legal games (uniform among the legal actions) until every
game has ended and then some, once game by game (``jit`` of one unbatched game) and once
all together (``jit(vmap(...))``), and raises ``AssertionError`` naming the game, the
step and the rule at the first violation of the contract in ``envs/core.py``:

* both runs agree exactly: a batch element is the same game as that game played alone;
  different keys give different games;
* every field has the contract's dtype and shape (``env.observation_shape``,
  ``env.num_actions``, ``env.num_players``); ``state.observation`` equals
  ``env.observe(state, state.current_player)``;
* the initial state is live, pays nothing and has step count 0;
* while a game is live the legal mask is non-empty and the step count grows by one a
  step; two-player games pay only their outcome (rewards are zero except on the step that
  ends the game) and are zero-sum on every step (single-player games pay scores as they go);
* every game ends (terminated or truncated, never both) within ``env.max_steps`` steps;
  a finished game has an all-ones mask and absorbs: stepping it returns the same state
  with zero rewards;
* an illegal action ends a live game as a loss for the mover;
* ``env.symmetries``: observation and action tables of shapes [S, P] and [S, A] whose
  rows are permutations, with the identity first;
* the text notation: every action's ``action_to_text`` is one line that ``text_to_action``
  reads back as that action; a game's own ``render`` draws the initial position as text;
* the picture (``to_svg``, :mod:`envs.pictures`) of the initial position and of a finished
  game is one well-formed SVG document with a size; a ``grid`` has the shape of a board
  and its pieces' players.

Then every capability the game declares (``envs/core.py``): a group of more than the
identity goes through ``check_symmetries``, enumerated chance events
(``num_chance_outcomes > 0``) through ``check_chance``, hidden information
(``has_hidden_information``) through the check of ``check_hidden_information`` on the
games' positions; a game that overrides ``resample_hidden`` must declare hidden information.

``check_symmetries`` goes further for games whose symmetries are exact: it replays
random games through every group element and checks that the rules commute with it.

``check_chance`` checks a game's enumerated chance events (``env.num_chance_outcomes``)
against its ``step``: from positions of random games, every keyed step is the
``step_outcome`` of an outcome of positive probability, and over many keys the outcomes
come as often as ``chance_probs`` says (a G-test).

``check_hidden_information`` checks ``resample_hidden`` at positions of random games: the
resampled state has the same structure, dtypes and shapes, and the mover sees the same
(``observation`` and ``observe(state, current_player)``, mover, legal mask, rewards, ended
flags, step count); the jitted function of one state agrees with its ``vmap``.

Nothing here assumes that the players alternate or that ``step`` ignores its key.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from envs import pictures
from envs.core import Env, State

Array = jax.Array


def check_env(env: Env, *, num_games: int = 16, seed: int = 0) -> None:
    """Raise ``AssertionError`` if ``env`` breaks the Env contract (see module docstring)."""
    assert num_games >= 2, "check_env needs at least 2 games to compare batch elements"
    _check_symmetry_tables(env)
    _check_fields(env, jax.eval_shape(env.init, jax.random.key(0)), "initial state", leading=0)
    batched_play, single_play = _players(env)
    num_steps = env.max_steps + 2  # every game ends by max_steps; then it must absorb
    init_keys, step_keys, draws = _random_inputs(num_games, num_steps, seed)
    random_actions = np.full((num_games, num_steps), -1, np.int32)

    batched = jax.device_get(batched_play(init_keys, step_keys, draws, random_actions))
    for g in range(num_games):
        alone = single_play(init_keys[g], step_keys[g], draws[g], random_actions[g])
        _assert_trees_equal(_index(batched, g), jax.device_get(alone), f"{env.id}: game {g}")

    init, states, actions, observed = batched  # [G, ...], [G, T, ...], [G, T], [G, T, ...]
    _check_fields(env, init, "initial state", leading=1)
    _check_fields(env, states, "state after a step", leading=2)
    _check_init(env, init)
    _check_games(env, init, states)
    _check_observations(env, states, observed)
    assert len({tuple(a) for a in actions}) > 1, (
        f"{env.id}: {num_games} games with different keys all played the same actions"
    )
    _check_illegal_action(env, init, states)
    _check_notation(env, _index(init, 0))
    _check_picture(env, _index(init, 0))
    _check_picture(env, _index(states, 0, num_steps - 1))  # a finished game

    if env.symmetries.size > 1:
        check_symmetries(env, num_games=num_games, seed=seed)
    if env.num_chance_outcomes > 0:
        check_chance(env, seed=seed)
    overrides = type(env).resample_hidden is not Env.resample_hidden
    assert env.has_hidden_information or not overrides, (
        f"{env.id}: overrides resample_hidden but has_hidden_information is False, so no "
        "search calls it: set has_hidden_information = True"
    )
    if env.has_hidden_information:
        _check_resampled(env, states, seed)


def check_symmetries(env: Env, *, num_games: int = 16, seed: int = 0) -> None:
    """Raise ``AssertionError`` unless every symmetry of ``env`` commutes with its rules.

    For each group element, random games are replayed with every action mapped through
    the element; at every step the replayed state must be the transformed original: the
    same mover, rewards, terminated and truncated, the transformed observation and the
    transformed legal mask. Assumes a symmetric initial position (true of board games
    that start empty) and checks that too.
    """
    _check_symmetry_tables(env)
    play, _ = _players(env)
    num_steps = env.max_steps + 2
    init_keys, step_keys, draws = _random_inputs(num_games, num_steps, seed)
    random_actions = np.full((num_games, num_steps), -1, np.int32)
    init, states, actions, _ = jax.device_get(play(init_keys, step_keys, draws, random_actions))
    obs_index = np.asarray(env.symmetries.observation_index)  # [S, P]
    action_index = np.asarray(env.symmetries.action_index)  # [S, A]

    def transform_observation(obs: np.ndarray, element: int) -> np.ndarray:
        flat = obs.reshape(obs.shape[:2] + (obs_index.shape[1], -1))  # [G, T, P, C]
        return flat[:, :, obs_index[element]].reshape(obs.shape)

    for element in range(1, obs_index.shape[0]):
        # the image of action a is the a' with action_index[element, a'] == a
        image = np.argsort(action_index[element]).astype(np.int32)
        t_init, t_states, _, _ = jax.device_get(play(init_keys, step_keys, draws, image[actions]))
        where = f"{env.id}: symmetry {element}"
        assert np.array_equal(
            transform_observation(init.observation[:, None], element), t_init.observation[:, None]
        ), f"{where}: the initial position is not symmetric"
        checks = [
            (name, getattr(states, name), getattr(t_states, name))
            for name in ["current_player", "rewards", "terminated", "truncated"]
        ]
        checks.append(
            (
                "observation",
                transform_observation(states.observation, element),
                t_states.observation,
            )
        )
        checks.append(
            (
                "legal mask",
                states.legal_action_mask[..., action_index[element]],
                t_states.legal_action_mask,
            )
        )
        for name, expected, got in checks:
            same = (expected == got).reshape(expected.shape[:2] + (-1,)).all(-1)  # [G, T]
            bad = np.argwhere(~same)
            assert bad.size == 0, (
                f"{where}: game {bad[0][0]} step {bad[0][1] + 1}: the {name} of the "
                f"transformed game is not the transformed {name}"
            )


def check_chance(env: Env, *, num_positions: int = 24, draws: int = 400, seed: int = 0) -> None:
    """Raise ``AssertionError`` unless ``env.step`` is ``env.step_outcome`` with the outcome
    drawn from ``env.chance_probs`` (see the module docstring), at ``num_positions``
    positions of random games, each with a random legal move and ``draws`` keys."""
    import scipy.stats

    outcomes = env.num_chance_outcomes
    assert outcomes > 0, f"{env.id} does not enumerate its chance events"
    play, _ = _players(env)
    num_steps = min(env.max_steps, 64)
    init_keys, step_keys, uniform = _random_inputs(num_positions, num_steps, seed)
    _, states, _, _ = play(init_keys, step_keys, uniform, np.full(uniform.shape, -1, np.int32))
    live = ~np.asarray(states.terminated | states.truncated)  # [G, T]
    rng = np.random.default_rng(seed)

    @jax.jit
    def outcomes_of(state: State, action: Array, keys: Array):
        """Which outcomes give each keyed step's state, bool [K, C]; which give the same
        state as each other, bool [C, C]; and the outcomes' probabilities [C]."""
        fixed = jax.vmap(env.step_outcome, in_axes=(None, None, 0))(
            state, action, jnp.arange(outcomes)
        )
        keyed = jax.vmap(env.step, in_axes=(None, None, 0))(state, action, keys)

        def same(a, b):  # [K, ...], [C, ...] -> bool [K, C]
            return (a[:, None] == b[None]).reshape(a.shape[0], b.shape[0], -1).all(-1)

        def all_same(a, b):
            return functools.reduce(jnp.logical_and, jax.tree.leaves(jax.tree.map(same, a, b)))

        return all_same(keyed, fixed), all_same(fixed, fixed), env.chance_probs(state, action)

    statistic, freedom = 0.0, 0
    for g in range(num_positions):
        t = int(rng.choice(np.flatnonzero(live[g])))
        state = _index(states, g, t)
        action = int(rng.choice(np.flatnonzero(np.asarray(state.legal_action_mask))))
        keys = jax.random.split(jax.random.key(seed * 7919 + g), draws)
        reached, twins, probs = map(np.asarray, outcomes_of(state, action, keys))
        where = f"{env.id}: game {g} step {t + 1}, action {action}"
        assert abs(probs.sum() - 1) < 1e-5, f"{where}: chance_probs sums to {probs.sum()}"
        possible = probs > 0
        assert (reached & possible).any(1).all(), (
            f"{where}: a keyed step reached a state that no outcome of positive probability gives"
        )
        # Outcomes that give the same state are one event: its first possible outcome
        # stands for it, with their probabilities summed.
        stand_in = np.argmax(twins & possible[None], axis=1)  # [C]
        events = np.unique(stand_in[possible])
        expected = draws * np.array([probs[possible & (stand_in == e)].sum() for e in events])
        seen = np.bincount(stand_in[np.argmax(reached & possible, axis=1)], minlength=outcomes)
        observed = seen[events]
        statistic += 2 * float(
            np.sum(observed * np.log(np.where(observed > 0, observed / expected, 1.0)))
        )
        freedom += len(events) - 1
    assert freedom > 0, f"{env.id}: no sampled move had a chance event"
    p_value = scipy.stats.chi2.sf(statistic, freedom)
    assert p_value > 1e-6, (
        f"{env.id}: the keyed steps' outcomes are not as frequent as chance_probs says "
        f"(G = {statistic:.1f} on {freedom} degrees of freedom, p = {p_value:.1e})"
    )


def check_hidden_information(
    env: Env, *, num_games: int = 8, num_steps: int = 64, seed: int = 0
) -> None:
    """Raise ``AssertionError`` unless ``env.resample_hidden`` keeps what the mover sees
    (see the module docstring) at every position of ``num_games`` random games of at most
    ``num_steps`` steps."""
    assert env.has_hidden_information, f"{env.id} does not declare hidden information"
    play, _ = _players(env)
    init_keys, step_keys, draws = _random_inputs(num_games, min(env.max_steps, num_steps), seed)
    random_actions = np.full(draws.shape, -1, np.int32)
    _, states, _, _ = jax.device_get(play(init_keys, step_keys, draws, random_actions))
    _check_resampled(env, states, seed)


def _check_resampled(env: Env, states: State, seed: int) -> None:
    """``resample_hidden`` at each of ``states`` [G, T] (see ``check_hidden_information``)."""
    num_games, num_steps = np.asarray(states.step_count).shape
    keys = jax.random.split(jax.random.key(seed + 1), num_games * num_steps)
    keys = keys.reshape(num_games, num_steps)

    def resample(state: State, key: Array) -> tuple[State, Array]:
        new = env.resample_hidden(state, key)
        return new, env.observe(new, new.current_player)

    new, observed = jax.device_get(jax.jit(jax.vmap(jax.vmap(resample)))(states, keys))
    alone = jax.device_get(jax.jit(resample)(_index(states, 0, 0), keys[0, 0]))
    _assert_trees_equal(_index((new, observed), 0, 0), alone, f"{env.id}: resample_hidden")
    paths, structure = jax.tree_util.tree_flatten_with_path(states)
    new_paths, new_structure = jax.tree_util.tree_flatten_with_path(new)
    assert new_structure == structure, (  # type: ignore[operator]  # jaxlib has no stubs
        f"{env.id}: resample_hidden changed the state's structure"
    )
    for (path, before), (_, after) in zip(paths, new_paths, strict=True):
        assert before.dtype == after.dtype and before.shape == after.shape, (
            f"{env.id}: resample_hidden changed {jax.tree_util.keystr(path)} from "
            f"{before.dtype}{list(before.shape)} to {after.dtype}{list(after.shape)}"
        )
    seen = [
        "current_player",
        "observation",
        "legal_action_mask",
        "rewards",
        "terminated",
        "truncated",
        "step_count",
    ]
    kept = [(name, getattr(states, name), getattr(new, name)) for name in seen]
    kept.append(("observe(state, current_player)", states.observation, observed))
    for name, before, after in kept:
        same = (before == after).reshape(num_games, num_steps, -1).all(-1)  # [G, T]
        bad = np.argwhere(~same)
        assert bad.size == 0, (
            f"{env.id}: game {bad[0][0]} step {bad[0][1] + 1}: resample_hidden changed the "
            f"{name}, which the mover sees"
        )


def _check_notation(env: Env, state: State) -> None:
    """Every action's text reads back as the action; a game's own renderer draws ``state``."""
    for action in range(env.num_actions):
        text = env.action_to_text(action)
        assert isinstance(text, str) and text and "\n" not in text, (
            f"{env.id}: action_to_text({action}) is {text!r}, not one line of text"
        )
        back = env.text_to_action(text)
        assert back == action, (
            f"{env.id}: text_to_action({text!r}) is {back}, but {text!r} is action {action}"
        )
    if type(env).render is not Env.render:
        picture = env.render(state)
        assert isinstance(picture, str) and picture, f"{env.id}: render drew {picture!r}, not text"


def _check_picture(env: Env, state: State) -> None:
    """``state``'s picture is a standalone SVG document; a grid is a board of pieces."""
    grid = env.grid(state)
    if grid is not None:
        cells = np.asarray(grid.cells)
        assert cells.ndim == 2 and cells.size, f"{env.id}: grid() cells of shape {cells.shape}"
        assert cells.min() >= 0 and cells.max() <= env.num_players, (
            f"{env.id}: grid() cells hold {sorted(set(cells.ravel().tolist()))}: 0 (empty) or "
            f"k = 1 .. {env.num_players} (a piece of player k - 1)"
        )
        if grid.action_cells is not None:
            where = np.asarray(grid.action_cells)
            assert where.shape == (env.num_actions, 2), (
                f"{env.id}: grid().action_cells has shape {where.shape}, not "
                f"({env.num_actions}, 2): a (row, column) per action"
            )
            on = where.min(axis=1) >= 0
            inside = (where[on] < cells.shape).all()
            assert inside and (where[~on] == -1).all(), (
                f"{env.id}: grid().action_cells holds cells off the {cells.shape} board"
            )
    try:
        pictures.check_svg(env.to_svg(state))
    except AssertionError as error:
        raise AssertionError(f"{env.id}: to_svg: {error}") from None


def _random_inputs(num_games: int, num_steps: int, seed: int) -> tuple[Array, Array, np.ndarray]:
    """Per game an init key; per game and step a step key and a uniform draw in [0, 1)."""
    k_init, k_step = jax.random.split(jax.random.key(seed))
    init_keys = jax.random.split(k_init, num_games)  # [G]
    step_keys = jax.random.split(k_step, num_games * num_steps).reshape(num_games, num_steps)
    draws = np.random.default_rng(seed).random((num_games, num_steps), dtype=np.float32)
    return init_keys, step_keys, draws


@functools.lru_cache(maxsize=8)
def _players(env: Env):
    """Compiled ``play`` for a batch of games (``jit(vmap)``) and for one game (``jit``).

    play(init_key, step_keys [T], draws [T], actions [T]) -> (initial state, states after
    each step, actions played, env.observe(state, state.current_player) after each step).
    A negative entry of ``actions`` plays the legal action at the position ``draw * n`` among
    the n legal ones (uniform); any other entry is played as given. The random numbers
    come in as arguments, so a replay meets the same chance events, and the compiled
    program holds no random-number generator (which is slow to compile under vmap).
    """

    def play(init_key: Array, step_keys: Array, draws: Array, actions: Array):
        init = env.init(init_key)

        def body(state: State, xs: tuple[Array, Array, Array]) -> tuple[State, tuple]:
            key, draw, given = xs
            mask = state.legal_action_mask  # bool [A]
            nth = jnp.floor(draw * mask.sum()).astype(jnp.int32)  # int32 [] in 0..n-1
            drawn = jnp.argmax(mask & (jnp.cumsum(mask) == nth + 1)).astype(jnp.int32)
            action = jnp.where(given < 0, drawn, given)
            state = env.step(state, action, key)
            return state, (state, action, env.observe(state, state.current_player))

        _, (states, played, observed) = jax.lax.scan(body, init, (step_keys, draws, actions))
        return init, states, played, observed

    return jax.jit(jax.vmap(play)), jax.jit(play)


def _assert_trees_equal(a: Any, b: Any, where: str) -> None:
    paths_a, tree_a = jax.tree_util.tree_flatten_with_path(a)
    paths_b, tree_b = jax.tree_util.tree_flatten_with_path(b)
    assert tree_a == tree_b, (  # type: ignore[operator]  # jaxlib has no stubs
        f"{where}: batched and single runs have different structures"
    )
    for (path, x), (_, y) in zip(paths_a, paths_b, strict=True):
        name = jax.tree_util.keystr(path)
        x, y = np.asarray(x), np.asarray(y)
        assert x.dtype == y.dtype and x.shape == y.shape, (
            f"{where}: {name} is {x.dtype}{list(x.shape)} batched, {y.dtype}{list(y.shape)} alone"
        )
        if np.issubdtype(x.dtype, np.floating):
            ok = np.allclose(x, y, rtol=1e-6, atol=1e-6, equal_nan=True)
        else:
            ok = np.array_equal(x, y)
        assert ok, f"{where}: {name} differs between the jit(vmap) batch and the game alone"


def _index(tree: Any, *index: int) -> Any:
    return jax.tree.map(lambda x: np.asarray(x)[index], tree)


def _check_fields(env: Env, state: State, what: str, *, leading: int) -> None:
    """Dtypes and shapes of the contract fields; ``leading`` batch/time axes in front."""
    expected = {
        "current_player": (np.int32, ()),
        "legal_action_mask": (np.bool_, (env.num_actions,)),
        "rewards": (np.float32, (env.num_players,)),
        "terminated": (np.bool_, ()),
        "truncated": (np.bool_, ()),
        "step_count": (np.int32, ()),
    }
    for name, (dtype, shape) in expected.items():
        value = getattr(state, name)  # an array or, from jax.eval_shape, its shape and dtype
        assert value.dtype == dtype and value.shape[leading:] == shape, (
            f"{env.id}: {what}: {name} is {value.dtype}{list(value.shape[leading:])}, "
            f"expected {np.dtype(dtype)}{list(shape)}"
        )
    obs = state.observation
    assert obs.shape[leading:] == tuple(env.observation_shape), (
        f"{env.id}: {what}: observation shape {obs.shape[leading:]} != "
        f"env.observation_shape {tuple(env.observation_shape)}"
    )
    assert obs.dtype == np.bool_ or np.issubdtype(obs.dtype, np.floating), (
        f"{env.id}: {what}: observation dtype {obs.dtype} is neither bool nor float"
    )
    if isinstance(state.current_player, jax.ShapeDtypeStruct):
        return
    player = np.asarray(state.current_player)
    assert ((player >= 0) & (player < env.num_players)).all(), (
        f"{env.id}: {what}: current_player outside 0..{env.num_players - 1}"
    )


def _check_init(env: Env, init: State) -> None:
    assert not np.asarray(init.terminated).any(), f"{env.id}: an initial state is terminated"
    assert not np.asarray(init.truncated).any(), f"{env.id}: an initial state is truncated"
    assert (np.asarray(init.rewards) == 0).all(), f"{env.id}: an initial state has rewards"
    assert (np.asarray(init.step_count) == 0).all(), f"{env.id}: initial step_count is not 0"
    assert np.asarray(init.legal_action_mask).any(axis=-1).all(), (
        f"{env.id}: an initial state has no legal action"
    )


def _check_games(env: Env, init: State, states: State) -> None:
    """Per game: live steps, the ending step, then absorption."""
    terminated = np.asarray(states.terminated)  # [G, T]
    truncated = np.asarray(states.truncated)
    rewards = np.asarray(states.rewards)  # [G, T, P]
    mask = np.asarray(states.legal_action_mask)  # [G, T, A]
    step_count = np.asarray(states.step_count)  # [G, T]
    done = terminated | truncated
    num_games, num_steps = done.shape
    for g in range(num_games):
        where = f"{env.id}: game {g}"
        assert done[g].any(), f"{where}: not over after {num_steps} steps (max_steps + 2)"
        end = int(np.argmax(done[g]))  # the step that ends the game
        assert end + 1 <= env.max_steps, (
            f"{where}: ended on step {end + 1}, after max_steps={env.max_steps}"
        )
        assert not (terminated[g] & truncated[g]).any(), (
            f"{where}: terminated and truncated at once"
        )
        if env.num_players == 2:
            sums = rewards[g].sum(axis=-1)
            bad = np.flatnonzero(np.abs(sums) > 1e-6)
            assert bad.size == 0, (
                f"{where}: step {bad[0] + 1}: rewards {rewards[g, bad[0]].tolist()} "
                "are not zero-sum"
            )
        for t in range(end if env.num_players == 2 else 0):  # two players: the outcome only
            assert (rewards[g, t] == 0).all(), (
                f"{where}: step {t + 1}: rewards {rewards[g, t].tolist()} before the game ended"
            )
        live_masks = np.concatenate([np.asarray(init.legal_action_mask)[g][None], mask[g, :end]])
        empty = np.flatnonzero(~live_masks.any(axis=-1))
        assert empty.size == 0, f"{where}: empty legal mask after {empty[0]} steps, game live"
        np.testing.assert_array_equal(
            step_count[g, : end + 1],
            np.arange(1, end + 2),
            err_msg=f"{where}: step_count does not grow by one per step",
        )
        assert mask[g, end:].all(), f"{where}: the legal mask of a finished game is not all ones"
        for t in range(end + 1, num_steps):
            absorbed, before = _index(states, g, t), _index(states, g, t - 1)
            assert (absorbed.rewards == 0).all(), (
                f"{where}: step {t + 1} after the end paid {absorbed.rewards.tolist()}"
            )
            before = before.replace(rewards=absorbed.rewards)
            _assert_trees_equal(absorbed, before, f"{where}: step {t + 1} after the end")
    assert done[:, -1].all()


def _check_observations(env: Env, states: State, observed: np.ndarray) -> None:
    got = np.asarray(states.observation)
    same = got == observed if got.dtype == np.bool_ else np.isclose(got, observed)
    bad = np.argwhere(~same.reshape(got.shape[:2] + (-1,)).all(-1))
    assert bad.size == 0, (
        f"{env.id}: game {bad[0][0]} step {bad[0][1] + 1}: state.observation differs from "
        "env.observe(state, state.current_player)"
    )


def _check_illegal_action(env: Env, init: State, states: State) -> None:
    """Play an illegal action in the first live state that has one: the mover loses."""
    num_steps = np.asarray(states.step_count).shape[1]
    candidates = [_index(init, 0)] + [_index(states, 0, t) for t in range(num_steps)]
    for state in candidates:
        live = not (state.terminated or state.truncated)
        illegal = np.flatnonzero(~state.legal_action_mask)
        if live and illegal.size:
            mover = int(state.current_player)
            after = jax.jit(env.step)(state, jnp.int32(illegal[0]), jax.random.key(0))
            rewards = np.asarray(after.rewards)
            assert bool(after.terminated), f"{env.id}: an illegal action did not end the game"
            assert rewards[mover] == -1 and (np.delete(rewards, mover) == 1).all(), (
                f"{env.id}: illegal action by player {mover} paid {rewards.tolist()}, "
                "expected -1 for the mover and +1 for the others"
            )
            return


def _check_symmetry_tables(env: Env) -> None:
    sym = env.symmetries
    obs_index = np.asarray(sym.observation_index)
    action_index = np.asarray(sym.action_index)
    assert obs_index.ndim == 2 and action_index.ndim == 2, (
        f"{env.id}: symmetry tables must be [S, P] and [S, A], got "
        f"{list(obs_index.shape)} and {list(action_index.shape)}"
    )
    size, positions = obs_index.shape
    assert action_index.shape == (size, env.num_actions), (
        f"{env.id}: action table {list(action_index.shape)} != [S, A] = [{size}, {env.num_actions}]"
    )
    num_obs = int(np.prod(env.observation_shape))
    assert positions >= 1 and num_obs % positions == 0, (
        f"{env.id}: {positions} observation positions do not divide the observation "
        f"{tuple(env.observation_shape)}"
    )
    for name, table, n in [("observation", obs_index, positions), ("action", action_index, None)]:
        n = table.shape[1] if n is None else n
        np.testing.assert_array_equal(
            table[0], np.arange(n), err_msg=f"{env.id}: symmetry element 0 is not the identity"
        )
        for s, row in enumerate(table):
            assert sorted(row.tolist()) == list(range(n)), (
                f"{env.id}: {name} table row {s} is not a permutation"
            )
