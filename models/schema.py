"""Checking a file from elsewhere before using it: each field's JSON type and range, bounded.

Every loader (our config.json, Hugging Face's config.json and tokenizer.json, nanoGPT's ckpt.pt
and meta.pkl) describes what it reads as a schema of specs (Int, Str, ..., Object), and
`check(value, spec, file)` walks the value along the schema and nowhere else, whatever shared
references the file holds. A value that does not fit is a one-line `FileError`:

    config.json: microtensor_bias is 'false' (a string); expected true or false

Types are JSON's, strictly: a bool is not an integer, an integer field refuses 2.0, and a
number is finite.
"""
import json
import math
import os
import reprlib
import sys
from dataclasses import dataclass
from typing import Callable

MAX_JSON_BYTES = 64 << 20  # a character vocabulary of a million entries is ~20 MB of JSON
MAX_JSON_DEPTH = 64  # ours nest 4 deep, Hugging Face's tokenizer.json a few more

_short = reprlib.Repr()  # bounded: nested or shared values print as [[...], ...], never hang
_short.maxlevel, _short.maxlist, _short.maxdict, _short.maxstring, _short.maxother = 2, 4, 4, 40, 40
shown = _short.repr  # a short repr of a value, for an error message


class FileError(ValueError):
    """A file that holds something a loader cannot use; the message names the file and field."""


JSON_TYPES = {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
              list: "an array", tuple: "an array", dict: "an object", type(None): "null"}


def fail(file, field, value, expected):
    """FileError: `file: field is value (its JSON type); expected ...`."""
    kind = JSON_TYPES.get(type(value), f"a {type(value).__name__}")
    return FileError(f"{file}{': ' + field if field else ''} is {shown(value)} ({kind}); "
                     f"expected {expected}")


# --- the specs: a single value (Leaf), or a container of specs ------------------------------

@dataclass(frozen=True)
class Leaf:
    """A single value: `accepts(value)` says whether it fits, `expected` says what does."""
    expected: str
    accepts: Callable


def _in_range(low, high, high_open=False):
    """(words, test) for low <= v <= high (v < high when high_open); None is no bound."""
    words = (f" in [{low}, {high}{')' if high_open else ']'}" if None not in (low, high)
             else f" >= {low}" if low is not None else f" <= {high}" if high is not None else "")
    return words, lambda v: ((low is None or v >= low)
                             and (high is None or (v < high if high_open else v <= high)))


def Int(low=None, high=None):
    """An integer (not a bool, not 2.0) in [low, high]."""
    words, within = _in_range(low, high)
    return Leaf("an integer" + words, lambda v: type(v) is int and within(v))


def Number(low=None, high=None, high_open=False):
    """A finite number (an integer or a float, not a bool) in [low, high]; high_open: < high."""
    words, within = _in_range(low, high, high_open)
    finite = {float: math.isfinite, int: lambda v: abs(v) <= sys.float_info.max}  # 10**400 isn't
    return Leaf("a finite number" + words,
                lambda v: type(v) in finite and finite[type(v)](v) and within(v))


def Bool():
    """true or false (not "false", not 0)."""
    return Leaf("true or false", lambda v: type(v) is bool)


def Str(choices=None, length=None):
    """A string: one of `choices` if given, of `length` characters if given."""
    expected = ("one of " + ", ".join(map(repr, choices)) if choices is not None else
                f"a string of {length} character{'s' * (length != 1)}" if length is not None else
                "a string")
    return Leaf(expected, lambda v: type(v) is str and (choices is None or v in choices)
                and (length is None or len(v) == length))


def Const(value):
    """Exactly this value (compared with its type: true is not 1)."""
    return Leaf(json.dumps(value), lambda v: type(v) is type(value) and v == value)


@dataclass(frozen=True)
class Nullable:
    """null, or a value of `spec`."""
    spec: object


@dataclass(frozen=True)
class Optional:
    """A field that may be absent (then `default`); present, it must fit `spec`."""
    spec: object
    default: object = None


