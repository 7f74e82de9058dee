"""SGF records: write and read back, setup stones, passes, variations, clear errors."""

import pytest

import envs
from jaxzero.go.sgf import GoRecord, SgfError, area_result, read_sgf, to_state, write_sgf


def test_round_trip():
    record = GoRecord(size=6, komi=3.5, moves=[14, 15, 36, 8], result="B+3.5", black="a", white="b")
    text = write_sgf(record)
    assert text.startswith("(;FF[4]GM[1]") and "SZ[6]KM[3.5]" in text and ";B[]" in text
    assert read_sgf(text) == record


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
