"""Where a student's code runs: a child process per exercise, which imports the student's file and
answers the grader's calls, one at a time, with plain numbers; the grader (the parent process)
holds the expected values and makes every comparison.

Why a process: a student's file is Python, and Python code can rewrite any function or read any
frame of its own process. Run in the grader's process it could turn every check green (rebind a
check's `__code__`) or copy the answer out of the grader's stack frame. In its own process it
can only change what it returns, and what it returns is data: the channel carries a JSON header
and arrays in numpy's .npy format, read back with `allow_pickle=False` (never an object).

The channel, both ways: one message is an 8-byte length and a JSON header, then, for each array
the header names, an 8-byte length and its .npy bytes. Values are encoded as JSON with tags:
{"$a": i} an array, {"$s": i} a numpy scalar, {"$t": i, "g": requires_grad} a Tensor,
{"$tuple": [...]}, {"$d": [[key, value], ...]} a dict, {"$block": ...} a TransformerBlock
(its constructor's arguments and state_dict), {"$f": "inf"} a float JSON cannot write.

This file runs as a script in the child (`python sandbox.py`), importing nothing of the project
before the student's file is loaded: an exercise in numpy gets a child in which the engine, the
reference answers and the graders are not even imported. guard.py says what the child refuses.
"""
import io
import json
import math
import struct
import sys

import numpy as np

MAX_MESSAGE = 256 << 20  # bytes: a reply larger than this is refused, not read


class ChannelError(Exception):
    """A message that is not what the channel carries (too large, a pickled array, a bad tag)."""


# ---- the codec: values <-> (JSON-able structure, list of arrays) ----

