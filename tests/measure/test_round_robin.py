"""The round robin of `jaxzero eval` as a library: entrants, compiled matches, Elo."""

import pytest
from helpers import checkpointed_run

from jaxzero.measure import round_robin
from jaxzero.run.agents.agent import load_agents


@pytest.fixture(scope="module")
def runs(tmp_path_factory, ttt_config, trainers):
    """Two runs of one config, with checkpoints 1, 2 (first) and 3 (second): untrained
    networks from different seeds, so that the games differ."""
    trainer = trainers(ttt_config)
    root = tmp_path_factory.mktemp("rr")
    made = []
    for name, steps in (("first", (1, 2)), ("second", (3,))):
        made.append(checkpointed_run(root / name, ttt_config, trainer, steps))
    return made


def test_agents_that_play_alike_share_every_compiled_match(runs):
    loaded = load_agents(runs)
    assert [name for name, _, _ in loaded] == ["first@1", "first@2", "second@3"]
    agents = [agent for _, agent, _ in loaded]
    assert all(a.player is agents[0].player for a in agents)  # one network and search
    env = agents[0].env
    entrants = [
        round_robin.Entrant(name, agent.player, agent.params, run, agent.iteration)
        for name, agent, run in loaded
    ]
    entrants += round_robin.fixed_entrants(env, round_robin.parse_opponents("one_ply"))
    table = round_robin.run_round_robin(env, entrants, games=4)
    assert len(table.results) == 3 * 2 + 3 + 1  # agents vs fixed, agent pairs, fixed pair
    assert {r.games for _, _, r in table.results} == {4}
    schedule = table.schedule
    # One agent-vs-agent match (three pairings), one fixed pair, one agent-vs-fixed match.
    assert len(schedule.matches) == 2 and len(schedule.evaluations) == 1
    for match in [*schedule.matches.values(), *(e.match for e in schedule.evaluations.values())]:
        assert match.play._cache_size() == 1
    assert table.ratings["random"] == 0.0


def test_the_anchor_and_even_games_are_required(runs):
    with pytest.raises(round_robin.RoundRobinError, match="unknown opponent 'chess'"):
        round_robin.parse_opponents("random,chess")
    (name, agent, run), *_ = load_agents(runs[:1])
    env = agent.env
    entrant = round_robin.Entrant(name, agent.player, agent.params, run)
    with pytest.raises(round_robin.RoundRobinError, match="must take part"):
        round_robin.run_round_robin(env, [entrant], games=4)
    with pytest.raises(round_robin.RoundRobinError, match="even number"):
        round_robin.run_round_robin(env, [entrant], games=3)
