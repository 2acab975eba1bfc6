"""Checking a file from elsewhere before using it: each field's JSON type and range, bounded.

Every loader (our checkpoints' config.json, Hugging Face's config.json and tokenizer.json,
nanoGPT's ckpt.pt and meta.pkl) describes what it reads as a schema: a field name, its
JSON type, its range. `check(value, spec, file)` walks the value along the schema and
nowhere else, so its work is bounded by the schema's depth and the value's size, whatever
shared references or nesting the file holds. A field that does not fit is a `FileError`,
one line naming the file, the field, the value received and what was expected:

    config.json: microtensor_bias is 'false' (a string); expected true or false

JSON's types are strict here: a bool is not an integer (Python's `isinstance(True, int)`
would say it is), and an integer field refuses 2.0.
"""
import json
import math
import os
import reprlib
import sys
from dataclasses import dataclass

MAX_JSON_BYTES = 64 << 20  # a character vocabulary of a million entries is ~20 MB of JSON
MAX_JSON_DEPTH = 64  # ours nest 4 deep, Hugging Face's tokenizer.json a few more

_short = reprlib.Repr()  # bounded: nested or shared values print as [[...], ...], never hang
_short.maxlevel, _short.maxlist, _short.maxdict, _short.maxstring, _short.maxother = 2, 4, 4, 40, 40


class FileError(ValueError):
    """A file that holds something a loader cannot use; the message names the file and field."""


def json_type(value):
    """The JSON name of a Python value's type: 'an integer', 'a string', 'null', ..."""
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
             list: "an array", tuple: "an array", dict: "an object", type(None): "null"}
    return names.get(type(value), f"a {type(value).__name__}")


def shown(value):
    """A short repr of `value` for an error message (bounded for any nesting or sharing)."""
    return _short.repr(value)


def fail(file, field, value, expected):
    """FileError: `file: field is value (its type); expected ...`."""
    where = f"{file}: {field}" if field else f"{file}"
    return FileError(f"{where} is {shown(value)} ({json_type(value)}); expected {expected}")


def _range(low, high):
    if low is not None and high is not None:
        return f" in [{low}, {high}]"
    return f" >= {low}" if low is not None else (f" <= {high}" if high is not None else "")


@dataclass(frozen=True)
class Int:
    """An integer (not a bool, not 2.0) in [low, high]."""
    low: int = None
    high: int = None

    def expected(self):
        return "an integer" + _range(self.low, self.high)

    def accepts(self, v):
        return (type(v) is int and (self.low is None or v >= self.low)
                and (self.high is None or v <= self.high))


@dataclass(frozen=True)
class Number:
    """A finite number (an integer or a float, not a bool) in [low, high]; high_open: < high."""
    low: float = None
    high: float = None
    high_open: bool = False

    def expected(self):
        if self.high_open:
            return f"a finite number in [{self.low}, {self.high})"
        return "a finite number" + _range(self.low, self.high)

    def accepts(self, v):
        finite = (math.isfinite(v) if type(v) is float else  # an int beyond float's range
                  type(v) is int and abs(v) <= sys.float_info.max)  # is no usable number
        return (finite and (self.low is None or v >= self.low)
                and (self.high is None or (v < self.high if self.high_open else v <= self.high)))


@dataclass(frozen=True)
class Bool:
    """true or false (not "false", not 0)."""

    def expected(self):
        return "true or false"

    def accepts(self, v):
        return type(v) is bool


@dataclass(frozen=True)
class Str:
    """A string; choices: the only ones allowed; length: exactly that many characters."""
    choices: tuple = None
    length: int = None
    max_length: int = None

    def expected(self):
        if self.choices is not None:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        if self.length is not None:
            return f"a string of {self.length} character{'s' * (self.length != 1)}"
        return "a string" + (f" of at most {self.max_length} characters"
                             if self.max_length is not None else "")

    def accepts(self, v):
        return (type(v) is str and (self.choices is None or v in self.choices)
                and (self.length is None or len(v) == self.length)
                and (self.max_length is None or len(v) <= self.max_length))


