"""States as pictures (envs.pictures): every built-in game draws itself as SVG, a grid game
gets a picture from its declared board alone, a pgx game through pgx, and check_env
refuses a picture that is not one SVG document."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from envs import pictures
from envs.core import Env, State, state_dataclass
from envs.pictures import Grid, check_svg


def _played(env: Env, moves: list[int]):
    state, step = env.init(jax.random.key(0)), jax.jit(env.step)  # (Go's step: slow op by op)
    for move in moves:
        state = step(state, jnp.int32(move))
    return state


def test_tic_tac_toe_draws_its_marks_in_squares():
    env = envs.make("tic_tac_toe")
    svg = env.to_svg(_played(env, [4, 0, 8]))  # X centre and corner, O top-left
    check_svg(svg)
    marks = re.findall(r">([XO])</text>", svg)
    assert sorted(marks) == ["O", "X", "X"]
    assert "ply 3: player 1 to move" in svg


def test_connect_four_draws_every_hole_and_numbers_the_columns():
    env = envs.make("connect_four")
    svg = env.to_svg(_played(env, [3, 3, 4]))
    check_svg(svg)
    holes = re.findall(r'<circle [^>]*fill="([^"]+)"', svg)
    assert len(holes) == 42
    assert holes.count(pictures.DISCS[0]) == 2 and holes.count(pictures.DISCS[1]) == 1
    assert [label for label in re.findall(r">(\d)</text>", svg)] == list("1234567")


def test_go_draws_stones_on_the_lines_with_gtp_coordinates():
    env = envs.make("go_6x6")
    svg = env.to_svg(_played(env, [env.text_to_action("C3"), env.text_to_action("D4")]))
    check_svg(svg)
    labels = re.findall(r">([A-Z0-9]+)</text>", svg)
    assert labels[:6] == list("ABCDEF") and labels[6:12] == ["6", "5", "4", "3", "2", "1"]
    stones = re.findall(r'<circle [^>]*fill="([^"]+)"', svg)
    assert sorted(stones) == sorted(pictures.PLAYERS)  # one black, one white


def test_star_duel_draws_its_hands_and_trade_row():
    env = envs.make("star_duel")
    svg = env.to_svg(env.init(jax.random.key(0)))
    check_svg(svg)
    for label in ("hand", "trade row", "authority"):
        assert label in svg


@state_dataclass
class LineState(State):
    cells: jax.Array  # int32 [4]  -1 empty, else the player


class FourInARow(Env[LineState]):
    """A user's grid game: fill a row of four; it declares its board and nothing else."""

    id = "four_in_a_row"
    num_actions = 4
    observation_shape = (1, 4, 2)
    max_steps = 4

    def _init(self, key):
        cells = jnp.full(4, -1, jnp.int32)
        return LineState(
            current_player=jnp.int32(0), observation=self._observe_cells(cells, 0),
            legal_action_mask=jnp.ones(4, bool), rewards=jnp.zeros(2), terminated=jnp.bool_(False),
            truncated=jnp.bool_(False), step_count=jnp.int32(0), cells=cells,
        )  # fmt: skip

    def _step(self, state, action, key):
        cells = state.cells.at[action].set(state.current_player)
        nxt = 1 - state.current_player
        return state.replace(
            cells=cells, current_player=nxt, observation=self._observe_cells(cells, nxt),
            legal_action_mask=cells < 0, terminated=(cells >= 0).all(),
        )  # fmt: skip

    def _observe(self, state, player):
        return self._observe_cells(state.cells, player)

    @staticmethod
    def _observe_cells(cells, player):
        return jnp.stack([cells == player, cells == 1 - player], -1).reshape(1, 4, 2)

    def grid(self, state):
        return Grid(np.asarray(state.cells).reshape(1, 4) + 1, style="discs")


def test_a_users_grid_game_gets_a_picture_from_its_board_alone():
    env = FourInARow()
    envs.check_env(env, num_games=4)  # its picture included
    svg = env.to_svg(_played(env, [1, 2]))
    fills = re.findall(r'<circle [^>]*fill="([^"]+)"', svg)
    assert fills == ["#fff", pictures.DISCS[0], pictures.DISCS[1], "#fff"]


def test_a_game_without_a_board_is_its_text_picture():
    class NoBoard(FourInARow):
        def grid(self, state):
            return None

        def render(self, state):
            return "a <line> & its cells"

    svg = NoBoard().to_svg(NoBoard().init(jax.random.key(0)))
    check_svg(svg)
    assert "a &lt;line&gt; &amp; its cells" in svg


