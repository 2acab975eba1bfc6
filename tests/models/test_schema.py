"""models/schema.py: JSON types are strict, ranges are checked, and every refusal is one line
naming the file, the field, the value received and what was expected (issue 16)."""
import json

import pytest

from models.schema import (
    Array,
    Bool,
    FileError,
    Int,
    Map,
    Nullable,
    Number,
    Object,
    Optional,
    Str,
    check,
    read_json,
)

SPEC = Object({"n": Int(1, 10), "rate": Optional(Number(0, 1, high_open=True), 0.5),
               "bias": Optional(Bool(), True), "name": Nullable(Str(choices=("a", "b"))),
               "ids": Optional(Array(Int(0), max_items=3), []),
               "vocab": Optional(Map(Str(length=1), Int(0)), {})})


@pytest.mark.parametrize("value,message", [
    ({"n": True, "name": None}, "f.json: n is True (a boolean); expected an integer in [1, 10]"),
    ({"n": 2.0, "name": None}, "f.json: n is 2.0 (a number); expected an integer in [1, 10]"),
    ({"n": 11, "name": None}, "f.json: n is 11 (an integer); expected an integer in [1, 10]"),
    ({"n": 1, "name": None, "bias": "false"},
     "f.json: bias is 'false' (a string); expected true or false"),
    ({"n": 1, "name": None, "rate": 1}, "f.json: rate is 1 (an integer); expected a finite "
                                        "number in [0, 1)"),
    ({"n": 1, "name": None, "rate": float("nan")}, "rate is nan (a number)"),
    ({"n": 1, "name": None, "rate": 10 ** 400}, "rate is 1000"),
    ({"n": 1, "name": "c"}, "f.json: name is 'c' (a string); expected null or one of 'a', 'b'"),
    ({"n": 1}, "f.json: name is missing"),
    ({"n": 1, "name": None, "ids": [1, -1]}, "f.json: ids[1] is -1 (an integer); expected an "
                                             "integer >= 0"),
    ({"n": 1, "name": None, "ids": [1, 2, 3, 4]}, "f.json: ids has 4 entries; expected 0 to 3"),
    ({"n": 1, "name": None, "vocab": {"ab": 0}}, "f.json: vocab key 'ab' is 'ab' (a string); "
                                                 "expected a string of 1 character"),
    ({"n": 1, "name": None, "vocab": {"a": "0"}}, "f.json: vocab['a'] is '0' (a string); "
                                                  "expected an integer >= 0"),
    ([1, 2], "f.json is [1, 2] (an array); expected an object"),
])
def test_a_value_that_does_not_fit_is_one_line_naming_file_field_value_and_expectation(
        value, message):
    with pytest.raises(FileError) as caught:
        check(value, SPEC, "f.json")
    assert message in str(caught.value) and "\n" not in str(caught.value), (
        f"expected {message!r}, got {str(caught.value)!r}")


def test_a_value_that_fits_comes_back_with_the_defaults_filled_in():
    got = check({"n": 3, "name": "a", "extra": [1]}, SPEC, "f.json")
    assert got == {"n": 3, "rate": 0.5, "bias": True, "name": "a", "ids": [], "vocab": {},
                   "extra": [1]}, got


def test_shared_references_are_not_followed_beyond_the_schema():
    """A list of two references to a list of ... 64 deep: the schema stops at the first level."""
    bomb = []
    for _ in range(64):
        bomb = [bomb, bomb]
    with pytest.raises(FileError, match=r"ids\[0\] is \[\[\[\.\.\.\], \[\.\.\.\]\], .*expected an "
                                        r"integer >= 0"):
        check({"n": 1, "name": None, "ids": bomb}, SPEC, "f.json")


def test_read_json_bounds_size_and_depth_and_names_the_file(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 65 + "]" * 65)
    with pytest.raises(FileError, match="deep.json nests arrays or objects more than 64 deep"):
        read_json(deep)
    deeper = tmp_path / "deeper.json"
    deeper.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(FileError, match="deeper.json nests arrays or objects deeper than"):
        read_json(deeper)
    big = tmp_path / "big.json"
    big.write_text(json.dumps("x" * 2000))
    with pytest.raises(FileError, match="big.json is 2,002 bytes; a file of this kind is at "
                                        "most 1,000"):
        read_json(big, max_bytes=1000)
    with pytest.raises(FileError, match="bad.json is not UTF-8"):
        (tmp_path / "bad.json").write_bytes(b'"\xff"')
        read_json(tmp_path / "bad.json")
    assert read_json(big) == "x" * 2000
