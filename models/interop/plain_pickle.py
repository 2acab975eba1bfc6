"""Reading a pickle of plain data only (dicts, lists, strings, numbers), such as nanoGPT's meta.pkl.

An ordinary `pickle.load` can call any function named in the file, so opening a stranger's
pickle can run their code; it can also exhaust memory or time with a few hundred bytes.
So the file is first read as a list of opcodes (`pickletools.genops`, which builds
nothing) and refused unless

- its size is at most max_bytes,
- every opcode builds plain data: no class or function is named (Python documentation,
  `pickle`, "Restricting Globals"), and no tuple or set (hashing a tuple nested a million
  deep crashes Python; meta.pkl has none),
- every memo index is below the number of opcodes (the C unpickler grows its memo to the
  largest index it sees: one index of 2**31 would allocate gigabytes).

Only then does `pickle`'s own unpickler build the value, and a walk without recursion
checks it: nesting at most max_depth deep, no cycle, and no more objects met than the file
has opcodes (each object is built by one opcode; more means shared references followed
round and round, e.g. a list of two references to a list of two references to ...).
"""
import io
import pickle
import pickletools
import zipfile

from ..schema import FileError

MAX_BYTES = 64 << 20
MAX_DEPTH = 32
# The opcodes that build None, bools, ints, floats, strings, bytes, lists and dicts, and
# the memo and framing that pickle.dumps writes around them (pickletools names them).
PLAIN_OPCODES = frozenset(
    "PROTO FRAME STOP MARK POP POP_MARK NONE NEWTRUE NEWFALSE INT BININT BININT1 BININT2 "
    "LONG LONG1 LONG4 FLOAT BINFLOAT STRING BINSTRING SHORT_BINSTRING BINBYTES "
    "SHORT_BINBYTES BINBYTES8 UNICODE BINUNICODE SHORT_BINUNICODE BINUNICODE8 EMPTY_LIST "
    "APPEND APPENDS LIST EMPTY_DICT DICT SETITEM SETITEMS PUT BINPUT LONG_BINPUT MEMOIZE "
    "GET BINGET LONG_BINGET".split())
MEMO_OPCODES = frozenset("PUT BINPUT LONG_BINPUT GET BINGET LONG_BINGET".split())
PLAIN_TYPES = (dict, list, str, int, float, bool, type(None), bytes)


def scan_opcodes(data, path, allowed=PLAIN_OPCODES):
    """The number of opcodes in the pickle `data`; FileError naming `path` for one not allowed,
    a memo index out of range, or a truncated or malformed pickle. Builds no object."""
    count, memo_limit = 0, len(data)  # a file of n bytes has fewer than n opcodes
    try:
        for opcode, arg, pos in pickletools.genops(data):
            count += 1
            if opcode.name not in allowed:
                what = f" {arg}" if opcode.name == "GLOBAL" else ""
                raise FileError(f"{path}: byte {pos} is the opcode {opcode.name}{what}; only "
                                "plain data (dicts, lists, strings, numbers) is read, never "
                                "a class, function, tuple or set")
            if opcode.name in MEMO_OPCODES and not 0 <= arg < memo_limit:
                raise FileError(f"{path}: byte {pos} uses memo index {arg}; a file of "
                                f"{len(data)} bytes has fewer entries")
    except FileError:
        raise
    except (ValueError, EOFError) as error:  # truncated, unknown opcode, a 4300-digit int
        raise FileError(f"{path} is not a readable pickle ({error})") from None
    return count


def check_plain(value, path, max_objects, max_depth=MAX_DEPTH):
    """Walk `value` without recursion: FileError for a type outside PLAIN_TYPES, a cycle,
    nesting deeper than max_depth, or more than max_objects objects met (shared ones counted
    each time they are met)."""
    met, on_path = 0, set()
    stack = [(value, 1, "")]  # (object, depth, where) or (None, -1, id) to leave a container
    while stack:
        item, depth, where = stack.pop()
        if depth < 0:
            on_path.discard(where)
            continue
        met += 1
        if met > max_objects:
            raise FileError(f"{path}: the value refers to shared objects over and over "
                            f"(more than {max_objects:,} met, more than the file builds)")
        if type(item) not in PLAIN_TYPES:
            raise FileError(f"{path}: {where or 'the value'} is a {type(item).__name__}; only "
                            "dicts, lists, strings and numbers are read")
        if not isinstance(item, (dict, list)):
            continue
        if id(item) in on_path:
            raise FileError(f"{path}: {where or 'the value'} contains itself (a cycle)")
        if depth > max_depth:
            raise FileError(f"{path}: the value nests lists or dicts more than {max_depth} deep")
        on_path.add(id(item))
        stack.append((None, -1, id(item)))
        pairs = item.items() if isinstance(item, dict) else enumerate(item)
        for key, child in pairs:
            stack.append((child, depth + 1, f"{where}[{key!r:.40}]"))
            if isinstance(item, dict):
                stack.append((key, depth + 1, f"{where} (a key)"))


