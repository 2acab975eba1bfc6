"""Seeded random graphs of microtensor ops, each replayable in PyTorch (the differential test).

`make_case(seed)` draws input arrays and a chain of ops, running microtensor as it goes so
that every step fits the shapes and dtypes that the previous ones produced. Each op is a
pair of functions, ours and PyTorch's, so that `run_torch(case)` replays the same graph
there. Ops draw new inputs (a second operand, a mask, targets) as they need them; some
steps reuse an earlier intermediate, so a tensor feeds two ops. Only the public API is
used: Tensor, its operators and methods, microtensor.functional.
"""
import numpy as np

import microtensor as mt
import microtensor.functional as F

SPECIALS = (np.inf, -np.inf, np.nan)


class Case:
    """Inputs, steps and microtensor's results of one random graph.

    leaves: [(array, requires_grad)]; steps: [(op name, argument refs, params)], where a
    ref is ("leaf", i) or ("step", j); values: our Tensor after each step.
    """

    def __init__(self, seed):
        self.seed, self.leaves, self.steps, self.values = seed, [], [], []
        self.mt_leaves = []

    def leaf(self, array, requires_grad):
        requires_grad = requires_grad and np.issubdtype(array.dtype, np.floating)
        self.leaves.append((array, requires_grad))
        self.mt_leaves.append(mt.Tensor(array.copy(), requires_grad=requires_grad))
        return ("leaf", len(self.leaves) - 1)

    def get(self, ref):
        return self.mt_leaves[ref[1]] if ref[0] == "leaf" else self.values[ref[1]]

    def apply(self, name, refs, **params):
        out = OPS[name][0](*(self.get(r) for r in refs), **params)
        self.steps.append((name, refs, params))
        self.values.append(out)
        return ("step", len(self.values) - 1)


# ---- random inputs ------------------------------------------------------------------------
def random_shape(rng, ndim=None, allow_zero=True):
    ndim = int(rng.integers(0, 5)) if ndim is None else ndim
    shape = [int(n) for n in rng.integers(1, 5, size=ndim)]
    if allow_zero and ndim and rng.random() < 0.06:  # a zero-size input
        shape[int(rng.integers(ndim))] = 0
    return tuple(shape)


def random_array(rng, shape, dtype, specials=False):
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-3, 4, size=shape).astype(dtype)
    a = (rng.standard_normal(shape) * 1.5).astype(dtype)
    if specials and a.size and rng.random() < 0.5:
        a.reshape(-1)[int(rng.integers(a.size))] = SPECIALS[int(rng.integers(3))]
    return a


def broadcast_partner(rng, shape):
    """A shape that broadcasts with `shape` both ways: drop leading dims, 1s on either side."""
    shape = list(shape)
    ours, theirs = shape[:], shape[int(rng.integers(0, len(shape) + 1)):] if shape else []
    offset = len(shape) - len(theirs)
    for i in range(len(theirs)):
        r = rng.random()
        if r < 0.25:
            theirs[i] = 1
        elif r < 0.4 and ours[offset + i] == 1:  # ours is 1 there, theirs grows it
            theirs[i] = int(rng.integers(2, 4))
    if offset == 0 and rng.random() < 0.2:  # a leading dim that only the partner has
        theirs = [int(rng.integers(1, 3))] + theirs
    return tuple(theirs)


def random_axes(rng, ndim):
    """None, one axis (maybe negative) or a tuple of distinct axes."""
    r = rng.random()
    if ndim == 0 or r < 0.25:
        return None
    if r < 0.55:
        return int(rng.integers(-ndim, ndim))
    k = int(rng.integers(1, ndim + 1))
    return tuple(int(a) for a in rng.choice(ndim, size=k, replace=False))