@dataclass(frozen=True)
class Array:
    """A list of min_items to max_items values, each fitting `item`."""
    item: object
    max_items: int = None
    min_items: int = 0


@dataclass(frozen=True)
class Map:
    """An object with any keys: each key fits `key`, each value `value` (a character map)."""
    key: object
    value: object
    max_items: int = None
    min_items: int = 0


@dataclass(frozen=True)
class Object:
    """An object with named fields {name: spec or Optional(spec)}; other keys are kept unchecked."""
    fields: dict


def check(value, spec, file, field=""):
    """`value` checked against `spec`, with the defaults of absent Optional fields filled in.

    file: the name in the error message; field: where `value` sits in the file ('' for the
    whole file). Raises FileError naming both for the first thing that does not fit.
    """
    if isinstance(spec, Nullable):
        if value is None:
            return None
        spec = spec.spec
        if isinstance(spec, Leaf) and not spec.accepts(value):
            raise fail(file, field, value, f"null or {spec.expected}")
    if isinstance(spec, Leaf):
        if not spec.accepts(value):
            raise fail(file, field, value, spec.expected)
        return value
    kind = list if isinstance(spec, Array) else dict
    if type(value) is not kind:
        raise fail(file, field, value, "an array" if kind is list else "an object")
    if isinstance(spec, Object):
        out = dict(value)
        for name, sub in spec.fields.items():
            inner = f"{field}.{name}" if field else name
            if name in value:
                out[name] = check(value[name], sub.spec if isinstance(sub, Optional) else sub,
                                  file, inner)
            elif isinstance(sub, Optional):
                out[name] = sub.default
            else:
                raise FileError(f"{file}: {inner} is missing")
        return out
    low, high = spec.min_items, spec.max_items
    if len(value) < low or (high is not None and len(value) > high):
        expected = (f"at least {low}" if high is None else f"{low}" if low == high else
                    f"{low} to {high}")
        raise FileError(f"{file}: {field or 'the file'} has {len(value)} entries; expected "
                        f"{expected}")
    if kind is list:
        return [check(v, spec.item, file, f"{field}[{i}]") for i, v in enumerate(value)]
    for k, v in value.items():
        check(k, spec.key, file, f"{field} key {shown(k)}")
        check(v, spec.value, file, f"{field}[{shown(k)}]")
    return value


def read_json(path, spec=None, max_bytes=MAX_JSON_BYTES):
    """The JSON value in the file at `path`, checked against `spec` if given.

    Bounded: a file over max_bytes is refused unread, and nesting over MAX_JSON_DEPTH is an
    error (deeper values would make copy, repr or json.dumps recurse past Python's limit).
    Raises FileNotFoundError, or FileError naming the file: unreadable, not UTF-8, not JSON,
    too large, too deep, or not fitting `spec`.
    """
    path = os.fspath(path)
    size = os.path.getsize(path)
    if size > max_bytes:
        raise FileError(f"{path} is {size:,} bytes; a file of this kind is at most {max_bytes:,}")
    try:
        with open(path, "rb") as f:
            data = f.read(max_bytes + 1)
    except IsADirectoryError:
        raise FileError(f"{path} is a directory, not a JSON file") from None
    except OSError as error:
        raise FileError(f"{path} cannot be read ({error.strerror})") from None
    try:
        value = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise FileError(f"{path} is not UTF-8 text") from None
    except RecursionError:
        raise FileError(f"{path} nests arrays or objects deeper than can be read") from None
    except ValueError as error:  # JSONDecodeError, or an integer of over 4300 digits
        raise FileError(f"{path} is not JSON ({error})") from None
    stack = [(value, 1)]  # the depth, walked without recursion
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > MAX_JSON_DEPTH:
                raise FileError(f"{path} nests arrays or objects more than {MAX_JSON_DEPTH} "
                                "deep")
            stack.extend((c, depth + 1) for c in (item.values() if type(item) is dict else item))
    return value if spec is None else check(value, spec, path)
