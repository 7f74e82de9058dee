"""The GTP engine: protocol replies, errors that keep it running, full games against GNU Go."""

import io
import math
import re
import shutil
import sys

import pytest
from gtp_referee import GNUGO_RULES, GtpClient, play_match
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxzero.go.gtp import COMMANDS, GtpEngine
from jaxzero.run.agents.agent import load_agent

GNUGO = shutil.which("gnugo") or shutil.which("gnugo", path="/usr/games")


@pytest.fixture(scope="module")
def engine(go_run) -> GtpEngine:
    return GtpEngine(load_agent(go_run), num_simulations=4)


def _session(engine: GtpEngine, script: str) -> list[str]:
    out = io.StringIO()
    engine.serve(io.StringIO(script), out)
    return out.getvalue().split("\n\n")[:-1]


def test_protocol_replies_and_errors(engine):
    replies = _session(
        engine,
        "protocol_version\n7 name\nknown_command genmove\nknown_command dance\n"
        "boardsize 9\nboardsize six\nboardsize 6\nkomi 3.5\nkomi lots\n"
        "play black C3\nplay white C3\nplay white Z9\nplay purple D4\n"
        "# a comment line\n\nfrobnicate\nplay\nlist_commands\nundo\nundo\nundo\nquit\n",
    )
    assert replies[:4] == ["= 2", "=7 jaxzero", "= true", "= false"]
    assert replies[4:9] == [
        "? unacceptable size",
        "? boardsize not an integer",
        "=",
        "=",
        "? komi not a float",
    ]
    assert replies[9:13] == ["=", "? illegal move", "? invalid coordinate", "? invalid color"]
    assert replies[13:15] == ["? unknown command", "? syntax error: play needs 2 argument(s)"]
    assert "genmove" in replies[15] and "final_score" in replies[15]
    assert replies[16:19] == ["=", "? cannot undo", "? cannot undo"]
    assert replies[19] == "="


def test_out_of_turn_moves_pass_for_the_other_colour(engine):
    replies = _session(engine, "clear_board\nplay b C3\nplay b D4\nshowboard\nfinal_score\n")
    assert replies[:3] == ["=", "=", "="]
    rows = replies[3].split("\n")[2:8]  # "=", the column letters, then rows 6..1
    assert sum(row.count("X") for row in rows) == 2
    assert sum(row.count("O") for row in rows) == 0
    assert replies[4] == "= B+32.5"  # 36 points of area for Black, komi 3.5


def test_komi_changes_the_score(engine):
    replies = _session(engine, "clear_board\nkomi 0\nplay b C3\nfinal_score\nkomi 3.5\n")
    assert replies[3] == "= B+36"


def test_agent_moves_are_legal_vertices(engine):
    replies = _session(engine, "clear_board\ngenmove black\ngenmove white\n")
    for reply in replies[1:]:
        assert reply.startswith("= ")
        move = reply[2:]
        assert move in ("pass", "resign") or (move[0] in "ABCDEF" and move[1:] in "123456")


def test_an_engine_with_tree_reuse_keeps_its_tree_between_moves(go_run):
    """With ``search.reuse_tree`` the engine's search continues from the subtree of the
    moves played; undo and clear_board need no care (a tree whose root is not the
    position is not used, and a new game starts from an empty one)."""
    agent = load_agent(go_run, settings={"search.reuse_tree": "true"})
    engine = GtpEngine(agent, num_simulations=8)
    replies = _session(engine, "genmove black\ngenmove white\ngenmove black\nundo\ngenmove black\n")
    assert all(reply.startswith("=") for reply in replies), replies
    assert int(engine.trees.node_visits[0, 0]) > 0  # the last move's subtree, carried
    _session(engine, "clear_board\n")
    assert int(engine.trees.node_visits[0, 0]) == 0
    assert engine.player.jitted_act._cache_size() == 1


@pytest.mark.skipif(GNUGO is None, reason="needs gnugo: run `make system-deps`")
def test_full_games_against_gnugo(go_run):
    ours = [
        sys.executable,
        "-m",
        "jaxzero.cli",
        "gtp",
        "--checkpoint",
        str(go_run),
        "--simulations",
        "8",
        "--resign",
        "-1",  # never: values are at least -1 (and the CLI takes -1..1)
    ]
    gnugo = [GNUGO, "--mode", "gtp", "--boardsize", "6", "--komi", "3.5", "--level", "1"]
    gnugo += list(GNUGO_RULES)  # area scoring and positional superko, as ours
    agent, gnu = GtpClient(ours), GtpClient(gnugo)
    try:
        for ours_black in (True, False):  # one engine process each, both colours
            black, white = (agent, gnu) if ours_black else (gnu, agent)
            judge = "white" if ours_black else "black"  # GNU Go scores
            result = play_match(
                black, white, size=6, komi=3.5, max_moves=72, judge=judge, opening=["C3", "D4"]
            )
            assert result.moves[:2] == ["c3", "d4"]  # the opening, then the engines
            assert result.winner in ("black", "white")
            assert result.reason in ("score", "resign", "move cap")
            assert len(result.moves) >= 2
    finally:
        agent.close()
        gnu.close()