def random_index(rng, shape):
    """One numpy index of a random kind: slices (negative steps), None, ..., ints, arrays, masks."""
    ndim, kind = len(shape), rng.integers(6)
    if ndim == 0:
        return (None, Ellipsis) if kind % 2 else ()
    if kind == 0:  # basic: a slice per leading dim, steps of either sign
        parts = []
        for n in shape[:int(rng.integers(1, ndim + 1))]:
            step = int(rng.choice([1, 2, -1, -2]))
            start = int(rng.integers(-n - 1, n + 1)) if n and rng.random() < 0.5 else None
            parts.append(slice(start, None, step))
        return tuple(parts)
    if kind == 1:  # None (newaxis) and Ellipsis with an integer
        n = shape[-1]
        return (None, Ellipsis, int(rng.integers(-n, n))) if n else (None, Ellipsis)
    if kind == 2 and shape[0]:  # an integer array with repeated entries, maybe negative
        return rng.integers(-shape[0], shape[0], size=int(rng.integers(1, 6)))
    if kind == 3:  # a boolean mask over the leading dims
        k = int(rng.integers(1, ndim + 1))
        return rng.random(shape[:k]) < 0.5
    col_axis = 2 if ndim >= 3 else 1
    if kind == 4 and ndim >= 2 and shape[0] and shape[col_axis]:  # two arrays, broadcast
        rows = rng.integers(0, shape[0], size=(2, 1))
        cols = rng.integers(0, shape[col_axis], size=(3,))
        return (rows, slice(None), cols) if ndim >= 3 else (rows, cols)
    return (Ellipsis, slice(None, None, -1))  # Ellipsis then a reversed last dim


def to_torch_index(index, shape):
    """Any numpy index as flat positions: x.reshape(-1)[positions] in PyTorch reads the same
    elements (PyTorch has no negative steps; its gather accumulates repeated reads)."""
    return np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)[index]


SCALARS = (2, -3, 0.5, 1.5, np.float32(1.25), np.float64(-0.75), np.int64(2), True)
# np.bool_ scalars are left out: PyTorch reads them as floats, microtensor as bools
# (the differences table in microtensor/tensor.py).

# ---- the ops: (microtensor, PyTorch), each called with (*tensors, **params) ----------------
def _t():
    import torch  # late: the module is importable without PyTorch

    return torch


def _as_torch(array):
    # a copy: also of a numpy scalar or a view with negative strides (from_numpy refuses both)
    return _t().tensor(np.array(array))


def _tf():
    return _t().nn.functional


def _dims(x, axis):
    return tuple(range(x.ndim)) if axis is None else axis


def _torch_softmax(x, axis):
    # Documented difference: a row that is all −inf gives zeros here, NaN in PyTorch (a fully
    # blocked query, microtensor/tensor.py). Emulate ours for those rows only.
    torch = _t()
    dead = torch.isneginf(x).all(dim=axis, keepdim=True) & torch.ones_like(x, dtype=torch.bool)
    out = torch.softmax(torch.where(dead, torch.zeros_like(x), x), dim=axis)
    return torch.where(dead, torch.zeros_like(out), out)


def _torch_gelu(x, approximate="none"):
    # PyTorch's float32 GELU gives NaN at +inf in its vectorized path (8 elements or more)
    # and inf on shorter arrays and in float64: only the value inf = lim x·Φ(x) is defined.
    # The gradient there stays PyTorch's own (NaN, as ours).
    torch = _t()
    out = _tf().gelu(x, approximate=approximate)
    return torch.where(torch.isposinf(x), torch.full_like(out, float("inf")), out)


def _binary(op, reflected=False):
    ours = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
            "/": lambda a, b: a / b}[op]
    dunder = {"+": "add", "-": "sub", "*": "mul", "/": "truediv"}[op]
    if not reflected:
        return ours, lambda a, b: getattr(a, f"__{dunder}__")(b)
    # scalar on the left: ours through Python's reflection; PyTorch's __r*__ directly, so that
    # a numpy scalar does not turn the tensor into an array
    return (lambda a, scalar: ours(scalar, a),
            lambda a, scalar: getattr(a, f"__r{dunder}__")(scalar))