def encode(value, arrays, tensor_type=None, block_type=None):
    """`value` as JSON-able data; its arrays appended to `arrays`. TypeError for anything else."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"$f": repr(value)}
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject or value.dtype.kind not in "biufc":
            raise TypeError(f"an array of {value.dtype}, not numbers")
        arrays.append(np.ascontiguousarray(value).reshape(value.shape))  # 0-d stays 0-d
        return {"$a": len(arrays) - 1}
    if isinstance(value, np.generic):
        if value.dtype.kind not in "biufc":
            raise TypeError(f"a numpy {value.dtype}, not a number")
        arrays.append(np.asarray(value))
        return {"$s": len(arrays) - 1}
    if tensor_type is not None and isinstance(value, tensor_type):
        arrays.append(np.ascontiguousarray(value.data).reshape(value.data.shape))
        return {"$t": len(arrays) - 1, "g": bool(value.requires_grad)}
    if block_type is not None and isinstance(value, block_type):
        config = [int(value.ln_1.weight.shape[0]), int(value.attn.n_heads),
                  int(value.mlp.fc.weight.shape[1]), bool(value.norm_first),
                  str(value.mlp.activation), value.ln_1.bias is not None]
        state = {k: np.array(v) for k, v in value.state_dict().items()}
        return {"$block": config, "state": encode(state, arrays, tensor_type, block_type)}
    if isinstance(value, tuple):
        return {"$tuple": [encode(v, arrays, tensor_type, block_type) for v in value]}
    if isinstance(value, list):
        return [encode(v, arrays, tensor_type, block_type) for v in value]
    if isinstance(value, dict):
        return {"$d": [[encode(k, arrays, tensor_type, block_type),
                        encode(v, arrays, tensor_type, block_type)] for k, v in value.items()]}
    raise TypeError(f"a {type(value).__name__}")


def decode(data, arrays, make_tensor=None, make_block=None):
    """The value `encode` wrote; Tensors and blocks are rebuilt by `make_tensor(array, grad)`
    and `make_block(config, state)` (a plain array and ChannelError when not given)."""
    if isinstance(data, list):
        return [decode(v, arrays, make_tensor, make_block) for v in data]
    if not isinstance(data, dict):
        return data
    (tag, _), *_ = data.items() if data else ((None, None),)
    try:
        if tag == "$a":
            return arrays[data["$a"]]
        if tag == "$s":
            return arrays[data["$s"]][()]
        if tag == "$t":
            array = arrays[data["$t"]]
            return make_tensor(array, data["g"]) if make_tensor else array
        if tag == "$f":
            return float(data["$f"])
        if tag == "$tuple":
            return tuple(decode(v, arrays, make_tensor, make_block) for v in data["$tuple"])
        if tag == "$d":
            out = {}
            for k, v in data["$d"]:
                key = decode(k, arrays, make_tensor, make_block)
                out[tuple(key) if isinstance(key, list) else key] = decode(
                    v, arrays, make_tensor, make_block)
            return out
        if tag == "$block" and make_block is not None:
            return make_block(data["$block"], decode(data["state"], arrays))
    except (KeyError, IndexError, TypeError, ValueError) as error:
        raise ChannelError(f"a malformed value ({type(error).__name__}: {error})") from None
    raise ChannelError(f"an unknown tag {tag!r}")


# ---- framing ----

def _write_frame(out, payload):
    out.write(struct.pack("<Q", len(payload)))
    out.write(payload)


def _read_exact(stream, n):
    chunks, left = [], n
    while left:
        chunk = stream.read(left)
        if not chunk:
            raise EOFError("the other side closed the channel")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _read_frame(stream, budget):
    (n,) = struct.unpack("<Q", _read_exact(stream, 8))
    if n > budget[0]:
        raise ChannelError(f"a message of {n} bytes, over the {MAX_MESSAGE}-byte limit")
    budget[0] -= n
    return _read_exact(stream, n)


def send(out, header, arrays=()):
    """Write one message: `header` (JSON-able, with "n" set to the number of arrays), arrays."""
    header = dict(header, n=len(arrays))
    _write_frame(out, json.dumps(header).encode("utf-8"))
    for array in arrays:
        buffer = io.BytesIO()
        np.save(buffer, array, allow_pickle=False)
        _write_frame(out, buffer.getvalue())
    out.flush()


def receive(stream):
    """Read one message: (header dict, list of arrays); arrays are loaded without pickle."""
    budget = [MAX_MESSAGE]
    try:
        header = json.loads(_read_frame(stream, budget).decode("utf-8"))
        count = int(header.get("n", 0))
        arrays = [np.load(io.BytesIO(_read_frame(stream, budget)), allow_pickle=False)
                  for _ in range(count)]
    except (ValueError, UnicodeDecodeError, AttributeError) as error:
        raise ChannelError(f"an unreadable message ({type(error).__name__}: {error})") from None
    if not isinstance(header, dict):
        raise ChannelError("a message whose header is not an object")
    return header, arrays


# ---- the child ----

class Session:
    """The child's state: the rules of the exercise, the student's module, the trusted tasks."""

    def __init__(self, header, guard):
        self.header, self.guard = header, guard
        self.number, self.engine = int(header["number"]), bool(header["engine"])
        self.refused, self.module, self.tasks, self.builtins = None, None, None, None
        self.tensor_type = self.block_type = self.make_tensor = self.make_block = None

    def note(self, message):
        """Remember a refusal, even if the student's code catches it."""
        self.refused = self.refused or message

    def load(self):
        """Import the engine (exercises built on it) and the tasks, poison the exercise's
        piece, then import the student's file."""
        import importlib.util

        if self.engine:
            import microtensor
            import nn

            self.tensor_type, self.block_type = microtensor.Tensor, nn.TransformerBlock
            self.make_tensor = lambda a, g: microtensor.Tensor(a, requires_grad=bool(g))

            def make_block(config, state):
                d_model, n_heads, d_ff, norm_first, activation, bias = config
                block = nn.TransformerBlock(d_model, n_heads, d_ff, norm_first=norm_first,
                                            activation=activation, bias=bias)
                block.load_state_dict(state)
                return block

            self.make_block = make_block
            spec = importlib.util.spec_from_file_location("_mt_tasks", self.header["tasks"])
            self.tasks = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(self.tasks)
            self.guard.poison(self.header.get("poison", ()), self.number, self.note,
                              tuple(self.header.get("fenced_ops", ())))
        self.seal()
        # the fence made once, before any of the student's code runs: what a file rebinds in the
        # guard's globals never reaches it, and each reload gets a fresh copy of the dict
        self.builtins = self.guard.fenced_builtins("_mt_student", self.number, self.engine,
                                                   self.note)
        return self.reload()

    def seal(self):
        """Load now all the student's code may use (a module loaded later is refused unless
        it is the standard library's or numpy's), then add the audit hook (guard.seal)."""
        import importlib
        import os
        import pkgutil
        import sysconfig

        for name in self.guard.allowed_imports(self.engine):
            importlib.import_module(name)
        if self.engine:
            for package in ("microtensor", "nn"):
                root = importlib.import_module(package)
                for info in pkgutil.walk_packages(root.__path__, package + "."):
                    importlib.import_module(info.name)
        here = os.path.dirname(os.path.abspath(__file__))
        top = os.path.dirname(os.path.dirname(here))
        project = [os.path.join(top, name) for name in ("microtensor", "nn", "models", "viz")]
        paths = sysconfig.get_paths()
        trusted = {paths["stdlib"], paths["platstdlib"], os.path.dirname(np.__file__)}
        self.guard.seal(self.header["path"], project, sorted(trusted), self.number, top)

    def reload(self):
        """A fresh module of the student's file (every check starts from the file as written)."""
        import importlib.util

        self.refused = None
        name = "_mt_student"
        spec = importlib.util.spec_from_file_location(name, self.header["path"])
        module = importlib.util.module_from_spec(spec)
        module.__builtins__ = dict(self.builtins)
        try:
            spec.loader.exec_module(module)
        except self.guard.Refusal as refusal:
            return {"refused": self.refused or str(refusal)}, []
        except BaseException as error:  # noqa: B036  (SystemExit too: one line to the parent)
            line = getattr(error, "lineno", None)
            if line is None and error.__traceback__ is not None:
                tb = error.__traceback__
                while tb is not None:
                    if tb.tb_frame.f_code.co_filename == self.header["path"]:
                        line = tb.tb_lineno
                    tb = tb.tb_next
            return {"import_error": f"{type(error).__name__}: {error}", "line": line}, []
        if self.refused:
            return {"refused": self.refused}, []
        self.module = module
        functions = [f for f in self.header["functions"] if callable(vars(module).get(f))]
        return {"loaded": functions}, []

    def serve(self, header, arrays):
        """Answer one "call" (a student's function) or "task" (tasks.py, with the student's
        module) on the decoded arguments; only the result comes back (and which arguments the
        call wrote into, as indices)."""
        op = header.get("op")
        if op == "reload":
            return self.reload()
        try:
            args = decode(header["args"], arrays, self.make_tensor, self.make_block)
            kwargs = decode(header.get("kwargs") or {"$d": []}, arrays, self.make_tensor,
                            self.make_block)
        except ChannelError as error:
            return {"error": ["ChannelError", str(error)]}, []
        if op == "call":
            fn = vars(self.module).get(header["fn"])
        else:
            task = getattr(self.tasks, header["task"])

            def fn(*args, **kwargs):
                return task(self.module, *args, **kwargs)
        before = [_snapshot(a, self.tensor_type) for a in args]
        self.refused = None
        try:
            result = fn(*args, **kwargs)
        except self.guard.Refusal as refusal:
            return {"refused": self.refused or str(refusal)}, []
        except NotImplementedError as stub:
            if self.refused:
                return {"refused": self.refused}, []
            return {"not_started": str(stub)}, []
        except BaseException as error:  # noqa: B036  (the student's, whatever it is)
            if self.refused:
                return {"refused": self.refused}, []
            return {"error": [type(error).__name__, str(error)]}, []
        if self.refused:
            return {"refused": self.refused}, []
        out_arrays = []
        try:
            value = encode(result, out_arrays, self.tensor_type, self.block_type)
            # which arguments the call wrote into (their indices): a grader names an in-place
            # write; the contents never go back, so nothing written reaches the grader's arrays
            wrote = [i for i, (arg, old) in enumerate(zip(args, before))
                     if old is not None and _snapshot(arg, self.tensor_type) != old]
        except TypeError as error:
            return {"bad_return": str(error)}, []
        return {"ok": value, "wrote": wrote}, out_arrays


