"""Star Duel: a two-player deck-building duel (the structure of Star Realms, original cards).

Rules
-----
* Each player starts with ``authority`` (life, default 50) and a personal deck of 8 Scouts
  (+1 trade) and 2 Vipers (+1 combat). Player 0 moves first and starts with 3 cards in hand,
  player 1 with 5; afterwards every hand is 5 cards drawn at the end of the owner's turn.
* A shared trade deck (16 card types, 4 factions, 40 cards) feeds a trade row of 5 face-up
  slots; a bought slot is refilled at once from the trade deck (left empty once it runs out).
  Explorers (cost 2: +2 trade; scrap: +2 combat) are always available.
* Ships go to the discard pile at the end of the turn; bases stay in play until destroyed.
  A base's primary (and ally) effects apply when it is played and again at the start of each
  of its owner's later turns. Outposts must be destroyed before the player or any other base
  can be attacked. A destroyed base goes to its owner's discard pile.
* Effects: trade, combat, authority gain, draw cards, the opponent discards (at the start of
  their next turn, cards of their choosing), scrap a card from hand or discard pile (optional,
  cards of the mover's choosing).
* Ally effects are automatic: a card's ally effect fires as soon as another card of its
  faction is in play this turn (bases in play count), once per card. Scrap abilities remove
  the card from play (and the game) for a one-off effect, whenever its owner chooses.
* A turn is any number of actions by the same player and ends with ``END_TURN``: unused trade
  and combat are lost, hand and ships go to the discard pile, the player draws 5 (shuffling
  the discard pile into the deck whenever the deck is empty) and the turn passes.
* A player whose authority drops to 0 or below loses (+1 / -1). After ``turn_cap`` turns
  the game is truncated.

Representation
--------------
Every zone is a count vector over the T = 19 card types, so a deck has no order at all:
a draw samples a card type in proportion to the deck's counts with the step's key. The state
is seat-relative: ``hand``, ``deck``, ... belong to the player to move and ``other_hand``,
... to the other player; they swap when the turn passes (``current_player`` keeps the
absolute seat). Randomness comes only from the key given to ``step``: the same state and
key give the same result.

Actions (A = 6T + 9 = 123), legal only in the matching mode:

=================  ==============  =========================================================
range              mode            meaning
=================  ==============  =========================================================
[0, T)             normal          play one card of type i from hand
[T, 2T)            normal          use the scrap ability of a card of type i in play
[2T, 2T+5)         normal          buy the trade-row card in slot j
2T+5               normal          buy an Explorer
2T+6               normal          attack the opponent with all remaining combat
[2T+7, 3T+7)       normal          destroy one opponent base of type i (costs its defence)
[3T+7, 4T+7)       scrap choice    scrap a card of type i from hand
[4T+7, 5T+7)       scrap choice    scrap a card of type i from the discard pile
[5T+7, 6T+7)       discard choice  discard a card of type i from hand
6T+7               scrap choice    scrap nothing more
6T+8               normal          end the turn
=================  ==============  =========================================================

A pending discard (owed by the opponent's effects) comes first, then pending scraps; while
either is pending only its choice actions are legal.

Also here: ``StarDuel.resample_hidden`` (a state the mover cannot tell apart, for
determinised search) and ``greedy_action`` (a batched heuristic opponent).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from envs import pictures, symmetry
from envs.core import Env, State, caption, state_dataclass

Array = jax.Array

FACTIONS = ("Concord", "Swarm", "Legion", "Forge")
NEUTRAL = len(FACTIONS)  # faction index of the starter cards and Explorers
EFFECTS = ("trade", "combat", "authority", "draw", "discard", "scrap")
TRADE, COMBAT, AUTHORITY, DRAW, DISCARD, SCRAP = range(len(EFFECTS))


class Card(NamedTuple):
    name: str
    faction: int
    cost: int
    copies: int  # in the trade deck
    primary: dict[str, int]
    ally: dict[str, int]
    scrap: dict[str, int]  # the card's own scrap ability; empty if it has none
    defence: int = 0  # > 0 for bases
    outpost: bool = False


CARDS = (
    Card("Scout", NEUTRAL, 0, 0, {"trade": 1}, {}, {}),
    Card("Viper", NEUTRAL, 0, 0, {"combat": 1}, {}, {}),
    Card("Explorer", NEUTRAL, 2, 0, {"trade": 2}, {}, {"combat": 2}),
    Card("Courier", 0, 1, 3, {"trade": 2}, {"authority": 4}, {}),
    Card("Cutter", 0, 2, 3, {"trade": 2, "authority": 4}, {"combat": 4}, {}),
    Card("Envoy", 0, 4, 2, {"trade": 2, "authority": 3, "draw": 1}, {"authority": 4}, {}),
    Card("Trading Post", 0, 3, 2, {"trade": 1, "authority": 1}, {}, {"combat": 3}, 4, True),
    Card("Stinger", 1, 1, 3, {"combat": 3}, {"draw": 1}, {}),
    Card("Ravager", 1, 2, 3, {"combat": 4}, {"combat": 2}, {}),
    Card("Leviathan", 1, 6, 2, {"combat": 8}, {"draw": 1}, {}),
    Card("Hive", 1, 3, 2, {"combat": 1}, {"combat": 2}, {"trade": 3}, 5),
    Card("Corvette", 2, 2, 3, {"combat": 1, "draw": 1}, {"combat": 2}, {}),
    Card("Frigate", 2, 3, 3, {"combat": 4, "discard": 1}, {"combat": 2}, {"draw": 1}),
    Card("Warlord", 2, 7, 2, {"combat": 6, "draw": 1, "discard": 1}, {"combat": 4}, {}),
    Card("Bastion", 2, 4, 2, {"combat": 2}, {"combat": 2}, {"trade": 4}, 5, True),
    Card("Drone", 3, 1, 3, {"trade": 1, "scrap": 1}, {"combat": 2}, {}),
    Card("Smelter", 3, 3, 3, {"combat": 2, "scrap": 1}, {"trade": 2}, {}),
    Card("Battle Station", 3, 3, 2, {"combat": 1}, {}, {"combat": 5}, 5, True),
    Card("Citadel", 3, 6, 2, {"combat": 3, "scrap": 1}, {"trade": 2}, {}, 6, True),
)
T = len(CARDS)
SCOUT, VIPER, EXPLORER = 0, 1, 2
ROW = 5  # trade-row slots
HAND = 5  # cards drawn at the end of a turn
FIRST_HAND = 3  # the first player's opening hand
STARTERS = np.zeros(T, np.int32)
STARTERS[[SCOUT, VIPER]] = 8, 2


def _effect_table(field: str) -> np.ndarray:
    table = np.zeros((T + 1, len(EFFECTS)), np.int32)  # row T: "no card", all zero
    for i, card in enumerate(CARDS):
        for name, value in getattr(card, field).items():
            table[i, EFFECTS.index(name)] = value
    return table


PRIMARY = _effect_table("primary")  # int32 [T+1, 6]
ALLY = _effect_table("ally")  # int32 [T+1, 6]
SCRAP_ABILITY = _effect_table("scrap")  # int32 [T+1, 6]
FACTION = np.array([c.faction for c in CARDS], np.int32)  # int32 [T]
FACTION_ONEHOT = np.eye(NEUTRAL + 1, dtype=np.int32)[FACTION]  # int32 [T, F+1]
COST = np.array([c.cost for c in CARDS] + [1 << 20], np.int32)  # int32 [T+1]; T: empty slot
DEFENCE = np.array([c.defence for c in CARDS], np.int32)  # int32 [T]
IS_BASE = DEFENCE > 0  # bool [T]
IS_OUTPOST = np.array([c.outpost for c in CARDS])  # bool [T]
HAS_SCRAP = SCRAP_ABILITY[:T].any(axis=1)  # bool [T]
TRADE_DECK = np.array([c.copies for c in CARDS], np.int32)  # int32 [T]
# Cards drawn by one action are bounded by a hand (a draw takes that many random numbers): a
# played card's primary and ally plus a waiting ally of its faction, or a scrap ability.
_ALLY_DRAW = [ALLY[:T][FACTION == f, DRAW].max(initial=0) for f in range(NEUTRAL + 1)]
MAX_ACTION_DRAW = int(
    max(
        max(PRIMARY[i, DRAW] + ALLY[i, DRAW] + _ALLY_DRAW[FACTION[i]] for i in range(T)),
        SCRAP_ABILITY[:, DRAW].max(),
    )
)
assert MAX_ACTION_DRAW <= HAND
# Bases fire again at the start of their owner's turn, when only trade, combat, authority
# and scrap choices make sense: no base draws or makes the opponent discard.
assert not (
    PRIMARY[:T][IS_BASE][:, [DRAW, DISCARD]].any() or ALLY[:T][IS_BASE][:, [DRAW, DISCARD]].any()
)

# Action layout.
PLAY, ABILITY, BUY = 0, T, 2 * T
BUY_EXPLORER = 2 * T + ROW
ATTACK_PLAYER = BUY_EXPLORER + 1
ATTACK_BASE = ATTACK_PLAYER + 1
SCRAP_HAND = ATTACK_BASE + T
SCRAP_DISCARD = SCRAP_HAND + T
DISCARD_HAND = SCRAP_DISCARD + T
SCRAP_NOTHING = DISCARD_HAND + T
END_TURN = SCRAP_NOTHING + 1
NUM_ACTIONS = END_TURN + 1
_BLOCKS = ((PLAY, T), (ABILITY, T), (BUY, ROW), (BUY_EXPLORER, 1), (ATTACK_PLAYER, 1),
           (ATTACK_BASE, T), (SCRAP_HAND, T), (SCRAP_DISCARD, T), (DISCARD_HAND, T),
           (SCRAP_NOTHING, 1), (END_TURN, 1))  # fmt: skip
ACTION_KIND = np.concatenate([np.full(n, start, np.int32) for start, n in _BLOCKS])  # [A]
ACTION_INDEX = np.arange(NUM_ACTIONS, dtype=np.int32) - ACTION_KIND  # int32 [A]: i or slot j


# Zones: the rows of the state's count table, laid out so that reversing the rows swaps the
# two sides (hand <-> other_hand, ...; the ships in play stay in the middle) and the rows the
# mover may see come first.
ZONES = ("hand", "deck", "discard", "bases", "in_play", "other_bases", "other_discard",
         "other_deck", "other_hand")  # fmt: skip
Z_HAND, Z_DECK, Z_DISCARD, Z_BASES, Z_IN_PLAY = range(5)
Z_OTHER_BASES, Z_OTHER_DISCARD, Z_OTHER_DECK, Z_OTHER_HAND = range(5, 9)
Z = len(ZONES)


def _zone_rows(*rows: int) -> np.ndarray:
    """int32 [Z, 1]: a column selecting ``rows``, to broadcast one [T] vector onto them."""
    column = np.zeros((Z, 1), np.int32)
    column[list(rows)] = 1
    return column


def _action_tables() -> tuple[np.ndarray, np.ndarray]:
    """Everything about each action known before looking at the state.

    Returns ``info`` int32 [A, 19] with columns: kind, slot, card (T: none, or the card in a
    trade-row slot), cost, combat spent, faction change (+1 play, -1 scrap ability),
    faction, 6 effects, 6 ally effects; and ``moves`` int32 [A, Z], how many copies of the
    action's card enter (+) or leave (-) each zone.
    """
    info = np.zeros((NUM_ACTIONS, 7 + 2 * len(EFFECTS)), np.int32)
    moves = np.zeros((NUM_ACTIONS, Z), np.int32)
    info[:, 0], info[:, 1], info[:, 2], info[:, 6] = ACTION_KIND, ACTION_INDEX, T, NEUTRAL
    for a in range(NUM_ACTIONS):
        kind, i = ACTION_KIND[a], ACTION_INDEX[a]
        if kind in (BUY, BUY_EXPLORER):
            info[a, 2:4] = (T, 0) if kind == BUY else (EXPLORER, COST[EXPLORER])
            moves[a, Z_DISCARD] = 1
        elif kind == PLAY:
            info[a, 2], info[a, 5:7] = i, (1, FACTION[i])
            info[a, 7:13], info[a, 13:19] = PRIMARY[i], ALLY[i]
            moves[a, [Z_HAND, Z_BASES if IS_BASE[i] else Z_IN_PLAY]] = -1, 1
        elif kind == ABILITY:
            info[a, 2], info[a, 5:7], info[a, 7:13] = i, (-1, FACTION[i]), SCRAP_ABILITY[i]
            moves[a, Z_BASES if IS_BASE[i] else Z_IN_PLAY] = -1
        elif kind == ATTACK_BASE:
            info[a, 2], info[a, 4] = i, DEFENCE[i]
            moves[a, [Z_OTHER_BASES, Z_OTHER_DISCARD]] = -1, 1
        elif kind == SCRAP_HAND:
            info[a, 2], moves[a, Z_HAND] = i, -1
        elif kind == SCRAP_DISCARD:
            info[a, 2], moves[a, Z_DISCARD] = i, -1
        elif kind == DISCARD_HAND:
            info[a, 2] = i
            moves[a, [Z_HAND, Z_DISCARD]] = -1, 1
    return info, moves


ACTION_INFO, ACTION_MOVES = _action_tables()
TYPES = np.arange(T, dtype=np.int32)
_UPPER = np.triu(np.ones((T, T), np.float32))  # x @ _UPPER: cumulative sums of x


def _viper_thresholds(n: int) -> np.ndarray:
    """int32 [2]: 16-bit thresholds of P(at most v Vipers among n starting cards), v = 0, 1."""
    from math import comb

    scouts, vipers = int(STARTERS[SCOUT]), int(STARTERS[VIPER])
    p = [comb(vipers, v) * comb(scouts, n - v) / comb(scouts + vipers, n) for v in range(3)]
    return np.round(np.cumsum(p)[:2] * 65536).astype(np.int32)


def _start_zones() -> np.ndarray:
    """int32 [3, 3, Z, T]: the opening zones by the Vipers in the first and second hands."""
    zones = np.zeros((3, 3, Z, T), np.int32)
    for first, second in np.ndindex(3, 3):
        for hand, deck, n, vipers in [(Z_HAND, Z_DECK, FIRST_HAND, first),
                                      (Z_OTHER_HAND, Z_OTHER_DECK, HAND, second)]:  # fmt: skip
            zones[first, second, hand, [SCOUT, VIPER]] = n - vipers, vipers
            zones[first, second, deck] = STARTERS - zones[first, second, hand]
    return zones


# Per base type: its faction (one-hot), its primary effects, and its type per faction.
_BASE_TABLE = np.concatenate(
    [FACTION_ONEHOT, PRIMARY[:T], TYPES[:, None] * FACTION_ONEHOT], axis=1
).astype(np.float32)  # float32 [T, 2F+8]

# A starting hand is fixed by its number of Vipers, which is hypergeometric: one 16-bit
# number against these thresholds picks it, instead of a deal.
_VIPERS_IN = {n: _viper_thresholds(n) for n in (FIRST_HAND, HAND)}
START_ZONES = _start_zones()

# Observation: the visible zones (hand, deck, discard, bases, in play, other bases, other
# discard), the other's hand-plus-deck pool, the trade deck, the trade row as ROW one-hot
# vectors, 10 scalars, the mover's cards in play per faction and the factions whose ally
# effect waits.
OBSERVATION_SIZE = 9 * T + ROW * T + 10 + 2 * (NEUTRAL + 1)
_OBS_AUTHORITY = 9 * T + ROW * T  # where the scalars start
_OBS_TURN = _OBS_AUTHORITY + 8

# The opening legal mask by the Vipers in the first hand: the first player holds only Scouts
# and Vipers, with no trade, no combat and nothing in play, and every trade-row card costs.
assert COST[:T][TRADE_DECK > 0].min() > 0
START_LEGAL = np.zeros((3, NUM_ACTIONS), bool)
START_LEGAL[:, [PLAY + SCOUT, END_TURN]] = True
START_LEGAL[1:, PLAY + VIPER] = True


def _start_observation(authority: int) -> np.ndarray:
    """float32 [3, 3, OBS]: the opening observation by the Vipers in the two opening hands.

    The trade deck and the trade row (random) are left zero; see :func:`_observation`.
    """
    obs = np.zeros((3, 3, OBSERVATION_SIZE), np.float32)
    obs[..., : 7 * T] = START_ZONES[:, :, :Z_OTHER_DECK].reshape(3, 3, -1)
    obs[..., 7 * T : 8 * T] = STARTERS  # the other's hand-plus-deck pool
    # both authorities over the starting authority, in _observation's float32 arithmetic
    obs[..., _OBS_AUTHORITY : _OBS_AUTHORITY + 2] = np.float32(authority) * np.float32(
        1 / authority
    )
    obs[..., _OBS_AUTHORITY + 4] = HAND  # the other's hand size
    obs[..., _OBS_AUTHORITY + 9] = 1  # the viewer is the mover
    return obs


def _zone(name: str) -> property:
    row = ZONES.index(name)
    return property(lambda self: self.zones[..., row, :], doc=f"int32 [..., T]: {name} counts")


@state_dataclass
class StarDuelState(State):
    """The table, seat-relative: the plain zones are the mover's, ``other_*`` the other's."""

    zones: Array  # int32 [Z, T]  card counts per zone (rows: ZONES) and type
    trade_deck: Array  # int32 [T]
    trade_row: Array  # int32 [ROW]   card type per slot, -1 empty
    authority: Array  # int32 [2]     [mover, other]
    trade: Array  # int32 []
    combat: Array  # int32 []
    faction_count: Array  # int32 [F+1]   the mover's cards in play per faction (last: neutral)
    ally_pending: Array  # int32 [F+1]   the faction's one card whose ally waits; T if none
    discard_pending: Array  # int32 []      cards the mover must discard now
    scrap_pending: Array  # int32 []      cards the mover may scrap now
    owed_discards: Array  # int32 []      cards the other discards when their turn starts
    turn: Array  # int32 []      turns completed

    hand, deck, discard, bases = _zone("hand"), _zone("deck"), _zone("discard"), _zone("bases")
    other_hand, other_deck = _zone("other_hand"), _zone("other_deck")
    other_discard, other_bases = _zone("other_discard"), _zone("other_bases")
    in_play = _zone("in_play")


class StarDuel(Env[StarDuelState]):
    """Star Duel with ``authority`` life points, truncated after ``turn_cap`` turns."""

    id = "star_duel"
    num_actions = NUM_ACTIONS
    observation_shape = (OBSERVATION_SIZE,)
    has_hidden_information = True  # the other player's hand: resample_hidden redeals it
    turns_alternate = False  # a turn is many actions of one player

    def __init__(self, authority: int = 50, turn_cap: int = 200):
        if authority < 1 or turn_cap < 1:
            raise ValueError(f"need authority >= 1 and turn_cap >= 1, got {authority}, {turn_cap}")
        self.authority = authority
        self.turn_cap = turn_cap
        # A turn averages under 10 actions; this cap in actions only backs up turn_cap.
        self.max_steps = 40 * turn_cap
        self.symmetries = symmetry.identity(OBSERVATION_SIZE, NUM_ACTIONS)
        self._start_observation = _start_observation(authority)

    def step(self, state: StarDuelState, action: Array, key: Array | None = None) -> StarDuelState:
        """:meth:`Env.step`, then truncation once ``turn_cap`` turns have been played."""
        nxt = super().step(state, action, key)
        capped = ~nxt.terminated & (nxt.turn >= self.turn_cap)
        # Stored once: callers test them on every element of the state (auto-reset selects).
        ended = _once(jnp.stack([nxt.terminated, nxt.truncated | capped]).astype(jnp.int32))
        return nxt.replace(
            terminated=ended[0] > 0,
            truncated=ended[1] > 0,
            legal_action_mask=nxt.legal_action_mask | (ended[1] > 0),
        )

    def _init(self, key: Array) -> StarDuelState:
        bits = _random16(key, ROW + 2)
        positions, cum = _positions(jnp.asarray(TRADE_DECK), ROW, bits[:ROW])
        trade_row = (cum <= positions[:, None]).sum(-1, dtype=jnp.int32)  # int32 [ROW] types
        row = (trade_row[:, None] == jnp.asarray(TYPES)).sum(0, dtype=jnp.int32)  # [T] counts
        vipers = [(r.astype(jnp.int32) >= jnp.asarray(_VIPERS_IN[n])).sum() for n, r in
                  [(FIRST_HAND, bits[ROW]), (HAND, bits[ROW + 1])]]  # fmt: skip
        zones = jnp.asarray(START_ZONES)[vipers[0], vipers[1]]
        trade_deck = jnp.asarray(TRADE_DECK) - row
        # The observation and the legal mask from tables (as _finish would compute them).
        start = jnp.asarray(self._start_observation)[vipers[0], vipers[1]]  # float32 [OBS]
        slots = (trade_row[:, None] == jnp.asarray(TYPES)).reshape(-1)  # bool [ROW * T]
        observation = jnp.concatenate([
            start[: 8 * T], trade_deck.astype(jnp.float32), slots.astype(jnp.float32),
            start[_OBS_AUTHORITY:],
        ])  # fmt: skip
        zero = jnp.int32(0)
        return StarDuelState(
            current_player=zero,
            observation=observation,
            legal_action_mask=jnp.asarray(START_LEGAL)[vipers[0]],
            rewards=jnp.zeros(2, jnp.float32),
            terminated=jnp.bool_(False),
            truncated=jnp.bool_(False),
            step_count=zero,
            zones=zones,
            trade_deck=trade_deck,
            trade_row=trade_row,
            authority=jnp.full(2, self.authority, jnp.int32),
            trade=zero,
            combat=zero,
            faction_count=jnp.zeros(NEUTRAL + 1, jnp.int32),
            ally_pending=jnp.full(NEUTRAL + 1, T, jnp.int32),
            discard_pending=zero,
            scrap_pending=zero,
            owed_discards=zero,
            turn=zero,
        )

    def _step(self, state: StarDuelState, action: Array, key: Array) -> StarDuelState:
        s = _act(state, action, _random16(key, HAND + 1))
        s = _pass_turn(s, action == END_TURN)
        won = s.authority[1] <= 0  # only an attack lowers authority, and it keeps the turn
        mover_wins = jnp.where(jnp.arange(2) == state.current_player, 1.0, -1.0)
        s = s.replace(rewards=jnp.where(won, mover_wins, 0.0).astype(jnp.float32), terminated=won)
        return self._finish(s)

    def _finish(self, s: StarDuelState) -> StarDuelState:
        return s.replace(observation=_observation(s, True, self), legal_action_mask=_legal(s))

    def _observe(self, state: StarDuelState, player: Array) -> Array:
        other = player != state.current_player
        view = jax.tree.map(lambda a, b: jnp.where(other, a, b), _swap_sides(state), state)
        return _observation(view, ~other, self)

    def resample_hidden(self, state: StarDuelState, key: Array) -> StarDuelState:
        """A state the mover cannot tell from ``state``: the other player's hand is redealt.

        The mover sees everything except the other player's hand and the order of the decks,
        and decks have no order here; so the hidden part is which cards of the other player's
        hand-plus-deck pool (a multiset the mover knows) are in the hand. The hand keeps its
        size (at most 5 between turns, the size of a drawn hand); the observation and every
        multiset the mover can see are unchanged.
        """
        pool = state.other_hand + state.other_deck  # int32 [T]
        bits = _random16(key, HAND)
        hand = _deal(pool, jnp.minimum(state.other_hand.sum(), HAND), bits)
        zones = state.zones + _move(state.other_hand - hand, Z_OTHER_HAND, Z_OTHER_DECK)
        return state.replace(zones=zones)

    def render(self, state: StarDuelState) -> str:
        def cards(counts) -> str:
            listed = [f"{int(n)}x {CARDS[i].name}" for i, n in enumerate(np.asarray(counts)) if n]
            return ", ".join(listed) or "-"

        me, you = int(state.current_player), 1 - int(state.current_player)
        row = [f"{CARDS[c].name} ({CARDS[c].cost})" if c >= 0 else "-" for c in state.trade_row]
        lines = [
            f"turn {int(state.turn) + 1}: player {me} to move",
            f"authority   player {me}: {int(state.authority[0])}"
            f"   player {you}: {int(state.authority[1])}",
            f"trade {int(state.trade)}   combat {int(state.combat)}",
            f"hand        {cards(state.hand)}",
            f"in play     {cards(state.in_play)}",
            f"bases       {cards(state.bases)}",
            f"their bases {cards(state.other_bases)}",
            f"trade row   {' | '.join(row)}",
            f"deck {int(state.deck.sum())}   discard {int(state.discard.sum())}   their hand "
            f"{int(state.other_hand.sum())}   their deck {int(state.other_deck.sum())}",
        ]
        if state.discard_pending:
            lines.append(f"must discard {int(state.discard_pending)}")
        if state.scrap_pending:
            lines.append(f"may scrap {int(state.scrap_pending)}")
        if state.terminated or state.truncated:
            lines.append("game over")
        return "\n".join(lines)

    def to_svg(self, state: StarDuelState) -> str:
        """Authority, trade and combat, then the mover's hand, cards in play and bases, the
        opponent's bases and the trade row (costs in brackets), as rows of cards."""

        def cards(counts) -> list[str]:
            return [f"{CARDS[i].name}" + (f" x{int(n)}" if n > 1 else "")
                    for i, n in enumerate(np.asarray(counts)) if n]  # fmt: skip

        me, you = int(state.current_player), 1 - int(state.current_player)
        header = [
            f"player {me} to move, turn {int(state.turn) + 1}",
            f"authority: player {me} {int(state.authority[0])}, player {you} "
            f"{int(state.authority[1])}   trade {int(state.trade)}   combat {int(state.combat)}",
            f"deck {int(state.deck.sum())}, discard {int(state.discard.sum())}; their hand "
            f"{int(state.other_hand.sum())}, their deck {int(state.other_deck.sum())}",
        ]
        row = [f"{CARDS[c].name} ({CARDS[c].cost})" for c in np.asarray(state.trade_row) if c >= 0]
        rows = [("hand", cards(state.hand)), ("in play", cards(state.in_play)),
                ("bases", cards(state.bases)), ("their bases", cards(state.other_bases)),
                ("trade row", row)]  # fmt: skip
        return pictures.cards_svg(header, rows, caption(self, state))

    def action_to_text(self, action: int) -> str:
        return ACTION_TEXT[int(action)]

    def text_to_action(self, text: str) -> int:
        """Parse ``play scout``, ``buy 2``, ``attack bastion``, ``end`` ... or an action number."""
        words = " ".join(text.lower().split())
        if words in _TEXT_ACTION:
            return _TEXT_ACTION[words]
        if not words.isdigit():
            raise ValueError(
                f"{text.strip()!r} is not a move: write e.g. 'play scout', 'buy 2', "
                "'attack player', 'end', or an action number"
            )
        return super().text_to_action(text)