OPS = {
    "exp": (lambda x: x.exp(), lambda x: x.exp()),
    "log": (lambda x: x.log(), lambda x: x.log()),
    "sqrt": (lambda x: x.sqrt(), lambda x: x.sqrt()),
    "tanh": (lambda x: x.tanh(), lambda x: x.tanh()),
    "neg": (lambda x: -x, lambda x: -x),
    "relu": (lambda x: F.relu(x), lambda x: _t().relu(x)),
    "gelu": (lambda x: F.gelu(x), _torch_gelu),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), lambda x: _torch_gelu(x, "tanh")),
    "pow": (lambda x, p: x ** p, lambda x, p: x ** p),
    "scalar_add": _binary("+"), "scalar_sub": _binary("-"),
    "scalar_mul": _binary("*"), "scalar_div": _binary("/"),
    "scalar_radd": _binary("+", True), "scalar_rsub": _binary("-", True),
    "scalar_rmul": _binary("*", True), "scalar_rdiv": _binary("/", True),
    "add": _binary("+"), "sub": _binary("-"), "mul": _binary("*"), "div": _binary("/"),
    "matmul": (lambda a, b: a @ b, lambda a, b: a @ b),
    "sum": (lambda x, axis, keepdims: x.sum(axis=axis, keepdims=keepdims),
            lambda x, axis, keepdims: x.sum(dim=_dims(x, axis), keepdim=keepdims)),
    "mean": (lambda x, axis, keepdims: x.mean(axis=axis, keepdims=keepdims),
             lambda x, axis, keepdims: x.mean(dim=_dims(x, axis), keepdim=keepdims)),
    "max": (lambda x, axis, keepdims: x.max(axis=axis, keepdims=keepdims),
            # x.max() with no axis is torch's x.max() (a NaN's gradient goes to the NaNs);
            # with one, torch's amax
            lambda x, axis, keepdims: x.max() if axis is None and not keepdims
            else _t().amax(x, dim=_dims(x, axis), keepdim=keepdims)),
    "reshape": (lambda x, shape: x.reshape(*shape), lambda x, shape: x.reshape(shape)),
    "view": (lambda x, shape: x.view(shape), lambda x, shape: x.reshape(shape)),
    "transpose": (lambda x, d0, d1: x.transpose(d0, d1), lambda x, d0, d1: x.transpose(d0, d1)),
    "permute": (lambda x, dims: x.permute(*dims), lambda x, dims: x.permute(*dims)),
    "T": (lambda x: x.T, lambda x: x.T),
    "getitem": (lambda x, index, shape: x[index],
                lambda x, index, shape: x.reshape(-1)[
                    _as_torch(to_torch_index(index, shape))]),
    "masked_fill": (lambda x, mask, value: x.masked_fill(mask, value),
                    lambda x, mask, value: x.masked_fill(_as_torch(mask), value)),
    "softmax": (lambda x, axis: x.softmax(axis), _torch_softmax),
    "log_softmax": (lambda x, axis: F.log_softmax(x, axis),
                    lambda x, axis: _t().log_softmax(x, dim=axis)),
    "layer_norm": (lambda x, *wb, shape, eps: F.layer_norm(x, shape, *wb, eps=eps),
                   lambda x, *wb, shape, eps: _tf().layer_norm(x, shape, *wb, eps=eps)),
    "cross_entropy": (
        lambda z, targets, **kw: F.cross_entropy(z, targets, **kw),
        lambda z, targets, **kw: _tf().cross_entropy(
            z.permute(0, 2, 1) if z.ndim == 3 else z, _as_torch(targets), **kw)),
    "embedding": (lambda w, ids: F.embedding(ids, w),
                  lambda w, ids: _tf().embedding(_as_torch(ids), w)),
    "dropout_p0": (lambda x: F.dropout(x, 0.0), lambda x: _tf().dropout(x, 0.0)),
}

UNARY = ("exp", "log", "sqrt", "tanh", "neg", "relu", "gelu", "gelu_tanh", "dropout_p0")
BINARY = ("add", "sub", "mul", "div")


def _factor_shape(rng, shape):
    """A new shape with the same number of elements (maybe with a −1)."""
    size = int(np.prod(shape))
    if size == 0:
        return tuple(n for n in shape if n)[::-1] + (0,)  # (0, -1) would be ambiguous
    dims = []
    for p in (2, 3, 2, 2, 3, 5, 7):
        while size % p == 0 and rng.random() < 0.6:
            dims.append(p)
            size //= p
    dims.append(size)
    rng.shuffle(dims)
    if rng.random() < 0.3:
        dims[int(rng.integers(len(dims)))] = -1
    return tuple(int(d) for d in dims)


def _matmul_partner(rng, shape, on_right):
    """A shape that matmul accepts with `shape` (1-D on either side, broadcast batch dims)."""
    k = shape[-1] if on_right else (shape[0] if len(shape) == 1 else shape[-2])
    r = rng.random()
    if r < 0.25:
        return (k,)
    batch = list(shape[:-2])
    batch = [1 if rng.random() < 0.3 else n for n in batch]
    if rng.random() < 0.3:
        batch = [int(rng.integers(1, 3))] + batch
    m = int(rng.integers(1, 4))
    return tuple(batch) + ((k, m) if on_right else (m, k))


