"""Star Duel: the contract, hand-built positions for every rule, hidden information."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from envs import star_duel as sd
from envs.star_duel import StarDuel
from envs.testing import check_env

CARD = {card.name: i for i, card in enumerate(sd.CARDS)}


def counts(*names: str) -> np.ndarray:
    """int32 [T]: the card counts of a list of card names (repeat a name for copies)."""
    out = np.zeros(sd.T, np.int32)
    for name in names:
        out[CARD[name]] += 1
    return out


@pytest.fixture(scope="module")
def env():
    return StarDuel()


@pytest.fixture(scope="module")
def step(env):
    return jax.jit(env.step)


@pytest.fixture(scope="module")
def finish(env):
    """Recompute the observation and the legal mask of an edited state."""
    return jax.jit(env._finish)


@pytest.fixture(scope="module")
def position(env, finish):
    """Build a live state for player 0 from card names; the zones not given are empty.

    Factions in play count the ships in play and the mover's bases, each of whose ally
    effects is taken as already fired unless it is its faction's only card.
    """
    start = env.init(jax.random.key(0))

    def build(trade_row=(), trade_deck=None, authority=(50, 50), **fields):
        zones = np.zeros((sd.Z, sd.T), np.int32)
        for row, name in enumerate(sd.ZONES):
            zones[row] = counts(*fields.pop(name, ()))
        in_play = zones[sd.Z_IN_PLAY] + zones[sd.Z_BASES]
        faction_count = in_play @ sd.FACTION_ONEHOT
        alone = sd.TYPES @ (sd.FACTION_ONEHOT * (in_play > 0)[:, None])
        row = [CARD[name] for name in trade_row] + [-1] * (sd.ROW - len(trade_row))
        state = start.replace(
            zones=jnp.asarray(zones),
            trade_row=jnp.asarray(row, jnp.int32),
            trade_deck=jnp.asarray(sd.TRADE_DECK if trade_deck is None else counts(*trade_deck)),
            authority=jnp.asarray(authority, jnp.int32),
            faction_count=jnp.asarray(faction_count, jnp.int32),
            ally_pending=jnp.asarray(np.where(faction_count == 1, alone, sd.T), jnp.int32),
            **{name: jnp.int32(value) for name, value in fields.items()},
        )
        return finish(state)

    return build


def play(step, state, *texts, key=0):
    """Step ``state`` through actions written as text; every one must be legal."""
    env = StarDuel()
    for text in texts:
        action = env.text_to_action(text)
        assert state.legal_action_mask[action], f"{text!r} is not legal"
        state = step(state, jnp.int32(action), jax.random.key(key))
    return state


def legal_texts(state) -> set[str]:
    return {sd.ACTION_TEXT[a] for a in np.flatnonzero(np.asarray(state.legal_action_mask))}


def test_contract():
    check_env(StarDuel(authority=10, turn_cap=4), num_games=4)


def test_registry_and_constructor():
    env = envs.make("star_duel", authority=10)
    assert isinstance(env, StarDuel) and env.authority == 10
    assert env.num_actions == 6 * sd.T + 9 == len(sd.ACTION_TEXT)
    assert env.symmetries.size == 1
    with pytest.raises(ValueError, match="authority"):
        StarDuel(authority=0)


def test_cards_and_trade_deck():
    assert len(sd.CARDS) - 3 >= 12 and len(set(sd.FACTION[3:])) == 4
    assert (sd.TRADE_DECK[3:] >= 2).all() and sd.TRADE_DECK[:3].sum() == 0
    assert sd.STARTERS[CARD["Scout"]] == 8 and sd.STARTERS[CARD["Viper"]] == 2


def test_first_player_draws_three_second_five(env):
    init = jax.jit(env.init)
    for seed in range(3):
        state = init(jax.random.key(seed))
        assert state.current_player == 0
        assert state.hand.sum() == 3 and state.deck.sum() == 7
        assert state.other_hand.sum() == 5 and state.other_deck.sum() == 5
        assert (state.hand + state.deck == sd.STARTERS).all()
        assert (state.trade_row >= 0).all() and state.trade_deck.sum() == sd.TRADE_DECK.sum() - 5
        assert state.authority.tolist() == [50, 50]


@pytest.mark.parametrize("authority", [50, 7])
def test_opening_observation_and_mask_tables_match_the_rules(authority):
    """init reads its observation and legal mask from tables; _finish computes them."""
    env = StarDuel(authority=authority, turn_cap=9)
    states = jax.jit(jax.vmap(env.init))(jax.random.split(jax.random.key(5), 64))
    computed = jax.jit(jax.vmap(env._finish))(states)
    assert len(set(np.asarray(states.hand[:, CARD["Viper"]]).tolist())) == 3  # all openings
    np.testing.assert_array_equal(states.observation, computed.observation)
    np.testing.assert_array_equal(states.legal_action_mask, computed.legal_action_mask)


def test_opening_hands_and_deals_are_uniform(env):
    """Vipers in 3 or 5 cards of 8 Scouts + 2 Vipers are hypergeometric; so is a deal."""
    keys = jax.random.split(jax.random.key(11), 4000)
    states = jax.jit(jax.vmap(env.init))(keys)
    starters = jnp.asarray(sd.STARTERS)
    dealt = jax.jit(jax.vmap(lambda r: sd._deal(starters, 3, r)))(
        jax.random.randint(jax.random.key(12), (4000, 5), 0, 1 << 16).astype(jnp.uint32)
    )
    expected = {3: [56 / 120, 56 / 120, 8 / 120], 5: [56 / 252, 140 / 252, 56 / 252]}
    for n, vipers in [
        (3, states.hand[:, CARD["Viper"]]),
        (5, states.other_hand[:, CARD["Viper"]]),
        (3, dealt[:, CARD["Viper"]]),
    ]:
        frequencies = np.bincount(np.asarray(vipers), minlength=3) / len(vipers)
        np.testing.assert_allclose(frequencies, expected[n], atol=0.03)
    rows = np.asarray(states.trade_row)  # the row is 5 of the 40 trade-deck cards
    shares = np.bincount(rows.reshape(-1), minlength=sd.T) / rows.size
    np.testing.assert_allclose(shares, sd.TRADE_DECK / sd.TRADE_DECK.sum(), atol=0.01)


def test_playing_cards_adds_trade_and_combat(position, step):
    state = position(hand=["Scout", "Scout", "Viper"])
    assert legal_texts(state) == {"play scout", "play viper", "end"}
    state = play(step, state, "play scout", "play scout", "play viper")
    assert (state.trade, state.combat) == (2, 1)
    assert (state.in_play == counts("Scout", "Scout", "Viper")).all() and state.hand.sum() == 0


def test_ally_effects_fire_once_with_a_second_card_of_the_faction(position, step):
    state = position(hand=["Courier", "Cutter", "Courier"])
    state = play(step, state, "play courier")  # +2 trade; its ally (+4 authority) waits
    assert (state.trade, state.authority[0]) == (2, 50)
    state = play(step, state, "play cutter")  # +2 trade +4 authority, both allies fire
    assert (state.trade, state.combat, state.authority[0]) == (4, 4, 58)
    state = play(step, state, "play courier")  # its own ally only
    assert (state.trade, state.combat, state.authority[0]) == (6, 4, 62)


def test_a_base_in_play_is_an_ally_and_fires_at_the_start_of_its_turn(position, step, finish):
    state = position(hand=["Hive"], deck=["Scout"] * 8, other_deck=["Scout"] * 5)
    state = play(step, state, "play hive")  # base: +1 combat now
    assert state.combat == 1 and state.bases[CARD["Hive"]] == 1
    state = play(step, state, "end", "end")  # back to player 0 with the Hive still in play
    assert state.current_player == 0 and (state.trade, state.combat) == (0, 1)
    hand_before = int(state.hand.sum())
    assert hand_before == 5 and state.ally_pending[sd.FACTION[CARD["Hive"]]] == CARD["Hive"]
    state = finish(state.replace(zones=state.zones.at[sd.Z_HAND, CARD["Stinger"]].add(1)))
    state = play(step, state, "play stinger")  # +3; allies: the Stinger draws, the Hive +2
    assert state.combat == 1 + 3 + 2
    assert state.hand.sum() == hand_before + 1  # gained the Stinger, played it, drew one


def test_scrap_ability_removes_the_card_for_its_effect(position, step):
    state = position(in_play=["Explorer"], bases=["Battle Station"], discard=["Scout"])
    assert {"scrap explorer for its ability", "scrap battle station for its ability"} <= (
        legal_texts(state)
    )
    state = play(
        step, state, "scrap explorer for its ability", "scrap battle station for its ability"
    )
    assert state.combat == 2 + 5
    assert state.in_play.sum() == 0 and state.bases.sum() == 0 and state.discard.sum() == 1
    assert state.faction_count.sum() == 0


def test_scrap_choice_from_hand_or_discard_pile(position, step):
    state = position(hand=["Drone", "Drone", "Viper"], discard=["Scout"])
    state = play(step, state, "play drone")  # +1 trade, may scrap a card
    assert state.scrap_pending == 1
    assert legal_texts(state) == {
        "scrap drone from hand",
        "scrap viper from hand",
        "scrap scout from discard",
        "scrap nothing",
    }
    state = play(step, state, "scrap scout from discard")
    assert state.discard.sum() == 0 and state.scrap_pending == 0 and "end" in legal_texts(state)
    state = play(step, state, "play drone", "scrap viper from hand")
    assert state.hand.sum() == 0 and state.in_play[CARD["Drone"]] == 2
    assert state.trade == 2 and state.combat == 4  # both Drones' allies: +2 combat each
    state = position(hand=["Smelter"], discard=["Scout"])
    state = play(step, state, "play smelter", "scrap nothing")
    assert state.scrap_pending == 0 and state.discard.sum() == 1


def test_outposts_must_fall_first(position, step):
    state = position(other_bases=["Bastion", "Hive"], combat=10)
    assert legal_texts(state) == {"attack bastion", "end"}
    state = play(step, state, "attack bastion")
    assert state.combat == 5 and state.other_discard[CARD["Bastion"]] == 1
    assert legal_texts(state) == {"attack hive", "attack player", "end"}
    state = play(step, state, "attack player")
    assert state.combat == 0 and state.authority[1] == 45 and not state.terminated


def test_attacking_a_base_needs_its_defence(position):
    state = position(other_bases=["Citadel"], combat=5)
    assert legal_texts(state) == {"end"}


def test_buying_refills_the_slot_from_the_trade_deck(position, step):
    state = position(trade_row=["Warlord", "Courier"], trade_deck=["Frigate", "Frigate"], trade=9)
    assert {"buy 0", "buy 1", "buy explorer"} <= legal_texts(state)
    assert "buy 2" not in legal_texts(state)  # an empty slot
    state = play(step, state, "buy 0")
    assert state.trade == 2 and state.discard[CARD["Warlord"]] == 1
    assert state.trade_row.tolist() == [CARD["Frigate"], CARD["Courier"], -1, -1, -1]
    assert state.trade_deck[CARD["Frigate"]] == 1
    state = play(step, state, "buy explorer")
    assert state.trade == 0 and state.discard[CARD["Explorer"]] == 1


def test_a_refill_is_drawn_in_proportion_to_the_trade_deck(env, position):
    state = position(trade_row=["Courier"], trade_deck=["Frigate"] + ["Stinger"] * 3, trade=1)
    buy = jax.jit(jax.vmap(env.step, in_axes=(None, None, 0)))
    after = buy(
        state, jnp.int32(env.text_to_action("buy 0")), jax.random.split(jax.random.key(2), 2000)
    )
    refills = np.asarray(after.trade_row[:, 0])
    assert set(refills.tolist()) == {CARD["Frigate"], CARD["Stinger"]}
    assert abs((refills == CARD["Stinger"]).mean() - 0.75) < 0.03  # 3 sd of 2000 draws
    taken = np.asarray(after.trade_deck)  # the refill left the trade deck
    np.testing.assert_array_equal(taken.sum(1), 3)
    np.testing.assert_array_equal(
        taken[np.arange(2000), refills], np.where(refills == CARD["Frigate"], 0, 2)
    )


def test_an_exhausted_trade_deck_leaves_the_slot_empty(position, step):
    state = position(trade_row=["Courier"], trade_deck=[], trade=1)
    state = play(step, state, "buy 0")
    assert state.trade_row.tolist() == [-1] * 5 and "buy 0" not in legal_texts(state)


def test_end_turn_discards_draws_five_and_passes(position, step):
    state = position(
        hand=["Viper"], in_play=["Scout"], bases=["Hive"], deck=["Scout"] * 7, trade=3, combat=2
    )
    state = play(step, state, "end")
    assert state.current_player == 1 and state.turn == 1
    assert (state.trade, state.combat) == (0, 0)
    assert state.other_hand.sum() == 5 and state.other_deck.sum() == 2
    assert (state.other_discard == counts("Viper", "Scout")).all()
    assert state.other_bases[CARD["Hive"]] == 1  # bases stay


def test_reshuffle_when_the_deck_runs_out(position, step):
    for key in range(4):
        state = position(hand=["Viper"], deck=["Courier", "Cutter"], discard=["Scout"] * 5)
        state = play(step, state, "end", key=key)
        hand, deck = state.other_hand, state.other_deck
        assert hand.sum() == 5 and deck.sum() == 3 and state.other_discard.sum() == 0
        assert hand[CARD["Courier"]] == 1 and hand[CARD["Cutter"]] == 1  # the old deck first
        assert (hand + deck == counts("Viper", "Courier", "Cutter", *["Scout"] * 5)).all()


def test_a_short_deck_and_discard_draw_what_there_is(position, step):
    state = position(hand=["Viper"], deck=["Scout"])
    state = play(step, state, "end")
    assert state.other_hand.sum() == 2 and state.other_deck.sum() == 0


def test_draw_effect(position, step):
    state = position(hand=["Corvette"], deck=["Scout", "Viper"])
    state = play(step, state, "play corvette")
    assert state.combat == 1 and state.hand.sum() == 1 and state.deck.sum() == 1


def test_opponent_discards_at_the_start_of_their_turn(position, step):
    state = position(hand=["Frigate"], other_hand=["Scout", "Scout", "Viper", "Cutter", "Scout"])
    state = play(step, state, "play frigate")
    assert state.combat == 4 and state.owed_discards == 1
    state = play(step, state, "end")
    assert state.current_player == 1 and state.discard_pending == 1
    assert legal_texts(state) == {"discard scout", "discard viper", "discard cutter"}
    state = play(step, state, "discard viper")
    assert state.discard_pending == 0 and state.hand.sum() == 4
    assert state.discard[CARD["Viper"]] == 1 and "end" in legal_texts(state)


def test_authority_gain(position, step):
    state = position(hand=["Cutter"], authority=(7, 9))
    state = play(step, state, "play cutter")
    assert state.authority.tolist() == [11, 9]


def test_end_of_game(position, step):
    state = position(combat=6, authority=(50, 6))
    state = play(step, state, "attack player")
    assert state.terminated and state.rewards.tolist() == [1.0, -1.0]
    assert state.legal_action_mask.all()
    second = position(combat=6, authority=(50, 6)).replace(current_player=jnp.int32(1))
    assert play(step, second, "attack player").rewards.tolist() == [-1.0, 1.0]


def test_turn_cap_truncates():
    env = StarDuel(turn_cap=2)
    step = jax.jit(env.step)
    state = env.init(jax.random.key(0))
    end = jnp.int32(sd.END_TURN)
    state = step(state, end, jax.random.key(1))
    assert not state.truncated
    state = step(state, end, jax.random.key(2))
    assert state.truncated and not state.terminated and state.legal_action_mask.all()
    assert state.rewards.tolist() == [0.0, 0.0]


def test_same_state_and_key_give_the_same_result(env, step):
    state = env.init(jax.random.key(3))
    end = jnp.int32(sd.END_TURN)
    a, b = step(state, end, jax.random.key(7)), step(state, end, jax.random.key(7))
    jax.tree.map(np.testing.assert_array_equal, a, b)
    hands = {tuple(np.asarray(step(state, end, jax.random.key(k)).other_hand)) for k in range(8)}
    assert len(hands) > 1


def test_resample_hidden_keeps_what_the_mover_sees(env, step):
    state = play(step, env.init(jax.random.key(5)), "play scout", "end")
    resample = jax.jit(env.resample_hidden)
    hands = set()
    for k in range(8):
        new = resample(state, jax.random.key(k))
        np.testing.assert_array_equal(new.observation, state.observation)
        np.testing.assert_array_equal(env.observe(new, new.current_player), state.observation)
        np.testing.assert_array_equal(
            new.other_hand + new.other_deck, state.other_hand + state.other_deck
        )
        assert new.other_hand.sum() == state.other_hand.sum()
        for name in ["hand", "deck", "discard", "bases", "in_play", "other_bases", "other_discard"]:
            np.testing.assert_array_equal(getattr(new, name), getattr(state, name))
        hands.add(tuple(np.asarray(new.other_hand)))
    assert len(hands) > 1


def test_hidden_cards_do_not_reach_the_observation(position):
    a = position(hand=["Scout"], other_hand=["Scout", "Viper"], other_deck=["Warlord", "Scout"])
    b = position(hand=["Scout"], other_hand=["Warlord", "Scout"], other_deck=["Scout", "Viper"])
    np.testing.assert_array_equal(a.observation, b.observation)
    c = position(hand=["Viper"], other_hand=["Scout", "Viper"], other_deck=["Warlord", "Scout"])
    assert not np.array_equal(a.observation, c.observation)  # the mover's own hand shows


def test_the_other_seat_sees_its_own_hand(env, position):
    state = position(hand=["Scout"], other_hand=["Warlord"])
    own = env.observe(state, 1)
    mover = env.observe(state, 0)
    np.testing.assert_array_equal(mover, state.observation)
    np.testing.assert_array_equal(own[: sd.T], counts("Warlord"))
    np.testing.assert_array_equal(mover[: sd.T], counts("Scout"))


def test_greedy_plays_buys_the_dearest_attacks_and_ends(position, step):
    state = position(
        hand=["Scout"] * 4 + ["Viper"],
        trade_row=["Courier", "Frigate"],
        trade_deck=[],
        other_bases=["Bastion"],
    )
    greedy = jax.jit(sd.greedy_action)
    texts = []
    for k in range(9):
        action = greedy(state, jax.random.key(k))
        texts.append(sd.ACTION_TEXT[int(action)])
        state = step(state, action, jax.random.key(k))
        if texts[-1] == "end":
            break
    assert sorted(texts[:5]) == ["play scout"] * 4 + ["play viper"]
    assert texts[5:] == ["buy 1", "buy 0", "end"]  # Frigate (3) then Courier (1); combat 1 < 5


def test_greedy_beats_random():
    env = StarDuel(authority=10, turn_cap=30)

    def outcome(key):
        """Player 0's result against a uniformly random player 1."""
        k_init, k_play = jax.random.split(key)

        def body(state, k):
            k_greedy, k_random, k_step = jax.random.split(k, 3)
            greedy = sd.greedy_action(state, k_greedy)
            logits = jnp.where(state.legal_action_mask, 0.0, -1e9)
            randomly = jax.random.categorical(k_random, logits).astype(jnp.int32)
            state = env.step(state, jnp.where(state.current_player == 0, greedy, randomly), k_step)
            return state, state.rewards[0]  # paid once, on the step that ends the game

        _, rewards = jax.lax.scan(body, env.init(k_init), jax.random.split(k_play, env.max_steps))
        return rewards.sum()

    results = jax.jit(jax.vmap(outcome))(jax.random.split(jax.random.key(0), 32))
    assert float((results > 0).mean()) >= 0.9


def test_action_text_round_trip(env):
    for action in range(env.num_actions):
        assert env.text_to_action(env.action_to_text(action)) == action
    assert env.text_to_action(" Play  Scout ") == CARD["Scout"]
    assert env.text_to_action("122") == 122
    with pytest.raises(ValueError, match="'fly away' is not a move: write e.g. 'play scout'"):
        env.text_to_action("fly away")
    with pytest.raises(ValueError, match="outside 0..122"):
        env.text_to_action("123")


def test_render_shows_the_table(env, position):
    text = env.render(position(hand=["Scout", "Viper"], trade_row=["Warlord"], authority=(12, 30)))
    assert "1x Scout, 1x Viper" in text and "Warlord (7)" in text
    assert "player 0: 12" in text and "player 1: 30" in text