TUPLE_OPCODES = frozenset("EMPTY_TUPLE TUPLE TUPLE1 TUPLE2 TUPLE3".split())
PUT_OPCODES = frozenset("PUT BINPUT LONG_BINPUT MEMOIZE".split())


def tuple_depth(data, path, max_depth=MAX_DEPTH):
    """How deep the pickle `data` nests tuples, found by running its opcodes on a stack of
    depths instead of objects; FileError past max_depth.

    Hashing a tuple (a dict key) recurses in C without Python's recursion limit: a million
    nested tuples crash the interpreter. PyTorch's restricted unpickler builds tuples, so
    ckpt.pt is scanned first. Lists and dicts are not hashable, so only tuples count.
    """
    stack, marks, memo, deepest = [], [], {}, 0
    try:
        for opcode, arg, pos in pickletools.genops(data):
            name, before = opcode.name, opcode.stack_before
            if name == "MARK":
                marks.append(len(stack))
                continue
            if name in PUT_OPCODES:  # stores the top, leaves the stack as it is
                memo[len(memo) if name == "MEMOIZE" else arg] = stack[-1] if stack else 0
                continue
            if pickletools.markobject in before:  # pops down to the last MARK, and below it
                below = before.index(pickletools.markobject)
                cut = (marks.pop() if marks else 0) - below
            else:
                cut = len(stack) - len(before)
            popped, stack[max(cut, 0):] = stack[max(cut, 0):], []
            if name in ("GET", "BINGET", "LONG_BINGET"):
                stack.append(memo.get(arg, 0))
            elif name == "DUP":
                stack += popped * 2
            else:
                depth = max(popped, default=0) + 1 if name in TUPLE_OPCODES else 0
                stack += [depth] * len(opcode.stack_after)
                deepest = max(deepest, depth)
                if deepest > max_depth:
                    raise FileError(f"{path}: byte {pos} nests tuples more than {max_depth} "
                                    "deep")
    except (ValueError, EOFError) as error:
        raise FileError(f"{path} is not a readable pickle ({error})") from None
    return deepest


def scan_torch_pickle(path, max_bytes=MAX_BYTES):
    """Check the pickle inside a torch.save zip archive (ckpt.pt) before torch.load runs it:
    at most max_bytes, tuples at most MAX_DEPTH deep. FileError naming `path` otherwise."""
    try:
        with zipfile.ZipFile(path) as archive:
            pickles = [i for i in archive.infolist() if i.filename.endswith("data.pkl")]
            if len(pickles) != 1 or pickles[0].file_size > max_bytes:
                raise FileError(f"{path}: expected one data.pkl of at most {max_bytes:,} "
                                f"bytes in the archive; found {len(pickles)}")
            data = archive.read(pickles[0])
    except FileError:
        raise
    except IsADirectoryError:
        raise FileError(f"{path} is a directory, not a PyTorch checkpoint") from None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError,
            NotImplementedError) as error:
        raise FileError(f"{path} is not a torch.save archive (a zip file; {error})") from None
    tuple_depth(data, f"{path} (data.pkl)")


class PlainUnpickler(pickle.Unpickler):
    """An Unpickler that refuses to look up any class or function (a second lock on the door)."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"it names {module}.{name}; only plain data is read")


def load_plain(path, max_bytes=MAX_BYTES):
    """The plain data in the pickle file `path`: dicts, lists, strings, numbers, None.

    Raises FileError (a ValueError) naming the path for anything else, a file over
    max_bytes, or a structure that is too deep, cyclic or shared over and over.
    """
    try:
        with open(path, "rb") as f:
            data = f.read(max_bytes + 1)
    except IsADirectoryError:
        raise FileError(f"{path} is a directory, not a pickle") from None
    if len(data) > max_bytes:
        raise FileError(f"{path} is over {max_bytes:,} bytes; a meta.pkl is far smaller")
    count = scan_opcodes(data, path)
    try:
        value = PlainUnpickler(io.BytesIO(data)).load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, MemoryError) as error:
        raise FileError(f"{path} cannot be read as plain data ({error})") from None
    check_plain(value, path, max_objects=count + 1)
    return value