# _zero_dim_difference: left out by design (the differences table in microtensor/tensor.py):
# a 0-dim float tensor that requires grad, with a tensor with dims of another float dtype.
# PyTorch keeps the dims' dtype (float32 + 0-dim float64 is float32); microtensor has no
# differentiable cast and widens, as numpy does. The draws below never combine those two.


def _step(case, rng, ref, dtype, specials):
    """Draw one op that fits the tensor at `ref`; return the ref of its output."""
    x = case.get(ref)
    shape, ndim = x.shape, x.ndim
    kind = rng.choice(["unary", "scalar", "binary", "reuse", "mix", "reduce", "shape",
                       "index", "matmul", "nn"],
                      p=[.14, .12, .12, .07, .07, .1, .1, .1, .08, .1])
    if kind == "unary":
        return case.apply(str(rng.choice(UNARY)), [ref])
    if kind == "scalar":
        scalar = SCALARS[int(rng.integers(len(SCALARS)))]
        if rng.random() < 0.25:
            return case.apply("pow", [ref], p=[2, 3, 0.5, -1, np.float64(2), 0][rng.integers(6)])
        op = str(rng.choice(["scalar_add", "scalar_sub", "scalar_mul", "scalar_div",
                             "scalar_radd", "scalar_rsub", "scalar_rmul", "scalar_rdiv"]))
        if op.endswith("sub") and isinstance(scalar, bool):
            scalar = 1  # PyTorch refuses "-" with a bool (so do we; tested elsewhere)
        return case.apply(op, [ref], **({"b": scalar} if "_r" not in op else {"scalar": scalar}))
    if kind == "binary":
        other_dtype = dtype if rng.random() < 0.8 else (np.float32 if dtype == np.float64
                                                        else np.float64)
        other_shape = broadcast_partner(rng, shape)
        if (len(other_shape) == 0) != (ndim == 0):
            other_dtype = x.dtype  # left out by design: see _zero_dim_difference
        other = case.leaf(random_array(rng, other_shape, other_dtype, specials),
                          requires_grad=rng.random() < 0.8)
        pair = [ref, other] if rng.random() < 0.5 else [other, ref]
        return case.apply(str(rng.choice(BINARY)), pair)
    if kind == "reuse":  # a tensor used twice: with itself, or with an earlier intermediate
        earlier = [("step", j) for j, v in enumerate(case.values)
                   if v.dtype == x.dtype and _broadcasts(v.shape, shape)]
        other = earlier[int(rng.integers(len(earlier)))] if earlier else ref
        return case.apply(str(rng.choice(BINARY)), [ref, other])
    if kind == "mix":  # an int or bool constant combined with a scalar, then with x
        const_dtype = [np.int64, np.int32, np.bool_][rng.integers(3)]
        # x 0-dim, the constant too: see _zero_dim_difference
        const_shape = broadcast_partner(rng, shape) if ndim else ()
        const = case.leaf(random_array(rng, const_shape, const_dtype), False)
        scalar = SCALARS[int(rng.integers(len(SCALARS)))]
        op = str(rng.choice(["scalar_add", "scalar_mul", "scalar_div", "scalar_rmul"]))
        mixed = case.apply(op, [const], **({"b": scalar} if "_r" not in op else
                                           {"scalar": scalar}))
        return case.apply(str(rng.choice(["add", "mul"])), [ref, mixed])
    if kind == "reduce":
        op = "max" if (rng.random() < 0.3 and x.size) else str(rng.choice(["sum", "mean"]))
        return case.apply(op, [ref], axis=random_axes(rng, ndim), keepdims=bool(rng.random() < 0.5))
    if kind == "shape":
        r = rng.random()
        if ndim == 2 and r < 0.15:
            return case.apply("T", [ref])
        if ndim >= 2 and r < 0.45:
            d0, d1 = (int(d) for d in rng.integers(-ndim, ndim, size=2))
            return case.apply("transpose", [ref], d0=d0, d1=d1)
        if ndim >= 1 and r < 0.65:
            return case.apply("permute", [ref], dims=tuple(int(d) for d in rng.permutation(ndim)))
        return case.apply(str(rng.choice(["reshape", "view"])), [ref],
                          shape=_factor_shape(rng, shape))
    if kind == "index":
        return case.apply("getitem", [ref], index=random_index(rng, shape), shape=shape)
    if kind == "matmul" and ndim >= 1:
        on_right = rng.random() < 0.6
        partner = case.leaf(random_array(rng, _matmul_partner(rng, shape, on_right), x.dtype,
                                         specials), requires_grad=rng.random() < 0.8)
        return case.apply("matmul", [ref, partner] if on_right else [partner, ref])
    return _nn_step(case, rng, ref, x, specials)