def test_undo_takes_back_the_pass_inserted_for_an_out_of_turn_move(engine):
    """`play w c3` on an empty board inserts a pass for Black; `undo` removes both, so
    Black is to move again on an empty board (issue 18, item 6)."""
    replies = _session(engine, "clear_board\nplay w c3\nundo\nplay b d4\ngenmove w\nundo\nquit\n")
    assert replies[:4] == ["=", "=", "=", "="]
    assert replies[4].startswith("= ") and replies[5] == "="
    assert len(engine.history) == 2 and int(engine.state.current_player) == 1  # after b d4


def test_komi_must_be_a_finite_number(engine):
    replies = _session(engine, "komi nan\nkomi inf\nkomi -inf\nkomi 3.5\nquit\n")
    assert replies[:3] == ["? komi must be a finite number"] * 3 and replies[3] == "="


def _replies(data: bytes) -> list[str]:
    """The replies in an engine's output, which must be ASCII and end with a blank line."""
    text = data.decode("ascii")  # strict: GTP replies are ASCII
    assert text == "" or text.endswith("\n\n"), text
    return text.split("\n\n")[:-1]


GARBAGE = b"1 name\n\xff\xfe\n2 \xff\xfe\nplay b \xffc3\xfe\n\xc3\n3 protocol_version\nquit\nname\n"
GARBAGE_REPLIES = [
    "=1 jaxzero",
    "? unknown command",
    "?2 unknown command",
    "? invalid coordinate",
    "? unknown command",
    "=3 2",
    "=",
]


def test_undecodable_bytes_get_error_replies_through_a_strict_text_stream(engine):
    """sys.stdin under a UTF-8 locale decodes strictly; the engine reads the bytes under
    it and decodes each line itself, so garbage is an unknown command, not a crash
    (issue 18). Its replies go out ASCII, even to a strict ASCII stream."""
    stdin = io.TextIOWrapper(io.BytesIO(GARBAGE), encoding="utf-8", errors="strict")
    raw = io.BytesIO()
    stdout = io.TextIOWrapper(raw, encoding="ascii", errors="strict")
    engine.serve(stdin, stdout)
    stdout.flush()
    assert _replies(raw.getvalue()) == GARBAGE_REPLIES


def test_undecodable_bytes_from_a_binary_stream(engine):
    stdin, stdout = io.BytesIO(GARBAGE), io.BytesIO()
    engine.serve(stdin, stdout)
    assert _replies(stdout.getvalue()) == GARBAGE_REPLIES
    assert stdin.read() == b"name\n"  # nothing read past quit


def test_only_ascii_digits_make_a_command_id(engine):
    """GTP ids are integers: Unicode digits (which str.isdigit accepts) or `12x` are not
    ids (then the word is taken as the command name), and are never echoed."""
    replies = _session(
        engine, "\u0661\u0662 name\n12x name\n\u0663 name\n\u00b2 name\n-1 name\n0012 name\n"
    )
    assert replies == ["? unknown command"] * 5 + ["=0012 jaxzero"]


def test_numbers_colours_and_commands_are_ascii(engine):
    """int(), float(), str.lower() and str.isdigit() accept non-ASCII forms (Arabic-Indic
    digits, the Kelvin sign that lowercases to k); GTP arguments are ASCII."""
    replies = _session(
        engine,
        "clear_board\nboardsize \u0666\nboardsize +6\nkomi \u0663.\u0665\nkomi 3_5\n"
        "play b C\u0663\nplay blac\u212a C3\n\u212anown_command name\nplay b C3\nundo\n",
    )
    assert replies == [
        "=",
        "? boardsize not an integer",
        "? boardsize not an integer",
        "? komi not a float",
        "? komi not a float",
        "? invalid coordinate",
        "? invalid color",
        "? unknown command",
        "=",
        "=",
    ]


def test_control_characters_tabs_comments_and_blank_lines(engine):
    """GTP 2 preprocessing: control characters other than HT and LF are dropped, HT is a
    space, `#` starts a comment, and empty or blank lines get no reply. Words are
    separated by spaces only (a form feed or no-break space separates nothing)."""
    replies = _session(
        engine,
        "na\x00me\n\x01\x02\x1b\n1\x002 name\n3\tname\nproto\x7fcol_version\r\n"
        "   \t \n# comment\nname # trailing comment\n4 #\nknown_command\x0cname\n"
        "known_command\u00a0name\n\x0b\x1c\x1d\x1e\x1f\x85\n5\t known_command \tname\t\n",
    )
    assert replies == [
        "= jaxzero",
        "=12 jaxzero",
        "=3 jaxzero",
        "= 2",
        "= jaxzero",
        "?4 empty command",
        "? unknown command",
        "? unknown command",
        "? unknown command",  # U+0085 is not an ASCII control character
        "=5 true",
    ]


