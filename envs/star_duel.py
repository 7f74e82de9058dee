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

=================  =============  ==========================================================
range              mode           meaning
=================  =============  ==========================================================
[0, T)             normal         play one card of type i from hand
[T, 2T)            normal         use the scrap ability of a card of type i in play
[2T, 2T+5)         normal         buy the trade-row card in slot j
2T+5               normal         buy an Explorer
2T+6               normal         attack the opponent with all remaining combat
[2T+7, 3T+7)       normal         destroy one opponent base of type i (costs its defence)
[3T+7, 4T+7)       scrap choice   scrap a card of type i from hand
[4T+7, 5T+7)       scrap choice   scrap a card of type i from the discard pile
[5T+7, 6T+7)       discard choice discard a card of type i from hand
6T+7               scrap choice   scrap nothing more
6T+8               normal         end the turn
=================  =============  ==========================================================

A pending discard (owed by the opponent's effects) comes first, then pending scraps; while
either is pending only its choice actions are legal.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from envs import symmetry
from envs.core import Env, State, state_dataclass

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
# Cards drawn by one action are bounded (the draw loop is unrolled to this length): a played
# card's primary and ally plus a waiting ally of its faction, or a scrap ability.
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


def _action_table() -> np.ndarray:
    """int32 [A, K]: everything about an action known before looking at the state.

    Columns: kind, slot, card (T: none or a trade-row slot's card), cost, defence, faction
    change (+1 play, -1 scrap ability), faction, 6 zone moves (hand, in play, bases,
    discard, other bases, other discard), 6 effects, 6 ally effects.
    """
    table = np.zeros((NUM_ACTIONS, 13 + 2 * len(EFFECTS)), np.int32)
    table[:, 0], table[:, 1] = ACTION_KIND, ACTION_INDEX
    table[:, 2], table[:, 6] = T, NEUTRAL
    moves = {
        SCRAP_HAND: (-1, 0, 0, 0, 0, 0),
        SCRAP_DISCARD: (0, 0, 0, -1, 0, 0),
        DISCARD_HAND: (-1, 0, 0, 1, 0, 0),
        ATTACK_BASE: (0, 0, 0, 0, -1, 1),
    }
    for a in range(NUM_ACTIONS):
        kind, i = ACTION_KIND[a], ACTION_INDEX[a]
        if kind in (BUY, BUY_EXPLORER):
            table[a, 2:4] = (T, 0) if kind == BUY else (EXPLORER, COST[EXPLORER])
            table[a, 10] = 1  # the bought card goes to the discard pile
        if kind not in (PLAY, ABILITY, ATTACK_BASE, SCRAP_HAND, SCRAP_DISCARD, DISCARD_HAND):
            continue
        table[a, 2] = i
        if kind == PLAY:
            table[a, 5:7] = 1, FACTION[i]
            table[a, 7:13] = (-1, 0, 1, 0, 0, 0) if IS_BASE[i] else (-1, 1, 0, 0, 0, 0)
            table[a, 13:19], table[a, 19:25] = PRIMARY[i], ALLY[i]
        elif kind == ABILITY:
            table[a, 5:7] = -1, FACTION[i]
            table[a, 7:13] = (0, 0, -1, 0, 0, 0) if IS_BASE[i] else (0, -1, 0, 0, 0, 0)
            table[a, 13:19] = SCRAP_ABILITY[i]
        else:
            table[a, 4] = DEFENCE[i] if kind == ATTACK_BASE else 0  # combat spent
            table[a, 7:13] = moves[kind]
    return table


ACTION_TABLE = _action_table()
TYPES = np.arange(T, dtype=np.int32)
_UPPER = np.triu(np.ones((T, T), np.int32))  # x @ _UPPER: cumulative sums of x

# Observation: 9 count vectors, the trade row as ROW one-hot vectors, 10 scalars, then the
# mover's cards in play per faction and the factions with an ally effect waiting.
OBSERVATION_SIZE = 9 * T + ROW * T + 10 + 2 * (NEUTRAL + 1)
_OBS_AUTHORITY = 9 * T + ROW * T  # where the scalars start
_OBS_TURN = _OBS_AUTHORITY + 8


@state_dataclass
class StarDuelState(State):
    """The table, seat-relative: the plain zones are the mover's, ``other_*`` the other's."""

    authority: Array  # int32 [2]    [mover, other]
    hand: Array  # int32 [T]    card counts per type
    deck: Array  # int32 [T]
    discard: Array  # int32 [T]
    bases: Array  # int32 [T]    bases in play
    other_hand: Array  # int32 [T]
    other_deck: Array  # int32 [T]
    other_discard: Array  # int32 [T]
    other_bases: Array  # int32 [T]
    in_play: Array  # int32 [T]    ships the mover played this turn
    trade_deck: Array  # int32 [T]
    trade_row: Array  # int32 [ROW]  card type per slot, -1 empty
    trade: Array  # int32 []
    combat: Array  # int32 []
    faction_count: Array  # int32 [F+1]  the mover's cards in play per faction (last: neutral)
    ally_pending: Array  # int32 [F+1]  the faction's one card whose ally waits; T if none
    discard_pending: Array  # int32 []     cards the mover must discard now
    scrap_pending: Array  # int32 []     cards the mover may scrap now
    owed_discards: Array  # int32 []     cards the other discards when their turn starts
    turn: Array  # int32 []     turns completed


class StarDuel(Env):
    """Star Duel with ``authority`` life points, truncated after ``turn_cap`` turns."""

    id = "star_duel"
    num_actions = NUM_ACTIONS
    observation_shape = (OBSERVATION_SIZE,)

    def __init__(self, authority: int = 50, turn_cap: int = 200):
        if authority < 1 or turn_cap < 1:
            raise ValueError(f"need authority >= 1 and turn_cap >= 1, got {authority}, {turn_cap}")
        self.authority = authority
        self.turn_cap = turn_cap
        # A turn rarely takes more than a few dozen actions; this cap only backs up turn_cap.
        self.max_steps = 100 * turn_cap
        self.symmetries = symmetry.identity(OBSERVATION_SIZE, NUM_ACTIONS)

    def step(self, state: StarDuelState, action: Array, key: Array | None = None) -> StarDuelState:
        """:meth:`Env.step`, then truncation once ``turn_cap`` turns have been played."""
        nxt = super().step(state, action, key)
        capped = ~nxt.terminated & (nxt.turn >= self.turn_cap)
        return nxt.replace(
            truncated=nxt.truncated | capped,
            legal_action_mask=nxt.legal_action_mask | capped,
        )

    def _init(self, key: Array) -> StarDuelState:
        bits = jax.random.bits(key, (ROW + FIRST_HAND + HAND,), jnp.uint32)
        empty = jnp.zeros(T, jnp.int32)
        starters = jnp.asarray(STARTERS)
        trade_deck, _, row = _draw(jnp.asarray(TRADE_DECK), empty, empty, ROW, bits[:ROW])
        deck, _, hand = _draw(starters, empty, empty, FIRST_HAND, bits[ROW : ROW + FIRST_HAND])
        other_deck, _, other_hand = _draw(starters, empty, empty, HAND, bits[ROW + FIRST_HAND :])
        zero = jnp.int32(0)
        state = StarDuelState(
            current_player=zero,
            observation=jnp.zeros(OBSERVATION_SIZE, jnp.float32),
            legal_action_mask=jnp.zeros(NUM_ACTIONS, jnp.bool_),
            rewards=jnp.zeros(2, jnp.float32),
            terminated=jnp.bool_(False),
            truncated=jnp.bool_(False),
            step_count=zero,
            authority=jnp.full(2, self.authority, jnp.int32),
            hand=hand,
            deck=deck,
            discard=empty,
            bases=empty,
            other_hand=other_hand,
            other_deck=other_deck,
            other_discard=empty,
            other_bases=empty,
            in_play=empty,
            trade_deck=trade_deck,
            # The drawn row is a multiset; lay it out left to right (slot order carries no rule).
            trade_row=jnp.repeat(jnp.asarray(TYPES), row, total_repeat_length=ROW),
            trade=zero,
            combat=zero,
            faction_count=jnp.zeros(NEUTRAL + 1, jnp.int32),
            ally_pending=jnp.full(NEUTRAL + 1, T, jnp.int32),
            discard_pending=zero,
            scrap_pending=zero,
            owed_discards=zero,
            turn=zero,
        )
        return self._finish(state)

    def _step(self, state: StarDuelState, action: Array, key: Array) -> StarDuelState:
        s = _act(state, action, jax.random.bits(key, (HAND + 1,), jnp.uint32))
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

        The mover sees everything except the other player's hand and every deck's order, and
        decks have no order here; so the hidden part is which cards of the other player's
        hand-plus-deck pool (a multiset the mover knows) are in the hand. The observation and
        every multiset the mover can see are unchanged; the hand keeps its size.
        """
        pool = state.other_hand + state.other_deck  # int32 [T]

        def deal(i, carry):
            deck, hand = carry
            bits = jax.random.bits(jax.random.fold_in(key, i), (1,), jnp.uint32)
            deck, _, hand = _draw(deck, jnp.zeros_like(deck), hand, 1, bits)
            return deck, hand

        start = (pool, jnp.zeros_like(pool))
        deck, hand = jax.lax.fori_loop(0, state.other_hand.sum(), deal, start)
        return state.replace(other_hand=hand, other_deck=deck)

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

    def action_to_text(self, action: int) -> str:
        return ACTION_TEXT[int(action)]

    def text_to_action(self, text: str) -> int:
        """Parse ``play scout``, ``buy 2``, ``attack bastion``, ``end`` ... or an action number."""
        words = " ".join(text.lower().split())
        if words in _TEXT_ACTION:
            return _TEXT_ACTION[words]
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


def _deal(cards: Array, k: Array, bits: Array) -> Array:
    """int32 [T]: the counts of ``k`` cards taken uniformly at random from ``cards``.

    Needs ``k <= cards.sum()`` and ``k <= len(bits)``. Lay the multiset out in type order
    (positions ``[cum - cards, cum)`` hold type t) and pick a uniform k-subset of positions
    with Floyd's algorithm, which costs k scalar steps and no per-card loop.
    """
    cum = cards @ jnp.asarray(_UPPER)  # int32 [T] cumulative counts
    size = cum[-1]
    chosen = []
    for i in range(bits.shape[0]):
        top = size - k + i  # Floyd: a uniform position in [0, top], or top if already taken
        pick = ((bits[i] >> 16) * (top + 1).astype(jnp.uint32) >> 16).astype(jnp.int32)
        taken = jnp.any(jnp.stack([pick == c for c in chosen])) if chosen else False
        chosen.append(jnp.where(i < k, jnp.where(taken, top, pick), size))  # size: no card
    # Computing the positions once before the per-type counts keeps XLA from repeating
    # the scalar chain above for every card type.
    chosen = jax.lax.optimization_barrier(chosen)
    low = cum - cards
    return sum(((p >= low) & (p < cum)).astype(jnp.int32) for p in chosen)


def _draw(deck: Array, discard: Array, hand: Array, n: Array, bits: Array):
    """Move ``n`` (<= len(bits)) random cards from ``deck`` to ``hand``.

    When the deck runs out with cards still due, the discard pile is shuffled into a new deck
    and the rest come from it (as many as there are). Returns ``(deck, discard, hand)``.
    """
    size = deck.sum()
    first = _deal(deck, jnp.minimum(n, size), bits)
    rest = n - size  # > 0: the deck runs out and the discard pile becomes the deck
    shuffle = rest > 0
    second = _deal(discard, jnp.clip(rest, 0, discard.sum()), bits)
    deck = jnp.where(shuffle, discard - second, deck - first)
    return deck, jnp.where(shuffle, 0, discard), hand + first + second


def _act(s: StarDuelState, action: Array, bits: Array) -> StarDuelState:
    """Everything one action does before the turn (possibly) passes."""
    info = jnp.asarray(ACTION_TABLE)[action]  # int32 [K]
    kind, slot, cost, defence = info[0], info[1], info[3], info[4]
    faction_change, moves, effect = info[5], info[7:13], info[13:19]
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
    effect = effect + allied * (info[19:25] + jnp.asarray(ALLY)[waiting])  # int32 [6]
    after = before + faction_change
    pending = jnp.where(
        kind == PLAY, jnp.where(before == 0, card, T), jnp.where(after > 0, waiting, T)
    )
    touched = faction_one & (faction_change != 0)
    ally_pending = jnp.where(touched, pending, s.ally_pending)

    hand = s.hand + moves[0] * one
    in_play = s.in_play + moves[1] * one
    discard = s.discard + moves[3] * one

    # A bought slot is refilled from the trade deck (left empty, -1, once it runs out).
    empty = jnp.zeros(T, jnp.int32)
    trade_deck, _, refill = _draw(s.trade_deck, empty, empty, buy_slot, bits[HAND:])
    new_card = jnp.where(refill.sum() > 0, (refill * jnp.asarray(TYPES)).sum(), -1)

    attack = jnp.where(kind == ATTACK_PLAYER, s.combat, 0)
    end = kind == END_TURN
    discard = jnp.where(end, discard + hand + in_play, discard)
    hand = jnp.where(end, 0, hand)
    # Draws: the effect's cards, or a fresh hand at the end of the turn.
    deck, discard, hand = _draw(
        s.deck, discard, hand, jnp.where(end, HAND, effect[DRAW]), bits[:HAND]
    )
    scrap_pending = (
        s.scrap_pending + effect[SCRAP] - ((kind == SCRAP_HAND) | (kind == SCRAP_DISCARD))
    )
    return s.replace(
        authority=s.authority + jnp.stack([effect[AUTHORITY], -attack]),
        hand=hand,
        deck=deck,
        discard=discard,
        bases=s.bases + moves[2] * one,
        other_bases=s.other_bases + moves[4] * one,
        other_discard=s.other_discard + moves[5] * one,
        in_play=jnp.where(end, 0, in_play),
        trade_deck=trade_deck,
        trade_row=jnp.where(buy_slot & slot_one, new_card, s.trade_row),
        trade=s.trade + effect[TRADE] - cost,
        combat=s.combat + effect[COMBAT] - defence - attack,
        faction_count=s.faction_count + faction_one * faction_change,
        ally_pending=ally_pending,
        discard_pending=s.discard_pending - (kind == DISCARD_HAND),
        scrap_pending=jnp.where(kind == SCRAP_NOTHING, 0, scrap_pending),
        owed_discards=s.owed_discards + effect[DISCARD],
    )


def _swap_sides(s: StarDuelState) -> StarDuelState:
    """The same table seen from the other seat (only the per-player fields move)."""
    return s.replace(
        authority=s.authority[::-1],
        hand=s.other_hand,
        deck=s.other_deck,
        discard=s.other_discard,
        bases=s.other_bases,
        other_hand=s.hand,
        other_deck=s.deck,
        other_discard=s.discard,
        other_bases=s.bases,
    )


def _pass_turn(s: StarDuelState, end: Array) -> StarDuelState:
    """Where ``end``: the turn passes and the new mover's bases fire their turn-start effects."""
    t = _swap_sides(s)
    factions = jnp.asarray(FACTION_ONEHOT)  # int32 [T, F+1]
    faction_count = t.bases @ factions  # int32 [F+1]
    allied = factions @ faction_count > 1  # bool [T]: another card of its faction is in play
    effect = t.bases @ jnp.asarray(PRIMARY[:T]) + (t.bases * allied) @ jnp.asarray(ALLY[:T])
    # A faction with a single base in play waits for an ally: that base's type.
    alone = jnp.asarray(TYPES) @ (factions * (t.bases > 0)[:, None])  # int32 [F+1]
    t = t.replace(
        current_player=1 - s.current_player,
        authority=t.authority.at[0].add(effect[AUTHORITY]),
        in_play=jnp.zeros_like(s.in_play),
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


def _observation(s: StarDuelState, is_mover: Array, env: StarDuel) -> Array:
    """float32 [OBSERVATION_SIZE]: what the viewer, whose side is the plain zones, may know.

    Counts of the viewer's hand, deck and discard pile; ships in play this turn; both sides'
    bases; the other side's discard pile and its hand-plus-deck pool (known from what it
    bought and scrapped, never split into hand and deck); the trade deck; the trade row slot
    by slot (one-hot); then authorities (over the starting authority), trade, combat, the
    other's hand size, pending discards and scraps, discards owed by the other, turn over
    turn cap, whether the viewer is the mover; last the cards in play per faction and the
    factions with an ally effect waiting.
    """
    row = (s.trade_row[:, None] == jnp.asarray(TYPES)).reshape(-1)  # bool [ROW * T]
    counts = [s.hand, s.deck, s.discard, s.in_play, s.bases, s.other_bases, s.other_discard,
              s.other_hand + s.other_deck, s.trade_deck, row]  # fmt: skip
    scalars = [s.authority, s.trade, s.combat, s.other_hand.sum(), s.discard_pending,
               s.scrap_pending, s.owed_discards, s.turn, is_mover]  # fmt: skip
    parts = [*counts, *(jnp.atleast_1d(x) for x in scalars), s.faction_count, s.ally_pending < T]
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
