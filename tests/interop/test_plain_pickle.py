"""meta.pkl is read as plain data only, in bounded time and memory: nanoGPT's dicts load;
a pickle calling a function, building tuples, nesting deep, sharing references over and over
or referring to itself is refused with one line naming the file."""
import os
import pickle
import re
import struct
import sys

import pytest

from models.interop.nanogpt import read_meta
from models.interop.plain_pickle import load_plain, tuple_depth
from models.schema import FileError

PROTO = b"\x80\x04"


class RunsCode:
    """Unpickling this calls os.system: what an ordinary pickle.load of a stranger's file allows."""

    def __reduce__(self):
        return (os.system, ("echo should never run",))


def write(tmp_path, value):
    path = tmp_path / "meta.pkl"
    path.write_bytes(value if isinstance(value, bytes) else pickle.dumps(value))
    return str(path)


# The work a refusal may take, counted in Python lines run (the same count on any processor,
# unlike a CPU time): the cases below take 47 to 140,562 lines (counted by `_lines_run`); a
# loader that expanded the shared objects or walked 2**31 memo entries would run far more.
# Replaces "under a second of CPU time", which depended on the machine at hand.
MAX_LINES = 1_000_000


def _lines_run(action):
    """How many Python lines `action()` runs (sys.settrace's 'line' events), and its error."""
    count = [0]

    def trace(frame, event, arg):
        if event == "line":
            count[0] += 1
        return trace

    before = sys.gettrace()  # a debugger's or coverage's tracer, put back after
    sys.settrace(trace)
    try:
        action()
    except FileError as e:
        return count[0], e
    finally:
        sys.settrace(before)
    return count[0], None


def refused(path, match):
    lines, error = _lines_run(lambda: load_plain(path))
    assert isinstance(error, FileError) and re.search(match, str(error)), (
        f"expected FileError matching {match!r}, got {error!r}")
    assert lines < MAX_LINES, f"expected a refusal within {MAX_LINES} Python lines, ran {lines}"
    assert str(error).startswith(path) and "\n" not in str(error)


def test_nanogpt_meta_loads_as_a_character_map(tmp_path):
    chars = ["\n", " ", "A", "é"]
    meta = {"vocab_size": 4, "itos": dict(enumerate(chars)),
            "stoi": {c: i for i, c in enumerate(chars)}}
    assert load_plain(write(tmp_path, meta)) == meta
    assert read_meta(write(tmp_path, meta)).chars == chars


def test_a_pickle_that_calls_a_function_is_refused(tmp_path, capfd):
    refused(write(tmp_path, {"itos": RunsCode()}), "opcode STACK_GLOBAL|opcode GLOBAL")
    assert "should never run" not in capfd.readouterr().out


def test_a_list_of_two_references_64_levels_deep_ends_at_once(tmp_path):
    """The issue's 420-byte meta.pkl: walking it fully would meet 2**64 lists."""
    value = []
    for _ in range(64):
        value = [value, value]
    path = write(tmp_path, value)
    assert os.path.getsize(path) < 500
    refused(path, "more than 32 deep|shared objects over and over")
    value = []
    for _ in range(25):                               # shallow enough: sharing is what stops it
        value = [value, value]
    refused(write(tmp_path, value), "shared objects over and over")


def test_nesting_5000_deep_and_a_list_holding_itself_are_refused_without_recursion(tmp_path):
    deep = PROTO + b"]" * 5000 + b"a" * 4999 + b"."   # EMPTY_LIST x 5000, APPEND x 4999
    refused(write(tmp_path, deep), "nests lists or dicts more than 32 deep")
    itself = PROTO + b"]\x94h\x00a."                  # EMPTY_LIST, MEMOIZE, GET 0, APPEND
    refused(write(tmp_path, itself), r"\[0\] contains itself \(a cycle\)")


def test_a_memo_index_of_two_billion_is_refused_before_anything_is_allocated(tmp_path):
    """The C unpickler would grow its memo to the index: 2**31 entries, 16 GiB."""
    refused(write(tmp_path, PROTO + b"]r" + struct.pack("<I", 2 ** 31) + b"."),
            "memo index 2147483648")


@pytest.mark.parametrize("data,match", [(PROTO + b")" + b"\x85" * 10 + b".", "EMPTY_TUPLE"),
                                        (PROTO + b"]", "not a readable pickle"),
                                        (b"\x80\x04\x8f.", "EMPTY_SET")])
def test_tuples_sets_and_truncated_pickles_are_refused(tmp_path, data, match):
    refused(write(tmp_path, data), match)


def test_tuple_depth_counts_tuples_through_the_memo():
    nested = PROTO + b")\x94" + b"h\x00\x85" + b"\x85" * 40 + b"."  # () memoized, got, wrapped
    assert tuple_depth(PROTO + b")" + b"\x85" * 3 + b".", "x") == 4
    with pytest.raises(FileError, match="nests tuples more than 32 deep"):
        tuple_depth(nested, "x")


@pytest.mark.parametrize("meta,match", [
    ({"itos": {0: 1.5}}, r"itos\[0\] is 1.5 \(a number\); expected a string of 1 character"),
    ({"itos": {0: "a"}, "vocab_size": True}, r"vocab_size is True \(a boolean\); expected an int"),
    ({"itos": {"0": "a"}}, r"itos key '0' is '0' \(a string\); expected an integer"),
    ({"itos": {0: "a", 2: "b"}}, r"itos maps the ids \[0, 2\]; expected 0 .. 1"),
    ({"itos": {0: "a", 1: "a"}}, "repeats a character"),
    ({"itos": [["a"]]}, r"itos is \[\['a'\]\] \(an array\); expected an object"),
    ({"itos": {0: "a", 1: "b"}, "stoi": {"a": 1, "b": 0}}, "not the inverse"),
])
def test_meta_fields_of_the_wrong_type_or_range_are_named(tmp_path, meta, match):
    path = write(tmp_path, meta)
    with pytest.raises(FileError, match=match) as caught:
        read_meta(path)
    assert str(caught.value).startswith(path)