def _action_text(action: int) -> str:
    kind, i = int(ACTION_KIND[action]), int(ACTION_INDEX[action])
    name = CARDS[min(i, T - 1)].name.lower()
    return {
        PLAY: f"play {name}",
        ABILITY: f"scrap {name} for its ability",
        BUY: f"buy {i}",
        BUY_EXPLORER: "buy explorer",
        ATTACK_PLAYER: "attack player",
        ATTACK_BASE: f"attack {name}",
        SCRAP_HAND: f"scrap {name} from hand",
        SCRAP_DISCARD: f"scrap {name} from discard",
        DISCARD_HAND: f"discard {name}",
        SCRAP_NOTHING: "scrap nothing",
        END_TURN: "end",
    }[kind]


ACTION_TEXT = tuple(_action_text(a) for a in range(NUM_ACTIONS))
_TEXT_ACTION = {text: a for a, text in enumerate(ACTION_TEXT)}


def _random16(key: Array, n: int) -> Array:
    """uint32 [n]: independent uniform 16-bit numbers, two from each random word."""
    words = jax.random.bits(key, ((n + 1) // 2,), jnp.uint32)
    return jnp.concatenate([words >> 16, words & 0xFFFF])[:n]


def _once(x: Array) -> Array:
    """int32 ``x`` (small integers), computed once for all its readers.

    XLA on CPU copies a fused producer into each of its consumers (and drops optimization
    barriers), so a chain that feeds many elementwise ops, or a [T] vector broadcast over
    the zones, is recomputed for every element it reaches. It never fuses through a dot: a
    product with the identity (float32, exact for these counts) stores the value once.
    """
    eye = jnp.eye(x.shape[-1], dtype=jnp.float32)
    return (x.astype(jnp.float32) @ eye).astype(jnp.int32)


def _move(cards: Array, source: int, target: int) -> Array:
    """int32 [Z, T]: the change in the zones when ``cards`` move from ``source`` to ``target``."""
    return jnp.asarray(_zone_rows(target) - _zone_rows(source)) * cards


def _positions(cards: Array, k: Array | int, bits: Array) -> tuple[Array, Array]:
    """A uniform k-subset of the positions of ``cards`` laid out in type order.

    Positions ``[cum - cards, cum)`` hold type t. Needs ``k <= cards.sum()`` and
    ``k <= len(bits)`` (uniform 16-bit numbers). Floyd's algorithm: k scalar steps, no
    per-card loop. Returns int32 [K] positions (``cards.sum()`` marks "no card", beyond k)
    and the int32 [T] cumulative counts.
    """
    cum = (cards.astype(jnp.float32) @ jnp.asarray(_UPPER)).astype(jnp.int32)  # int32 [T]
    size = cum[-1]
    chosen: list[Array] = []
    for i in range(bits.shape[0]):
        top = size - k + i  # Floyd: a uniform position in [0, top], or top if already taken
        pick = (bits[i] * (top + 1).astype(jnp.uint32) >> 16).astype(jnp.int32)
        taken = jnp.any(jnp.stack([pick == c for c in chosen])) if chosen else False
        chosen.append(jnp.where(i < k, jnp.where(taken, top, pick), size))
    return _once(jnp.stack(chosen)), cum  # stored: not recomputed for every card type


def _deal(cards: Array, k: Array, bits: Array) -> Array:
    """int32 [T]: the counts of ``k`` cards taken uniformly at random from ``cards``."""
    positions, cum = _positions(cards, k, bits)
    low = cum - cards
    drawn = sum(((p >= low) & (p < cum)).astype(jnp.int32) for p in positions)
    return _once(drawn)


def _zones_after(zones: Array, moved: Array, end: Array, n: Array, bits: Array) -> Array:
    """int32 [Z, T]: the zones after an action moved ``moved`` and the mover drew ``n`` cards.

    ``moved`` (int32 [Z, T]) is the action's own change; at the end of a turn (``end``) the
    hand and the ships in play go to the discard pile first. Then the mover draws ``n``
    (<= len(bits)) random cards: when the deck runs out with cards still due, the player
    takes the whole deck, shuffles the discard pile into a new deck and draws the rest from
    it (as many as there are). At the end of a turn the result is seen from the next
    mover's side (rows reversed). Built row by row from a few [T] vectors and concatenated:
    XLA stores a concatenation once, so its readers do not recompute the chain.
    """
    row = lambda z: zones[z] + moved[z]  # int32 [T]
    hand, deck = jnp.where(end, 0, row(Z_HAND)), zones[Z_DECK]
    discard = row(Z_DISCARD) + jnp.where(end, zones[Z_HAND] + zones[Z_IN_PLAY], 0)
    size = deck.sum()
    shuffle = n > size
    source = jnp.where(shuffle, discard, deck)  # int32 [T]
    drawn = _deal(source, jnp.minimum(jnp.where(shuffle, n - size, n), source.sum()), bits)
    rows = [
        hand + drawn + jnp.where(shuffle, deck, 0),
        source - drawn,
        jnp.where(shuffle, 0, discard),
        row(Z_BASES),
        jnp.where(end, 0, row(Z_IN_PLAY)),
        row(Z_OTHER_BASES),
        row(Z_OTHER_DISCARD),
        zones[Z_OTHER_DECK],
        zones[Z_OTHER_HAND],
    ]
    turned = [jnp.where(end, rows[Z - 1 - z], rows[z]) for z in range(Z)]
    return jnp.concatenate(turned).reshape(Z, T)  # flat: batched, the batch stays major


def _act(s: StarDuelState, action: Array, bits: Array) -> StarDuelState:
    """Everything one action does before the turn passes (at ``END_TURN``, the zones are
    already seen from the next mover's side)."""
    info = jnp.asarray(ACTION_INFO)[action]  # int32 [19]
    kind, slot, cost, spent, faction_change = info[0], info[1], info[3], info[4], info[5]
    buy_slot = kind == BUY
    slot_one = jnp.arange(ROW) == slot
    card = jnp.where(buy_slot, jnp.where(slot_one, s.trade_row, 0).sum(), info[2])
    one = (jnp.asarray(TYPES) == card).astype(jnp.int32)  # int32 [T]; zero when no card
    cost = jnp.where(buy_slot, (one * jnp.asarray(COST[:T])).sum(), cost)

    # Allies: a played card of a faction already in play fires its own ally effect and that
    # of the faction's card still waiting for one.
    faction_one = jnp.arange(NEUTRAL + 1) == info[6]  # bool [F+1]
    before = jnp.where(faction_one, s.faction_count, 0).sum()
    waiting = jnp.where(faction_one, s.ally_pending, 0).sum()
    allied = (kind == PLAY) & (before > 0)
    effect = info[7:13] + allied * (info[13:19] + jnp.asarray(ALLY)[waiting])  # int32 [6]
    after = before + faction_change
    pending = jnp.where(
        kind == PLAY, jnp.where(before == 0, card, T), jnp.where(after > 0, waiting, T)
    )
    ally_pending = jnp.where(faction_one & (faction_change != 0), pending, s.ally_pending)

    moved = jnp.asarray(ACTION_MOVES)[action][:, None] * one  # int32 [Z, T]
    # A bought slot is refilled from the trade deck (left empty, -1, once it runs out).
    # One uniform position among the trade deck's cards, read as a type (as in _init).
    (pick,), cum = _positions(s.trade_deck, buy_slot & (s.trade_deck.sum() > 0), bits[HAND:])
    new_card = jnp.where(pick < cum[-1], (cum <= pick).sum(), -1)  # int32 []; -1 none
    refill = (jnp.asarray(TYPES) == new_card).astype(jnp.int32)  # int32 [T]
    # The end of a turn: hand and ships to the discard pile, then a fresh hand is drawn.
    end = kind == END_TURN
    zones = _zones_after(s.zones, moved, end, jnp.where(end, HAND, effect[DRAW]), bits[:HAND])

    attack = jnp.where(kind == ATTACK_PLAYER, s.combat, 0)
    scrapped = (kind == SCRAP_HAND) | (kind == SCRAP_DISCARD)
    return s.replace(
        zones=zones,
        trade_deck=s.trade_deck - refill,
        trade_row=jnp.where(buy_slot & slot_one, new_card, s.trade_row),
        authority=s.authority + jnp.stack([effect[AUTHORITY], -attack]),
        trade=s.trade + effect[TRADE] - cost,
        combat=s.combat + effect[COMBAT] - spent - attack,
        faction_count=s.faction_count + faction_one * faction_change,
        ally_pending=ally_pending,
        discard_pending=s.discard_pending - (kind == DISCARD_HAND),
        scrap_pending=jnp.where(
            kind == SCRAP_NOTHING, 0, s.scrap_pending + effect[SCRAP] - scrapped
        ),
        owed_discards=s.owed_discards + effect[DISCARD],
    )


def _swap_sides(s: StarDuelState) -> StarDuelState:
    """The same table seen from the other seat (only the per-player zones and authority move)."""
    return s.replace(zones=s.zones[::-1], authority=s.authority[::-1])


def _pass_turn(s: StarDuelState, end: Array) -> StarDuelState:
    """Where ``end``: the turn passes and the new mover's bases fire their turn-start effects.

    The zones are already the new mover's (:func:`_act` turns them); the rest swaps here.
    """
    t = s.replace(authority=s.authority[::-1])
    bases = t.bases.astype(jnp.float32)  # [T]; float products are exact and fast on CPU
    counted = (bases @ jnp.asarray(_BASE_TABLE)).astype(jnp.int32)  # int32 [2F+8]
    faction_count = counted[: NEUTRAL + 1]
    primary = counted[NEUTRAL + 1 : NEUTRAL + 7]
    # A faction with a single base in play waits for an ally: that base's type.
    alone = counted[NEUTRAL + 7 :]  # int32 [F+1]; sum of type x count, read where count is 1
    allied = faction_count[jnp.asarray(FACTION)] > 1  # bool [T]: another base of its faction
    effect = primary + ((bases * allied) @ jnp.asarray(ALLY[:T], jnp.float32)).astype(jnp.int32)
    t = t.replace(
        current_player=1 - s.current_player,
        authority=t.authority.at[0].add(effect[AUTHORITY]),
        trade=effect[TRADE],
        combat=effect[COMBAT],
        faction_count=faction_count,
        ally_pending=jnp.where(faction_count == 1, alone, T),
        discard_pending=jnp.minimum(s.owed_discards, t.hand.sum()),
        scrap_pending=effect[SCRAP],
        owed_discards=jnp.int32(0),
        turn=s.turn + 1,
    )
    return jax.tree.map(lambda a, b: jnp.where(end, a, b), t, s)


def _legal(s: StarDuelState) -> Array:
    """bool [A]: the mover's legal actions (see the module docstring's table)."""
    must_discard = s.discard_pending > 0
    choosing = ~must_discard & (s.scrap_pending > 0)
    normal = ~must_discard & ~choosing
    hand = s.hand > 0
    outposts = jnp.where(jnp.asarray(IS_OUTPOST), s.other_bases, 0).sum() > 0
    row_cost = jnp.asarray(COST)[jnp.where(s.trade_row >= 0, s.trade_row, T)]
    in_play = (s.in_play + s.bases) > 0
    attackable = (s.other_bases > 0) & (s.combat >= jnp.asarray(DEFENCE))
    attackable = attackable & (jnp.asarray(IS_OUTPOST) | ~outposts)
    mask = [
        hand & normal,
        in_play & jnp.asarray(HAS_SCRAP) & normal,
        (row_cost <= s.trade) & normal,
        jnp.stack([(s.trade >= COST[EXPLORER]) & normal, (s.combat > 0) & ~outposts & normal]),
        attackable & normal,
        hand & choosing,
        (s.discard > 0) & choosing,
        hand & must_discard,
        jnp.stack([choosing, normal]),
    ]
    return jnp.concatenate(mask)


def _observation(s: StarDuelState, is_mover: Array | bool, env: StarDuel) -> Array:
    """float32 [OBSERVATION_SIZE]: what the viewer, whose side is the plain zones, may know.

    Counts of the viewer's hand, deck, discard pile and bases; ships in play this turn; the
    other side's bases, discard pile and hand-plus-deck pool (known from what it bought and
    scrapped, never split into hand and deck); the trade deck; the trade row slot by slot
    (one-hot); then authorities (over the starting authority), trade, combat, the other's
    hand size, pending discards and scraps, discards owed by the other, turn over turn cap,
    whether the viewer is the mover; last the cards in play per faction and the factions
    with an ally effect waiting.
    """
    z = s.zones
    row = (s.trade_row[:, None] == jnp.asarray(TYPES)).reshape(-1)  # bool [ROW * T]
    scalars = jnp.stack([
        *s.authority, s.trade, s.combat, s.other_hand.sum(), s.discard_pending, s.scrap_pending,
        s.owed_discards, s.turn, jnp.int32(is_mover),
    ])  # fmt: skip
    visible = z[:Z_OTHER_DECK].reshape(-1)
    pool = z[Z_OTHER_DECK] + z[Z_OTHER_HAND]
    parts = [visible, pool, s.trade_deck, row, scalars, s.faction_count, s.ally_pending < T]
    # One integer vector, then one conversion and scaling (authority and turn as fractions).
    scale = np.ones(OBSERVATION_SIZE, np.float32)
    scale[_OBS_AUTHORITY : _OBS_AUTHORITY + 2] = 1 / env.authority
    scale[_OBS_TURN] = 1 / env.turn_cap
    return jnp.concatenate([p.astype(jnp.int32) for p in parts]).astype(jnp.float32) * scale


def greedy_action(state: StarDuelState, key: Array) -> Array:
    """int32 []: the greedy heuristic's action for the player to move (unbatched; vmap it).

    In order of preference: discard the cheapest card when a discard is owed; scrap a Scout
    or Viper from the discard pile when a scrap is offered, else scrap nothing; play any card
    from hand (allies fire by themselves); buy the most expensive affordable card (trade row
    or Explorer); destroy a base it can afford (outposts first, as the rules demand); attack
    the player; end the turn. It never uses scrap abilities. ``key`` breaks ties at random.
    """
    row_cost = jnp.asarray(COST)[jnp.where(state.trade_row >= 0, state.trade_row, T)]
    score = jnp.asarray(_GREEDY_SCORE).at[BUY : BUY + ROW].add(row_cost.astype(jnp.float32))
    score = score + jax.random.uniform(key, (NUM_ACTIONS,), maxval=0.5)
    return jnp.argmax(jnp.where(state.legal_action_mask, score, -1.0)).astype(jnp.int32)


def _greedy_score() -> np.ndarray:
    """float32 [A]: the greedy heuristic's preferences before adding row costs and noise."""
    score = np.zeros(NUM_ACTIONS, np.float32)  # scrap abilities and scraps from hand: never
    score[DISCARD_HAND : DISCARD_HAND + T] = 1000.0 - COST[:T]
    score[[SCRAP_DISCARD + SCOUT, SCRAP_DISCARD + VIPER]] = 950.0
    score[SCRAP_NOTHING] = 900.0
    score[PLAY : PLAY + T] = 800.0
    score[BUY : BUY + ROW] = 500.0
    score[BUY_EXPLORER] = 500.0 + COST[EXPLORER]
    score[ATTACK_BASE : ATTACK_BASE + T] = 400.0
    score[ATTACK_PLAYER] = 300.0
    score[END_TURN] = 100.0
    return score


_GREEDY_SCORE = _greedy_score()
