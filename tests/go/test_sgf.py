"""SGF records: write and read back, setup stones, passes, variations, clear errors; a
fuzz test of the reader against sgfmill's own reading of mutated records."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sgfmill import sgf

import envs
from jaxzero.go.sgf import GoRecord, SgfError, area_result, read_sgf, to_state, write_sgf


def test_round_trip():
    record = GoRecord(size=6, komi=3.5, moves=[14, 15, 36, 8], result="B+3.5", black="a", white="b")
    text = write_sgf(record)
    assert text.startswith("(;FF[4]GM[1]") and "SZ[6]KM[3.5]" in text and ";B[]" in text
    assert read_sgf(text) == record
    assert read_sgf("\ufeff" + text) == record  # a byte-order mark, as some editors write


def test_reads_setup_stones_main_line_and_passes():
    text = "(;GM[1]FF[4]SZ[6]KM[0]AB[aa][bb]AW[cc]PL[W];W[dd];B[tt](;W[ee])(;W[ff]))"
    record = read_sgf(text)
    assert record.black_setup == [0, 7] and record.white_setup == [14]
    assert record.first == 1 and record.moves == [21, 36, 28]  # dd, pass, ee (main line)
    env = envs.make("go", size=6, komi=0.0)
    state = to_state(env, record)
    colour = state.colour.tolist()
    assert colour[0] == 1 and colour[7] == 1 and colour[14] == -1 and colour[21] == -1
    assert colour[28] == -1 and int(state.current_player) == 0


@pytest.mark.parametrize(
    "text, message",
    [
        ("hello", "must start with"),
        ("(;GM[3]SZ[8])", "not a Go record"),
        ("(;GM[1]SZ[6];B[zz])", "not a point on a 6x6 board"),
        ("(;GM[1]SZ[6];B[aa];B[bb])", "repeats a colour"),
        ("(;GM[1]SZ[6]B[aa];W[bb])", "moves in the root node"),
        ("(;GM[1]SZ[6];B[aa];AB[bb];W[cc])", "setup stones .* after move 1"),
        ("(;GM[1]SZ[6];B[aa]W[bb])", "both a B and a W move"),
        ("(;GM[1]SZ[6]AB[zz])", "AB: 'zz' is not a point"),
        ("(;GM[1]SZ[six])", r"SZ\[six\]: the board size must be a number"),
        ("(;GM[1]SZ[30])", "from 1 to 26"),
        ("(;GM[1]SZ[6]KM[inf])", r"bad KM property \(KM\[inf\]\)"),
        ("(;GM[1]SZ[6]KM[1\n5])", r"^bad KM property \(KM\[1\\n5\]\)$"),  # one line
        ("(;GM[1]SZ[6];B[aa]1;W[bb])", "malformed SGF: cannot read '1;W"),
        ("(;GM[1]SZ[6];B[aa]\ud800)", "not valid Unicode"),
    ],
)
def test_bad_records_are_explained(text, message):
    with pytest.raises(SgfError, match=message):
        read_sgf(text)


def test_illegal_move_in_record_is_explained():
    env = envs.make("go", size=6)
    with pytest.raises(SgfError, match="illegal"):
        to_state(env, read_sgf("(;GM[1]SZ[6];B[aa];W[aa])"))
    with pytest.raises(SgfError, match="this env is 6x6"):
        to_state(env, read_sgf("(;GM[1]SZ[9];B[aa])"))


def test_area_result():
    assert area_result(20, 5, 7.5) == "B+7.5"
    assert area_result(10, 15, 3.5) == "W+8.5"
    assert area_result(13, 12, 1.0) == "0"  # an integer komi can draw
    assert area_result(0, 0, 6.0) == "W+6"


def test_coordinates_are_row_major_from_the_top_left():
    """``ba`` is column b of the top row (action 1), ``ab`` the first point of the second
    row, ``af`` the bottom-left point (GTP A1); pinned against GTP coordinates too."""
    record = read_sgf("(;GM[1]SZ[6];B[ba];W[ab];B[af];W[fa])")
    assert record.moves == [1, 6, 30, 5]
    assert [envs.go.action_to_gtp(m, 6) for m in record.moves] == ["B6", "A5", "A1", "F6"]


def test_semicolons_in_values_do_not_split_nodes():
    text = "(;GM[1]SZ[6]C[Problem; black to play]AB[aa]AW[bb]PL[W];W[cc]C[or ;B[dd\\] here])"
    record = read_sgf(text)
    assert record.black_setup == [0] and record.white_setup == [7]
    assert record.first == 1 and record.moves == [14]
    # a valid record that the old reader refused ("repeats a colour") because of the comment
    record = read_sgf("(;GM[1]SZ[6];B[aa]C[next ;B[bb\\]];W[cc])")
    assert record.moves == [0, 14]


@pytest.mark.parametrize(
    "text",
    [
        "(;GM[1]SZ[6];B[aa];W[bb]",  # the game tree is not closed
        "(;GM[1]SZ[6];B[aa];W[b",  # cut inside a value
        "(;GM[1]SZ[6];B[aa](;W[bb])",  # cut after a variation
        "(;GM[1]SZ[6]C[cut ;here",
    ],
)
def test_truncated_records_are_refused(text):
    with pytest.raises(SgfError, match="truncated"):
        read_sgf(text)


def test_non_square_boards_are_refused():
    with pytest.raises(SgfError, match="non-square boards are not supported"):
        read_sgf("(;GM[1]SZ[6:7];B[aa])")


@pytest.mark.parametrize(
    "text, point",
    [
        ("(;GM[1]SZ[6]AB[aa][ba][aa])", "aa"),
        ("(;GM[1]SZ[6]AB[aa][cb]AW[cb])", "cb"),
        ("(;GM[1]SZ[6]AB[aa:bb]AW[ba])", "ba"),  # a compressed point list covers ba
    ],
)
def test_overlapping_setup_stones_are_refused(text, point):
    with pytest.raises(SgfError, match=f"setup stones overlap at {point}"):
        read_sgf(text)


# SGF SimpleText reads a line break or a tab as a space, so names have none
NAME = st.text(
    st.characters(exclude_categories=["Cs"], exclude_characters="\r\n\t\f\v"), max_size=6
)


@st.composite
def records(draw):
    size = draw(st.integers(1, 26))
    setup = draw(st.lists(st.integers(0, size * size - 1), unique=True, max_size=6))
    split = draw(st.integers(0, len(setup)))
    return GoRecord(
        size=size,
        komi=draw(st.integers(-20, 20)) / 2,
        moves=draw(st.lists(st.integers(0, size * size), max_size=10)),  # size*size: pass
        first=draw(st.integers(0, 1)),
        black_setup=setup[:split],
        white_setup=setup[split:],
        result=draw(NAME),
        black=draw(NAME),
        white=draw(NAME),
    )


@settings(max_examples=200, deadline=None)
@given(records())
def test_written_records_read_back_identically(record):
    assert read_sgf(write_sgf(record)) == record


def _escape(text):
    return text.replace("\\", "\\\\").replace("]", "\\]")


SPECIAL = [";", "(", ")", "[", "]", "\\", ":", "B[aa]", " ", "\n", "x"]
COMMENT = st.lists(st.sampled_from(SPECIAL)).map("".join)


@settings(max_examples=200, deadline=None)
@given(records(), COMMENT, COMMENT)
def test_comments_change_nothing(record, first, last):
    """A comment in the root and a comment node at the end, whatever they hold."""
    text = write_sgf(record).rstrip()
    text = f"(;C[{_escape(first)}]{text[2:-1]};C[{_escape(last)}])"
    assert read_sgf(text) == record


def _sgfmill_reading(text):
    """(size, komi, moves, black setup, white setup) of the main line, as sgfmill reads it."""
    game = sgf.Sgf_game.from_string(text)
    n = game.get_size()
    root, *nodes = game.get_main_sequence()

    def action(point):  # sgfmill's (row, col) has row 0 at the bottom
        return n * n if point is None else (n - 1 - point[0]) * n + point[1]

    black, white, _ = root.get_setup_stones()
    moves = [action(move) for colour, move in (node.get_move() for node in nodes) if colour]
    no_komi = root.has_property("KM") and root.get_raw("KM").strip() == b""  # KM[] reads as 0
    komi = 0.0 if no_komi else game.get_komi()
    return n, komi, moves, {action(p) for p in black}, {action(p) for p in white}


PIECE = st.sampled_from([";", "(", ")", "[", "]", "\\", ":", "\n", "B[aa]", "W[tt]", "AB[ab]"])
MUTATION = st.one_of(
    st.tuples(st.just("delete"), st.integers(0, 999), st.integers(1, 3)),
    st.tuples(st.just("insert"), st.integers(0, 999), PIECE | st.text(max_size=2)),
    st.tuples(st.just("insert"), st.integers(0, 999), COMMENT.map(lambda c: f"C[{c}]")),
    st.tuples(st.just("replace"), st.integers(0, 999), PIECE | st.characters()),
    st.tuples(st.just("cut"), st.integers(0, 999), st.just("")),
)


def _mutate(text, mutations, as_bytes):
    """``text`` with each mutation applied, to its characters or to its UTF-8 bytes (then
    decoded with surrogateescape, so that a broken sequence becomes a lone surrogate)."""
    data = text.encode() if as_bytes else text
    for kind, where, what in mutations:
        at = where % (len(data) + 1)
        if kind == "delete":
            data = data[:at] + data[at + what :]
        elif kind == "cut":
            data = data[:at]
        else:
            piece = what.encode("utf-8", "surrogatepass") if as_bytes else what
            if as_bytes and kind == "replace":
                piece = piece[:1]  # one byte: may break a character
            data = data[:at] + piece + data[at + (kind == "replace") :]
    return data.decode("utf-8", "surrogateescape") if as_bytes else data


@settings(max_examples=300, deadline=None)
@given(records(), st.lists(MUTATION, min_size=1, max_size=3), st.booleans())
def test_mutated_records_read_as_sgfmill_reads_them_or_are_refused(record, mutations, as_bytes):
    text = _mutate(write_sgf(record), mutations, as_bytes)
    try:
        got = read_sgf(text)
    except SgfError as error:
        assert "\n" not in str(error) and "\r" not in str(error)  # shown on one line
        return
    size, komi, moves, black, white = _sgfmill_reading(text)
    assert (got.size, got.komi, got.moves) == (size, komi, moves)
    assert set(got.black_setup) == black and len(got.black_setup) == len(black)
    assert set(got.white_setup) == white and len(got.white_setup) == len(white)