def _snapshot(value, tensor_type):
    """The bytes and shape of an array argument (a Tensor's array), to see a write into it."""
    if tensor_type is not None and isinstance(value, tensor_type):
        value = value.data
    if isinstance(value, np.ndarray):
        return value.shape, value.dtype.str, value.tobytes()
    if isinstance(value, list):  # e.g. exercise 13's chunks of ids
        return repr(value)
    return None


def _child():
    """Serve the parent: first a "load" message (the student's file and the exercise's rules),
    then "call", "task" and "reload" messages, each answered by one reply, until it closes."""
    import os
    import warnings

    here = os.path.dirname(os.path.abspath(__file__))
    if sys.path and os.path.abspath(sys.path[0] or ".") == here:
        sys.path.pop(0)               # the graders' folder is not importable from the child
    # the engine the grader's process uses: the one this file's package sits beside
    sys.path.insert(0, os.path.dirname(os.path.dirname(here)))
    channel_in = os.fdopen(os.dup(0), "rb")
    channel_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)                     # the student's print() goes to stderr, not the channel
    sys.stdout = os.fdopen(1, "w", buffering=1)
    warnings.simplefilter("ignore")   # numpy's overflow warnings are not the student's print()
    header, arrays = receive(channel_in)
    # the guard lives in the session alone, never a local of this frame (nor of a frame the
    # student's code runs under); the audit hook refuses sys._getframe to the student's code
    session = Session(header, _load_guard(os.path.join(here, "guard.py")))
    del header, arrays, here
    reply, out_arrays = session.load()
    send(channel_out, reply, out_arrays)
    while True:
        try:
            header, arrays = receive(channel_in)
        except EOFError:
            return
        reply, out_arrays = session.serve(header, arrays)
        sys.stdout.flush()
        send(channel_out, reply, out_arrays)


def _load_guard(path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("_mt_guard", path)
    guard = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(guard)
    return guard


if __name__ == "__main__":
    _child()