def _broadcasts(a, b):
    try:
        np.broadcast_shapes(a, b)
        return True
    except ValueError:
        return False


def _nn_step(case, rng, ref, x, specials, kind=None):
    shape, ndim = x.shape, x.ndim
    if ndim == 0:
        return case.apply("dropout_p0", [ref])
    kind = kind or rng.choice(["softmax", "log_softmax", "layer_norm", "cross_entropy",
                               "embedding", "masked_fill"])
    if kind in ("softmax", "log_softmax"):
        return case.apply(str(kind), [ref], axis=int(rng.integers(-ndim, ndim)))
    if kind == "layer_norm":
        norm_shape = shape[ndim - int(rng.integers(1, ndim + 1)):]
        affine = [case.leaf(random_array(rng, norm_shape, x.dtype), rng.random() < 0.8)
                  for _ in range(int(rng.integers(0, 3)))]
        return case.apply("layer_norm", [ref, *affine], shape=norm_shape,
                          eps=float(rng.choice([1e-5, 1e-3])))
    if kind == "cross_entropy" and ndim in (2, 3) and shape[-1]:
        targets = rng.integers(0, shape[-1], size=shape[:-1])
        targets[rng.random(targets.shape) < 0.25] = -100
        if rng.random() < 0.1:
            targets[...] = -100  # every target ignored
        return case.apply("cross_entropy", [ref], targets=targets,
                          reduction=str(rng.choice(["mean", "sum", "none"])),
                          label_smoothing=float(rng.choice([0.0, 0.0, 0.1, 0.3])))
    if kind == "embedding" and ndim == 2 and shape[0]:
        ids = rng.integers(0, shape[0], size=random_shape(rng, int(rng.integers(1, 3))))
        return case.apply("embedding", [ref], ids=ids)
    # a mask broadcasts to x without growing it: x's dims or 1s, maybe fewer of them
    mask_shape = tuple(1 if rng.random() < 0.3 else n for n in shape)
    mask = rng.random(mask_shape[int(rng.integers(0, ndim + 1)):]) < 0.3
    value = float(rng.choice([0.0, -1e9, -np.inf, 2.5]))
    return case.apply("masked_fill", [ref], mask=mask, value=value)


def make_case(seed):
    """A random graph of 1 to 6 ops on one or two inputs; float64 mostly, float32 sometimes."""
    rng = np.random.default_rng(seed)
    dtype = np.float64 if rng.random() < 0.8 else np.float32
    specials = rng.random() < 0.3
    case = Case(seed)
    case.dtype = dtype
    start = rng.random()
    if start < 0.1:  # rows of an embedding table, as a model's first layer
        table = case.leaf(random_array(rng, random_shape(rng, 2), dtype, specials), True)
        ids = rng.integers(0, max(case.get(table).shape[0], 1), size=random_shape(rng, 2))
        ref = case.apply("embedding", [table], ids=ids) if case.get(table).shape[0] else table
    else:
        ref = case.leaf(random_array(rng, random_shape(rng), dtype, specials), True)
    with np.errstate(all="ignore"):
        for _ in range(int(rng.integers(1, 7))):
            ref = _step(case, rng, ref, dtype, specials)
        x = case.get(ref)
        if start > 0.85 and x.ndim and x.shape[-1]:  # a loss at the end, as a model's last layer
            if x.ndim not in (2, 3):
                ref = case.apply("reshape", [ref], shape=(-1, x.shape[-1]) if x.size else
                                 (0, x.shape[-1]))
            _nn_step(case, rng, ref, case.get(ref), specials, kind="cross_entropy")
    return case


def run_torch(case):
    """Replay `case` in PyTorch: (leaf tensors, value after each step, error or None).

    Stops at the first step that PyTorch refuses (where microtensor did not).
    """
    torch = _t()
    leaves = [torch.tensor(a.copy(), requires_grad=g) for a, g in case.leaves]
    values = []
    for j, (name, refs, params) in enumerate(case.steps):
        args = [leaves[i] if kind == "leaf" else values[i] for kind, i in refs]
        try:
            values.append(OPS[name][1](*args, **params))
        except (RuntimeError, ValueError, TypeError, IndexError) as error:
            return leaves, values, f"step {j} {name}: PyTorch raised {error!r}"
    return leaves, values, None
