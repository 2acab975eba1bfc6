"""meta.pkl is read as plain data only: nanoGPT's dicts load, a pickle calling a function fails."""
import os
import pickle

import pytest

from models.interop.nanogpt import read_meta
from models.interop.plain_pickle import load_plain


class RunsCode:
    """Unpickling this calls os.system: what an ordinary pickle.load of a stranger's file allows."""

    def __reduce__(self):
        return (os.system, ("echo should never run",))


def write(tmp_path, value):
    path = tmp_path / "meta.pkl"
    path.write_bytes(pickle.dumps(value))
    return str(path)


def test_nanogpt_meta_loads_as_a_character_map(tmp_path):
    chars = ["\n", " ", "A", "é"]
    meta = {"vocab_size": 4, "itos": dict(enumerate(chars)),
            "stoi": {c: i for i, c in enumerate(chars)}}
    assert load_plain(write(tmp_path, meta)) == meta
    assert read_meta(write(tmp_path, meta)).chars == chars


def test_a_pickle_that_calls_a_function_is_refused(tmp_path, capfd):
    with pytest.raises(ValueError, match="names posix.system|names nt.system"):
        load_plain(write(tmp_path, {"itos": RunsCode()}))
    assert "should never run" not in capfd.readouterr().out


@pytest.mark.parametrize("value,kind", [({"itos": {0: 1.5}}, "float"), ({(1, 2): "a"}, "tuple"),
                                        ([{1, 2}], "set"), ({"vocab_size": True}, "bool")])
def test_types_beyond_dicts_lists_strings_ints_are_refused(tmp_path, value, kind):
    with pytest.raises(ValueError, match=f"holds a {kind}"):
        load_plain(write(tmp_path, value))


def test_stoi_that_does_not_invert_itos_is_refused(tmp_path):
    meta = {"vocab_size": 2, "itos": {0: "a", 1: "b"}, "stoi": {"a": 1, "b": 0}}
    with pytest.raises(ValueError, match="not the inverse"):
        read_meta(write(tmp_path, meta))