@dataclass(frozen=True)
class Const:
    """Exactly this value (compared with its type: true is not 1)."""
    value: object

    def expected(self):
        return json.dumps(self.value)

    def accepts(self, v):
        return type(v) is type(self.value) and v == self.value


@dataclass(frozen=True)
class Instance:
    """An object of a Python class that JSON does not have (a torch.Tensor in ckpt.pt)."""
    cls: type

    def expected(self):
        return f"a {self.cls.__module__}.{self.cls.__name__}"

    def accepts(self, v):
        return isinstance(v, self.cls)


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
    """A JSON array (a list) of at most max_items values, each fitting `item`."""
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
    """An object with named fields {name: spec or Optional(spec)}; other keys are ignored."""
    fields: dict


def check(value, spec, file, field=""):
    """`value` checked against `spec` (defaults filled in for absent Optional fields).

    file: the name in the error message; field: where `value` sits in the file ('' for the
    whole file). Raises FileError naming both for the first thing that does not fit.
    """
    if isinstance(spec, Nullable):
        if value is None:
            return None
        spec = spec.spec
        if not isinstance(spec, (Object, Array, Map)) and not spec.accepts(value):
            raise fail(file, field, value, f"null or {spec.expected()}")
    if isinstance(spec, Object):
        if type(value) is not dict:
            raise fail(file, field, value, "an object")
        out = dict(value)  # other keys kept as they are, unchecked
        for name, sub in spec.fields.items():
            inner = f"{field}.{name}" if field else name
            if name not in value:
                if not isinstance(sub, Optional):
                    raise FileError(f"{file}: {inner} is missing")
                out[name] = sub.default
                continue
            out[name] = check(value[name], sub.spec if isinstance(sub, Optional) else sub,
                              file, inner)
        return out
    if isinstance(spec, (Array, Map)):
        kind = list if isinstance(spec, Array) else dict
        if type(value) is not kind:
            raise fail(file, field, value, "an array" if kind is list else "an object")
        low = spec.min_items
        if len(value) < low or (spec.max_items is not None and len(value) > spec.max_items):
            expected = (f"at least {low}" if spec.max_items is None else
                        f"{low}" if low == spec.max_items else f"{low} to {spec.max_items}")
            raise FileError(f"{file}: {field or 'the file'} has {len(value)} entries; expected "
                            f"{expected}")
        if kind is list:
            return [check(v, spec.item, file, f"{field}[{i}]") for i, v in enumerate(value)]
        for k, v in value.items():
            check(k, spec.key, file, f"{field} key {shown(k)}")
            check(v, spec.value, file, f"{field}[{shown(k)}]")
        return value
    if not spec.accepts(value):
        raise fail(file, field, value, spec.expected())
    return value


def read_json(path, spec=None, max_bytes=MAX_JSON_BYTES):
    """The JSON value in the file at `path`, checked against `spec` if given.

    Bounded: a file over max_bytes is refused before it is read; nesting more than
    MAX_JSON_DEPTH deep is an error, not a RecursionError later. Raises FileError naming the file
    (not UTF-8, not JSON, too large, too deep, or not fitting `spec`), FileNotFoundError
    when it does not exist.
    """
    path = os.fspath(path)
    try:
        size = os.path.getsize(path)
        if size > max_bytes:
            raise FileError(f"{path} is {size:,} bytes; a file of this kind is at most "
                            f"{max_bytes:,}")
        with open(path, "rb") as f:
            data = f.read(max_bytes + 1)
    except FileNotFoundError:
        raise
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
    _check_depth(value, path)
    return value if spec is None else check(value, spec, path)


def _check_depth(value, path, max_depth=MAX_JSON_DEPTH):
    """FileError if `value` nests arrays or objects more than max_depth deep (a walk without
    recursion): deeper values would make copy, repr or json.dumps recurse past Python's limit."""
    stack = [(value, 1)] if isinstance(value, (dict, list)) else []
    while stack:
        item, depth = stack.pop()
        if depth > max_depth:
            raise FileError(f"{path} nests arrays or objects more than {max_depth} deep")
        children = item.values() if isinstance(item, dict) else item
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
