"""Count what a forward pass costs: FLOPs per op (a multiply-add is 2) and bytes kept for backward
(notes 3.8).

    with microtensor.profile() as prof:
        loss = model(x, y)
    print(prof.table())

Matmul counts 2·M·K·N per product (the notes' convention). Every other op is counted as
one FLOP per output element, a rough figure: the notes' totals leave softmax, norms and
activations out, and so can a reader, by filtering on op name.

The profiler is one forward hook (`microtensor.hooks`): it sees each op with its inputs,
output and saved arrays, and the engine knows nothing about it. Saved bytes are what a
backward would keep, so they are 0 for ops run under `no_grad()`.
"""
import contextlib
import weakref
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from . import hooks


@dataclass
class OpRecord:
    """One op call seen by the profiler."""

    op: str
    module: str
    flops: int
    out_shape: tuple
    # {name: (shape, nbytes, id of its buffer)} kept for backward; the id finds an array that
    # two ops keep (or a view of it), so that saved_bytes() counts it once
    saved: dict = field(default_factory=dict)
    node: weakref.ref = None  # the op's graph node, while it lives

    @property
    def role(self):
        """The role its code gave the node ("A", "Z (tiled)", ...; notes 3.8), read when asked:
        attention names its steps after they ran. None once the graph is gone."""
        node = self.node() if self.node is not None else None
        return None if node is None else node.role


def _buffer_id(array):
    """id of the array that owns `array`'s memory: an op keeps a read-only view of an array
    another op keeps (A, kept by softmax and by AV), and the two are one buffer."""
    while isinstance(getattr(array, "base", None), np.ndarray):
        array = array.base
    return id(array)


def matmul_flops(a_shape, b_shape):
    """2·M·K·N for every product of a (possibly batched, broadcast) matmul; a 1-D operand
    counts as a row [1, K] (left) or a column [K, 1] (right), as numpy's matmul reads it."""
    a = (1,) + tuple(a_shape) if len(a_shape) == 1 else tuple(a_shape)
    b = tuple(b_shape) + (1,) if len(b_shape) == 1 else tuple(b_shape)
    batch = np.broadcast_shapes(a[:-2], b[:-2])
    return 2 * int(np.prod(batch, dtype=np.int64)) * a[-2] * a[-1] * b[-1]


class Profile:
    """The records of one `profile()` block, with sums by op, by module, and of saved memory."""

    def __init__(self):
        self.records = []

    def record(self, fn, inputs, out):
        """The forward hook: note one op call (`microtensor.hooks.register_forward_hook`)."""
        flops = (matmul_flops(inputs[0].shape, inputs[1].shape) if fn.op == "matmul"
                 else int(out.size))
        saved = {k: (np.shape(v), int(getattr(v, "nbytes", 0)), _buffer_id(v))
                 for k, v in fn.saved.items()}
        self.records.append(OpRecord(fn.op, fn.module, flops, out.shape, saved, weakref.ref(fn)))

    def flops(self, op=None, module=None, where=None):
        """Total FLOPs, optionally only of one op name, of modules under a path prefix, or
        of records for which `where(record)` is true."""
        return sum(r.flops for r in self._select(op, module, where))

    def saved_bytes(self, op=None, module=None, where=None):
        """Bytes of the arrays kept for backward by the selected records, each array counted
        once (softmax and the AV matmul both keep A: it is stored once). Attention's own steps
        (QKᵀ … Z, or the one tiled node) are the records with a role other than "residual"."""
        unique = {}
        for r in self._select(op, module, where):
            for _, nbytes, key in r.saved.values():
                unique[key] = max(unique.get(key, 0), nbytes)  # a view may be a part
        return sum(unique.values())

    def _select(self, op, module, where):
        for r in self.records:
            if op is not None and r.op != op:
                continue
            if module is not None and not (r.module == module or r.module.startswith(module + ".")):
                continue
            if where is not None and not where(r):
                continue
            yield r

    def by_op(self):
        """{op name: (calls, FLOPs, saved bytes)}, largest FLOPs first."""
        totals = defaultdict(lambda: [0, 0, 0])
        for r in self.records:
            t = totals[r.op]
            t[0] += 1
            t[1] += r.flops
            t[2] += sum(n for _, n, _ in r.saved.values())
        return dict(sorted(((k, tuple(v)) for k, v in totals.items()), key=lambda kv: -kv[1][1]))

    def table(self):
        """A plain-text table of `by_op()`."""
        lines = [f"{'op':<16}{'calls':>7}{'FLOPs':>16}{'saved bytes':>16}"]
        for op, (calls, flops, nbytes) in self.by_op().items():
            lines.append(f"{op:<16}{calls:>7}{flops:>16,}{nbytes:>16,}")
        lines.append(f"{'total':<16}{len(self.records):>7}{self.flops():>16,}{self.saved_bytes():>16,}")
        lines.append("(the total counts an array kept by two ops once, e.g. A by softmax and AV)")
        return "\n".join(lines)


@contextlib.contextmanager
def profile():
    """Record every op run inside the block; yields the `Profile`."""
    prof = Profile()
    with hooks.register_forward_hook(prof.record):
        yield prof
