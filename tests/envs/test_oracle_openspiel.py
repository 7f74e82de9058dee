"""Oracle: our rules against OpenSpiel's C++ games, move by move.

1,000 random legal games per game are played at once under ``jit(vmap(...))``; each is
then replayed in OpenSpiel on the host, checking at every ply the player to move and the
set of legal actions, and at the end the terminal ply and the returns. Both games use
the same action numbering as ours (tic-tac-toe cells row-major, Connect Four columns
left to right; OpenSpiel prints row 0 at the bottom but its actions are columns).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs

pyspiel = pytest.importorskip("pyspiel")

NUM_GAMES = 1000


def random_games(env: envs.Env, num_games: int, seed: int) -> dict[str, np.ndarray]:
    """Per game and ply: the mover, legal mask and action, then the step's outcome."""

    def play(key):
        state = env.init(key)

        def body(state, key):
            logits = jnp.where(state.legal_action_mask, 0.0, jnp.finfo(jnp.float32).min)
            action = jax.random.categorical(key, logits).astype(jnp.int32)
            nxt = env.step(state, action, key)
            record = {
                "live": ~(state.terminated | state.truncated),
                "player": state.current_player,
                "mask": state.legal_action_mask,
                "action": action,
                "terminated": nxt.terminated,
                "rewards": nxt.rewards,
            }
            return nxt, record

        keys = jax.random.split(key, env.max_steps)
        return jax.lax.scan(body, state, keys)[1]

    keys = jax.random.split(jax.random.key(seed), num_games)
    return jax.device_get(jax.jit(jax.vmap(play))(keys))


def replay_mismatches(games: dict[str, np.ndarray], spiel_name: str) -> list[str]:
    game = pyspiel.load_game(spiel_name)
    problems = []
    for g in range(games["action"].shape[0]):
        state = game.new_initial_state()
        plies = int(games["live"][g].sum())
        for t in range(plies):
            where = f"game {g} ply {t}"
            ours = np.flatnonzero(games["mask"][g, t]).tolist()
            if state.current_player() != games["player"][g, t]:
                problems.append(f"{where}: mover {games['player'][g, t]} vs {state}")
            if state.legal_actions() != ours:
                problems.append(f"{where}: legal {ours} vs OpenSpiel {state.legal_actions()}")
            action = int(games["action"][g, t])
            if action not in state.legal_actions():
                problems.append(f"{where}: we played {action}, illegal in OpenSpiel")
                break
            state.apply_action(action)
            if state.is_terminal() != bool(games["terminated"][g, t]):
                problems.append(f"{where}: terminal {games['terminated'][g, t]} vs OpenSpiel")
        if not state.is_terminal():
            problems.append(f"game {g}: OpenSpiel not over after our last ply {plies}")
        elif state.returns() != games["rewards"][g, plies - 1].tolist():
            problems.append(f"game {g}: returns {games['rewards'][g, plies - 1]} vs {state}")
        if len(problems) > 10:
            break
    return problems


@pytest.mark.parametrize("game_id", ["tic_tac_toe", "connect_four"])
def test_random_games_match_openspiel(game_id):
    games = random_games(envs.make(game_id), NUM_GAMES, seed=0)
    lengths = games["live"].sum(axis=1)
    assert lengths.min() >= (5 if game_id == "tic_tac_toe" else 7)  # no game ends early
    assert len({tuple(a[:n]) for a, n in zip(games["action"], lengths, strict=True)}) > 900
    finals = {tuple(r[n - 1]) for r, n in zip(games["rewards"], lengths, strict=True)}
    assert {(1.0, -1.0), (-1.0, 1.0)} <= finals  # both players win some games
    assert replay_mismatches(games, game_id) == []