# ------------------------------------------------------------------------ fuzzing
# play is common and genmove rare (it searches); komi never changes (that would recompile)
# (hypothesis favours a list's first element)
FUZZ_NAMES = ["play"] * 8 + [n for n in COMMANDS if n not in ("play", "genmove")] * 2
FUZZ_NAMES += ["PLAY", "Quit", "dance", "genmove"]
WORDS = ["b", "W", "black", "white", "purple", "C3", "d4", "F6", "a1", "pass", "Z9", "C7", "I3"]
WORDS += ["6", "06", "9", "-6", "name", "\u0666", "C\u0663", "blac\u212a", "\xff", "\u00a0"]
KOMI_WORDS = ["3.5", "3.50", "+3.5", "nan", "inf", "1e999", "3_5", "\u0663.\u0665", "x"]


def _float(word: str) -> bool:
    try:
        return math.isfinite(float(word))
    except ValueError:
        return False


def _args(name: str):
    """Arguments for ``name``: mostly a move for play and genmove, to get games going."""
    colour = st.sampled_from(["b", "W", "black", "white"])
    vertex = st.sampled_from([f"{c}{r}" for c in "abcdefG" for r in range(1, 8)] + ["pass"])
    word = st.sampled_from(WORDS) | st.text(max_size=4)
    if name.lower() == "komi":
        word = st.sampled_from(KOMI_WORDS) | st.text(max_size=4).filter(lambda w: not _float(w))
    if name == "play":  # one_of drops a repeated strategy, so three separate ones
        return st.one_of(*[st.tuples(colour, vertex).map(list) for _ in range(3)], st.lists(word))
    if name == "genmove":
        return st.one_of(*[colour.map(lambda c: [c]) for _ in range(3)], st.lists(word))
    return st.lists(word, max_size=3)


@st.composite
def _command_line(draw) -> bytes:
    ident = draw(st.sampled_from(["", "", "7", "0012", "\u0661\u0662", "12x", "-1", "\u00b2"]))
    name = draw(st.sampled_from(FUZZ_NAMES))
    words = [w for w in (ident, name, *draw(_args(name))) if w]
    line = draw(st.sampled_from([" ", "\t", " \t "])).join(words)
    line += draw(st.sampled_from(["", "", "\r", " # comment", "\t#x"]))
    if draw(st.booleans()):  # a control character somewhere
        at = draw(st.integers(0, len(line)))
        control = draw(st.sampled_from(["\x00", "\x0b", "\x0c", "\x1b", "\x7f"]))
        line = line[:at] + control + line[at:]
    return line.encode()


LINE = st.one_of(
    *[_command_line() for _ in range(4)],
    st.binary(max_size=12),
    st.text(max_size=12).map(str.encode),
)


def _model(line: bytes) -> tuple[str, bool] | None:
    """What GTP 2 says of a line: None if it gets no reply, else (the reply's id, whether
    it is quit). Written apart from the engine's code."""
    text = line.decode("utf-8", errors="replace")
    text = "".join(c for c in text if c == "\t" or not (ord(c) < 32 or ord(c) == 127))
    words = [w for w in text.split("#")[0].replace("\t", " ").split(" ") if w]
    if not words:
        return None
    ident = words[0] if re.fullmatch("[0-9]+", words[0]) else ""
    rest = words[1:] if ident else words
    return ident, bool(rest) and rest[0].isascii() and rest[0].lower() == "quit"


def _expected(lines: list[bytes]) -> tuple[list[str], bytes]:
    """The ids of the replies a session gets, and the input left unread after quit."""
    ids = []
    for at, line in enumerate(lines):
        if (reply := _model(line)) is not None:
            ids.append(reply[0])
            if reply[1]:
                return ids, b"".join(rest + b"\n" for rest in lines[at + 1 :])
    return ids, b""


@settings(max_examples=50, deadline=None, database=None)
@given(lines=st.lists(LINE.map(lambda b: b.replace(b"\n", b"")), max_size=30), text=st.booleans())
def test_fuzzed_sessions_get_well_formed_replies_until_quit(engine, lines, text):
    """Random sessions (known commands with odd arguments, ids, control characters, and
    random bytes): every line that is not blank gets one reply, `=` or `?`, echoing the
    id only when the line starts with one in ASCII digits; the engine stops at `quit`."""
    script = b"".join(line + b"\n" for line in lines)
    stdin, raw = io.BytesIO(script), io.BytesIO()
    stdout = io.TextIOWrapper(raw, encoding="ascii", errors="strict") if text else raw
    source = io.TextIOWrapper(stdin, errors="strict") if text else stdin  # kept: closes stdin
    engine.serve(source, stdout)
    stdout.flush()
    expected, unread = _expected(lines)
    assert stdin.read() == unread  # nothing read past quit
    replies = _replies(raw.getvalue())
    assert len(replies) == len(expected), (replies, expected)
    for reply, ident in zip(replies, expected, strict=True):
        assert re.fullmatch(rf"[=?]{ident}( .+|\n.+)?", reply, re.DOTALL), (reply, ident)
        assert not reply.startswith("?") or reply.startswith(f"?{ident} "), reply
    assert engine.env.komi == 3.5