@pytest.mark.parametrize(
    "svg, message",
    [
        ("", "empty"),
        ("<svg", "not well-formed"),
        ('<html xmlns="http://www.w3.org/1999/xhtml"/>', "not an <svg>"),
        ('<svg xmlns="http://www.w3.org/2000/svg"/>', "no size"),
        ('<svg xmlns="http://www.w3.org/2000/svg" width="9" height="9"><script/></svg>', "script"),
    ],
)
def test_check_svg_refuses_what_is_not_one_picture(svg, message):
    with pytest.raises(AssertionError, match=message):
        check_svg(svg)


def test_check_env_refuses_a_broken_picture_and_a_board_of_unknown_pieces():
    class Broken(FourInARow):
        def to_svg(self, state):
            return "<svg"

    with pytest.raises(AssertionError, match="four_in_a_row: to_svg: the picture is not"):
        envs.check_env(Broken(), num_games=2)

    class ThreePlayers(FourInARow):
        def grid(self, state):
            return Grid(np.full((1, 4), 3))

    with pytest.raises(AssertionError, match=r"grid\(\) cells hold \[3\]"):
        envs.check_env(ThreePlayers(), num_games=2)


def test_a_batch_is_one_picture_that_jupyter_shows_and_saves(tmp_path):
    env = envs.make("tic_tac_toe")
    states = jax.vmap(env.init)(jax.random.split(jax.random.key(0), 3))
    picture = env.picture(states)
    check_svg(picture._repr_svg_())
    assert picture.svg.count("<svg ") == 4  # the tile and its three boards
    assert env.picture(jax.tree.map(lambda x: x[0], states)).svg == env.to_svg(
        jax.tree.map(lambda x: x[0], states)
    )
    path = picture.save(tmp_path / "boards.svg")
    check_svg(path.read_text())


def test_a_pgx_game_is_drawn_by_pgx():
    pytest.importorskip("pgx")
    env = envs.make("pgx/othello")
    svg = env.to_svg(_played(env, [19]))
    check_svg(svg)


def test_a_search_root_is_drawn_on_the_board_with_its_numbers(tmp_path):
    from jaxzero.core.presets import get_preset
    from jaxzero.run.agents.agent import untrained_agent

    agent = untrained_agent(get_preset("tic_tac_toe"), jax.random.key(0))
    state = _played(agent.env, [4, 0])
    analysis = agent.analyze(state, num_simulations=16)
    svg = analysis._repr_svg_()
    check_svg(svg)
    root = analysis.root
    assert root.visits.sum() > 0
    shaded = re.findall(r'<rect [^>]*fill="#e0402a"', svg)
    assert len(shaded) == int(root.legal.sum()) == 7  # a square on every legal cell
    chosen = agent.env.action_to_text(root.chosen)
    assert f"chosen {chosen} (Q {root.chosen_value:+.2f}); main line " in svg
    assert "network value" in svg and "mean of all simulations" in svg
    assert root.policy_name == "improved policy"  # the preset's Gumbel: the table says so
    assert analysis.save(tmp_path / "root.svg").read_text() == svg


def test_analyze_writes_the_picture_and_says_where(tmp_path):
    from typer.testing import CliRunner

    from jaxzero.cli import app

    out = tmp_path / "root.svg"
    args = ["analyze", "connect_four", "--moves", "4 4", "--simulations", "8", "--svg", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert f"picture written to {out}" in result.output
    check_svg(out.read_text())
    refused = CliRunner().invoke(app, [*args[:-1], str(tmp_path / "no" / "root.svg")])
    assert refused.exit_code == 2 and "cannot write" in refused.output


def test_a_state_displays_itself_drawn_by_the_game_that_started_it():
    c4, go6, go9 = envs.make("connect_four"), envs.make("go_6x6"), envs.make("go_9x9")
    key = jax.random.key(0)
    state, small, large = (jax.jit(env.init)(key) for env in (c4, go6, go9))  # Go: one type
    assert state._repr_svg_() == c4.to_svg(state)
    assert small._repr_svg_() == go6.to_svg(small) and large._repr_svg_() == go9.to_svg(large)
    batch = jax.vmap(c4.init)(jax.random.split(key, 2))
    assert batch._repr_svg_() == c4.picture(batch).svg
