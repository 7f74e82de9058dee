"""Human against agent, in the terminal or through a pipe, for every game.

The board is rendered before each move, the human's legal moves are listed in the game's
own notation (``env.action_to_text``), a malformed or illegal move is refused with a
one-line reason and asked for again, and the agent's move comes with its value estimate.
A single-player game (2048) has no seat for the human: the agent plays it move by move
while the human watches, and the game ends with its score.
"""

from __future__ import annotations

from typing import TextIO

import jax
import jax.numpy as jnp
import numpy as np

from envs import Env, State
from jaxzero.core.single_game import SingleGame, batch_of_one
from jaxzero.measure.players import SearchPlayer
from jaxzero.run.agents.agent import Agent


class InputEnded(Exception):
    """The human's input stream ended before the game did."""


def legal_moves(env: Env, state: State) -> list[str]:
    mask = np.asarray(state.legal_action_mask)
    return [env.action_to_text(a) for a in np.flatnonzero(mask).tolist()]


def join_moves(moves: list[str]) -> str:
    """Moves in one line: spaces between them, commas when a move has a space in it."""
    return (", " if any(" " in move for move in moves) else " ").join(moves)


def read_move(env: Env, state: State, stdin: TextIO, stdout: TextIO) -> int:
    """Prompt until the human types a legal move; raise InputEnded at end of input."""
    mask = np.asarray(state.legal_action_mask)
    while True:
        stdout.write("your move: ")
        stdout.flush()
        line = stdin.readline()
        if not line:
            raise InputEnded("input ended before the game did")
        text = line.strip()
        if not text:
            continue
        try:
            action = env.text_to_action(text)
        except ValueError as error:
            stdout.write(f"invalid move: {error}\n")
            continue
        if not mask[action]:
            stdout.write(f"illegal move: {text} is not legal here\n")
            continue
        return action


def play_game(
    agent: Agent,
    player: SearchPlayer | None = None,
    *,
    human: int = 0,
    seed: int = 0,
    stdin: TextIO,
    stdout: TextIO,
) -> float:
    """Play one game of the agent's game, the human as player ``human`` and the agent
    playing ``player`` (default ``agent.player``); returns the human's final reward (in a
    single-player game, which the agent plays alone, the agent's score)."""
    env = agent.env
    player = agent.player if player is None else player
    solo = env.num_players == 1
    if solo:
        human = -1  # nobody's seat: the agent plays every move
    key = jax.random.key(seed)
    key, k_init = jax.random.split(key)
    game = SingleGame(env)  # op by op, a pgx game's move takes seconds
    state = game.init(k_init)
    trees = player.empty_trees(batch_of_one(state), agent.params) if player.reuses_tree else None
    total = 0.0
    while not (bool(state.terminated) or bool(state.truncated)):
        stdout.write("\n" + env.render(state) + "\n")
        mover = int(state.current_player)
        if mover == human:
            stdout.write(f"legal moves: {join_moves(legal_moves(env, state))}\n")
            action = read_move(env, state, stdin, stdout)
        else:
            key, k_act = jax.random.split(key)
            batch = batch_of_one(state)
            if trees is None:
                action = int(player.jitted(agent.params, batch, k_act)[0])
            else:  # its search goes on from the tree of the moves so far
                actions, trees = player.jitted_act(agent.params, batch, trees, k_act)
                action = int(actions[0])
            _, value = agent.evaluate(batch)
            stdout.write(
                f"jaxzero plays {env.action_to_text(action)} "
                f"(its value estimate: {float(value[0]):+.2f})\n"
            )
        key, k_step = jax.random.split(key)
        state = game.step(state, action, k_step)
        if trees is not None:
            trees = player.jitted_carry(trees, jnp.full((1,), action, jnp.int32))
        total += float(state.rewards[0 if solo else human])
    stdout.write("\n" + env.render(state) + "\n")
    if solo:
        ending = "move cap reached" if bool(state.truncated) else "no move left"
        stdout.write(f"game over ({ending}): jaxzero scored {total:g}\n")
    elif bool(state.truncated):
        stdout.write("game over: move cap reached, no result\n")
    elif total > 0:
        stdout.write("game over: you win\n")
    elif total < 0:
        stdout.write("game over: jaxzero wins\n")
    else:
        stdout.write("game over: draw\n")
    return total
