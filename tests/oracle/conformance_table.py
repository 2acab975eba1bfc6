"""The table of the conformance test: each name microtensor shares with torch, how to call it on
both sides, and the argument forms to try (issue 16).

An entry is `Entry(name, ours, theirs, forms)`: `ours(x, **form)` takes a microtensor
Tensor, `theirs(x, **form)` the same values as a torch tensor; both return what is
compared (a tensor, a number, a list or a tuple of them). `inputs` narrows the grid where
an op has a fixed arity of dims. ALLOWED lists the few mismatches kept on purpose, each
with its reason; SHARED_NOT_IN_GRID the shared names that are not functions of a tensor.
"""
import dataclasses
import itertools
from typing import Callable

import numpy as np
import torch

import microtensor as mt
import microtensor.functional as F
import nn


@dataclasses.dataclass
class Entry:
    name: str
    ours: Callable
    theirs: Callable
    forms: list = dataclasses.field(default_factory=lambda: [{}])
    inputs: Callable = None  # predicate on the input kind; None: every kind
    grad: bool = True  # compare gradients for float64 inputs


def _dims(ndim_max=3):
    """dim forms: none, ints, negatives, tuples, lists, empty ones, out of range, repeated."""
    forms = [{}, {"dim": 0}, {"dim": -1}, {"dim": 1}, {"dim": (0, 1)}, {"dim": (-1, 0)},
             {"dim": ()}, {"dim": 3}, {"dim": -4}, {"dim": (0, 0)},
             # dims as lists, as torch takes them (issue 25: [] reduces every dim)
             {"dim": []}, {"dim": [0]}, {"dim": [-1, 0]}, {"dim": [1, 1]}]
    return [dict(f, keepdim=k) if f else {"keepdim": k} for f in forms for k in (False, True)]


def _axis(form):
    """our (axis, keepdims) from torch's (dim, keepdim)."""
    return {"axis": form.get("dim"), "keepdims": form.get("keepdim", False)}


def _reduce(ours_name, torch_name):
    def ours(x, **f):
        return getattr(x, ours_name)(**_axis(f))

    def theirs(x, **f):
        if "dim" in f:
            return getattr(torch, torch_name)(x, dim=f["dim"], keepdim=f["keepdim"])
        if not f.get("keepdim"):  # x.max() with no dim is torch's x.max(), not amax
            return getattr(torch, "max" if torch_name == "amax" else torch_name)(x)
        return getattr(torch, torch_name)(x, dim=tuple(range(x.ndim)), keepdim=True)
    return ours, theirs


def _torch_f(name):
    return lambda x, **f: getattr(torch.nn.functional, name)(x, **f)


def _ones_like(x, dtype, side):
    """ones of x's shape in `dtype`: a second operand of another dtype (cat's promotion)."""
    ones = np.ones(tuple(x.shape), dtype=dtype)
    return mt.Tensor(ones) if side == "mt" else torch.from_numpy(ones)


def _other_array(x, side):  # a second operand of x's dtype that broadcasts: x's last column
    data = np.asarray(x.data if side == "mt" else x.numpy())
    return data if data.ndim == 0 else data[..., -1:].copy()


def _ops_binary():
    import operator as o
    entries = []
    ops = {"__add__": o.add, "__sub__": o.sub, "__mul__": o.mul, "__truediv__": o.truediv,
           "__eq__": o.eq, "__ne__": o.ne, "__lt__": o.lt, "__le__": o.le, "__gt__": o.gt,
           "__ge__": o.ge, "__and__": o.and_, "__or__": o.or_, "__xor__": o.xor}
    others = {"int 2": 2, "float 2.5": 2.5, "bool True": True, "float inf": float("inf")}
    for name, op in ops.items():
        forms = [{"other": k} for k in (*others, "array")]

        def ours(x, other, op=op):
            b = _other_array(x, "mt") if other == "array" else others[other]
            return op(x, b), op(b, x) if not isinstance(b, np.ndarray) else op(mt.Tensor(b), x)

        def theirs(x, other, op=op):
            b = _other_array(x, "torch") if other == "array" else others[other]
            b = torch.from_numpy(np.array(b)) if isinstance(b, np.ndarray) else b
            return op(x, b), op(b, x)
        entries.append(Entry(name, ours, theirs, forms))
    return entries


def _ops_in_place():
    """x op= other on a tensor without grad: the same array changes (an alias sees it)."""
    import operator as o
    ops = {"__iadd__": o.iadd, "__isub__": o.isub, "__imul__": o.imul,
           "__itruediv__": o.itruediv, "__iand__": o.iand, "__ior__": o.ior, "__ixor__": o.ixor}
    others = {"int 2": 2, "float 2.5": 2.5, "bool True": True}
    entries = []
    for name, op in ops.items():
        def run(x, other, op=op, side="mt"):
            x = x.detach() if side == "mt" else x.detach().clone()
            alias = x
            b = _other_array(x, side) if other == "array" else others[other]
            if isinstance(b, np.ndarray) and side == "torch":
                b = torch.from_numpy(b)
            op(x, b)
            return alias
        entries.append(Entry(name, run, lambda x, other, run=run: run(x, other, side="torch"),
                             [{"other": k} for k in (*others, "array")], grad=False))
    return entries


def _setitem(side):
    def run(x, index, value):
        x = x.detach() if side == "mt" else x.detach().clone()
        x[_index(x, index, side)] = value
        return x
    return run


def _index_forms():
    return [{"index": i} for i in (
        0, -1, 5, slice(None), slice(1, None), slice(None, None, 2), None, Ellipsis, (None, 0),
        (Ellipsis, 0), [0, 0, 1], [[0, 1], [1, 0]], np.array([1, 0, 1]), "mask", "tensor ids",
        "0-d tensor", (0, slice(None)), ([0, 1], [1, 1]), (slice(None), [0, 0]), [],
        (Ellipsis, None), (True,), "float index", ((0, 0),), [True, False, True],
        np.int64(1), (slice(None), np.array([[0], [0]])), slice(None, None, -1),
        (Ellipsis, slice(None, None, -2)))]


def _index(x, index, side):
    """The index form on one side: strings name forms built from x itself."""
    lib = mt.Tensor if side == "mt" else torch.tensor
    n = x.shape[0] if x.ndim else 1
    if index == "mask":
        return x > 0
    if index == "tensor ids":
        return lib(np.arange(n)[::-1].copy())
    if index == "0-d tensor":
        return lib(np.array(0))
    if index == "float index":
        return lib(np.array(0.0))
    return torch.from_numpy(index) if isinstance(index, np.ndarray) and side == "torch" else index


def _getitem(side):
    return lambda x, index: x[_index(x, index, side)]


def _linear_pair():
    def ours(x, **f):
        torch.manual_seed(0)
        layer = nn.Linear(x.shape[-1] if x.ndim else 1, 2)
        _linear_pair.last = layer
        return layer(x)

    def theirs(x, **f):
        layer = torch.nn.Linear(x.shape[-1] if x.ndim else 1, 2).to(x.dtype if x.is_floating_point()
                                                                    else torch.float32)
        with torch.no_grad():
            layer.weight.copy_(torch.from_numpy(_linear_pair.last.weight.data.T.copy()))
            layer.bias.copy_(torch.from_numpy(_linear_pair.last.bias.data))
        return layer(x)
    return ours, theirs


def _layer_norm_pair():
    def ours(x, **f):
        return F.layer_norm(x, x.shape[-1:] if x.ndim else (1,))

    def theirs(x, **f):
        return torch.nn.functional.layer_norm(x, x.shape[-1:] if x.ndim else (1,))
    return ours, theirs


def _cross_entropy_pair():
    def targets(x, side):
        n = x.shape[:-1]
        c = x.shape[-1] if x.ndim else 1
        t = (np.arange(int(np.prod(n))) % max(c, 1)).reshape(n)
        return t if side == "mt" else torch.from_numpy(t)

    def ours(x, reduction):
        return F.cross_entropy(x, targets(x, "mt"), reduction=reduction)

    def theirs(x, reduction):
        return torch.nn.functional.cross_entropy(x, targets(x, "torch"), reduction=reduction)
    return ours, theirs


def _embedding_pair():
    ids = np.array([[0, 1], [1, 0]])

    def ours(x):
        return F.embedding(ids, x)

    def theirs(x):
        return torch.nn.functional.embedding(torch.from_numpy(ids), x)
    return ours, theirs


def _clip_pair():
    def ours(x, form, max_norm):
        p = nn.Parameter(np.zeros_like(x.data)) if x.dtype.kind == "f" else x
        p.grad = x.data.copy()
        arg = {"single": p, "list": [p], "generator": (q for q in [p])}[form]
        return nn.utils.clip_grad_norm_(arg, max_norm), mt.Tensor(p.grad)

    def theirs(x, form, max_norm):
        p = torch.nn.Parameter(torch.zeros_like(x)) if x.is_floating_point() else x
        p.grad = x.clone()
        arg = {"single": p, "list": [p], "generator": (q for q in [p])}[form]
        return float(torch.nn.utils.clip_grad_norm_(arg, max_norm)), p.grad
    return ours, theirs


def _optim_pair(kind):
    def ours(x, **f):
        p = nn.Parameter(np.ones_like(x.data))
        opt = {"SGD": lambda: nn.optim.SGD([p], lr=0.1, momentum=0.9, weight_decay=0.01),
               "AdamW": lambda: nn.optim.AdamW([p], lr=0.1)}[kind]()
        for _ in range(2):
            p.grad = x.data.copy()
            opt.step()
        return p.detach()

    def theirs(x, **f):
        p = torch.nn.Parameter(torch.ones_like(x))
        opt = {"SGD": lambda: torch.optim.SGD([p], lr=0.1, momentum=0.9, weight_decay=0.01),
               "AdamW": lambda: torch.optim.AdamW([p], lr=0.1)}[kind]()
        for _ in range(2):
            p.grad = x.clone()
            opt.step()
        return p.detach()
    return ours, theirs


def _at_least(n):
    return lambda kind: len(kind.shape) >= n


def entries():
    E = Entry
    out = []
    # ---- pointwise ---------------------------------------------------------------------
    for name in ("exp", "log", "sqrt", "tanh", "relu", "abs"):
        out.append(E(name, lambda x, n=name: getattr(x, n)(),
                     lambda x, n=name: getattr(x, n)()))
    out += [E("__neg__", lambda x: -x, lambda x: -x), E("__pos__", lambda x: +x, lambda x: +x),
            E("__abs__", abs, abs), E("__invert__", lambda x: ~x, lambda x: ~x),
            E("__pow__", lambda x, p: x ** p, lambda x, p: x ** p,
              [{"p": 2}, {"p": 0.5}, {"p": -1}, {"p": 0}, {"p": 3.0}]),
            E("gelu", lambda x, **f: F.gelu(x, **f), _torch_f("gelu"),
              [{}, {"approximate": "tanh"}, {"approximate": "bad"}]),
            E("F.relu", F.relu, torch.nn.functional.relu)]
    out += _ops_binary()
    out += _ops_in_place()
    out.append(E("__setitem__", _setitem("mt"), _setitem("torch"),
                 [{"index": i, "value": v} for i in (0, -1, slice(None), "mask", [0, 0],
                                                     (Ellipsis, 0), "tensor ids")
                  for v in (7, 2.5, True)], grad=False))
    out.append(E("__matmul__", lambda x: x @ x.transpose(-1, -2) if x.ndim > 1 else x @ x,
                 lambda x: x @ x.transpose(-1, -2) if x.ndim > 1 else x @ x))
    # ---- reductions ---------------------------------------------------------------------
    for ours_name, torch_name in (("sum", "sum"), ("mean", "mean"), ("max", "amax")):
        ours, theirs = _reduce(ours_name, torch_name)
        out.append(E(ours_name, ours, theirs, _dims()))
    out.append(E("max(dim=)", lambda x, **f: tuple(x.max(**f)), lambda x, **f: tuple(x.max(**f)),
                 [{"dim": d, "keepdim": k} for d in (0, -1, 1, 3, [0]) for k in (False, True)]))
    out.append(E("max()", lambda x: x.max(), lambda x: x.max()))  # torch's x.max(), not amax
    for name in ("softmax", "log_softmax"):
        dims = [{"dim": d} for d in (0, -1, 1, 2, -3, [1], (0,))]
        out.append(E(name, lambda x, dim, n=name: getattr(x, n)(dim),
                     lambda x, dim, n=name: getattr(x, n)(dim), dims))
        out.append(E(f"F.{name}", lambda x, dim, n=name: getattr(F, n)(x, dim=dim),
                     lambda x, dim, n=name: getattr(torch.nn.functional, n)(x, dim=dim), dims))
    # ---- shapes -------------------------------------------------------------------------
    shapes = [{"shape": s} for s in ((-1,), (1, -1), (-1, -1), (0, -1), (2.5,), (-2,),
                                     (3, 2), ())]
    out += [E("reshape", lambda x, shape: x.reshape(*shape), lambda x, shape: x.reshape(*shape),
              shapes),
            E("view", lambda x, shape: x.view(*shape), lambda x, shape: x.reshape(*shape),
              shapes),
            E("transpose", lambda x, d: x.transpose(*d), lambda x, d: x.transpose(*d),
              [{"d": d} for d in ((0, 1), (-1, 0), (0, 0), (0, 5), (-1, -2))]),
            E("permute", lambda x, d: x.permute(*d), lambda x, d: x.permute(*d),
              [{"d": d} for d in ((1, 0), (0,), (0, 0), (), (2, 1, 0), (-1, 0), ([1, 0],),
                                  ([-1, 0],), ((0,),))]),
            E("T", lambda x: x.T, lambda x: x.T, inputs=lambda k: len(k.shape) == 2),
            E("__getitem__", _getitem("mt"), _getitem("torch"), _index_forms()),
            E("masked_fill", lambda x, v: x.masked_fill(x > 0, v),
              lambda x, v: x.masked_fill(x > 0, v), [{"v": 0.0}, {"v": float("-inf")}]),
            E("cat", lambda x, dim: mt.cat([x, x], axis=dim),
              lambda x, dim: torch.cat([x, x], dim=dim), [{"dim": 0}, {"dim": -1}]),
            E("cat (promotion)",
              lambda x, dtype, dim: mt.cat([x, _ones_like(x, dtype, "mt")], dim=dim),
              lambda x, dtype, dim: torch.cat([x, _ones_like(x, dtype, "torch")], dim=dim),
              [{"dtype": d, "dim": k} for d in ("bool", "int64", "float32", "float64")
               for k in (0, -1, [0])]),
            ]
    # ---- one element and containers -----------------------------------------------------
    out += [E(n, f, g, grad=False) for n, f, g in (
        ("item", lambda x: x.item(), lambda x: x.item()),
        ("__bool__", bool, bool), ("__int__", int, int), ("__float__", float, float),
        ("__index__", lambda x: x.__index__(), lambda x: x.__index__()),
        ("__len__", len, len), ("__iter__", list, list),
        ("__reversed__", reversed, reversed),
        ("__contains__", lambda x: (0 in x, 1.5 in x), lambda x: (0 in x, 1.5 in x)),
        ("__format__", lambda x: f"{x:.2f}", lambda x: f"{x:.2f}"),
        ("__array__", np.asarray, np.asarray),
        ("detach", lambda x: x.detach(), lambda x: x.detach()),
        ("numpy", lambda x: x.numpy(), lambda x: x.detach().numpy()),
        ("ndim", lambda x: x.ndim, lambda x: x.ndim),
        ("shape", lambda x: tuple(x.shape), lambda x: tuple(x.shape)),
        ("dtype", lambda x: str(x.dtype), lambda x: str(x.dtype).split(".")[-1]))]
    # ---- functional, layers, utils, optim ------------------------------------------------
    ln_ours, ln_theirs = _layer_norm_pair()
    ce_ours, ce_theirs = _cross_entropy_pair()
    emb_ours, emb_theirs = _embedding_pair()
    lin_ours, lin_theirs = _linear_pair()
    clip_ours, clip_theirs = _clip_pair()
    out += [E("layer_norm", ln_ours, ln_theirs),
            E("cross_entropy", ce_ours, ce_theirs,
              [{"reduction": r} for r in ("mean", "sum", "none")],
              # [B, T, C] keeps the class dim last (CONTRACT); torch reads dim 1 as classes
              inputs=lambda k: 1 <= len(k.shape) <= 2),
            E("embedding", emb_ours, emb_theirs, inputs=lambda k: len(k.shape) == 2),
            E("dropout", lambda x, **f: F.dropout(x, **f),
              lambda x, **f: torch.nn.functional.dropout(x, **f),
              [{"p": 0.0}, {"p": 1.0}, {"p": 0.5, "training": False}, {"p": 1.5}, {"p": -0.1}]),
            E("Linear", lin_ours, lin_theirs, inputs=_at_least(1)),
            E("scaled_dot_product_attention",
              lambda x, **f: nn.scaled_dot_product_attention(x, x, x, **f)[0],
              lambda x, **f: torch.nn.functional.scaled_dot_product_attention(x, x, x, **f),
              [{}, {"is_causal": True}], inputs=_at_least(2)),
            E("ReLU", lambda x: nn.ReLU()(x), lambda x: torch.nn.ReLU()(x)),
            E("GELU", lambda x: nn.GELU()(x), lambda x: torch.nn.GELU()(x)),
            E("Dropout", lambda x, **f: nn.Dropout(**f).eval()(x),
              lambda x, **f: torch.nn.Dropout(**f).eval()(x), [{"p": 0.3}, {"p": 2}]),
            E("LayerNorm", lambda x: nn.LayerNorm(x.shape[-1] if x.ndim else 1)(x),
              lambda x: torch.nn.LayerNorm(x.shape[-1] if x.ndim else 1, dtype=x.dtype
                                           if x.is_floating_point() else None)(x)),
            E("clip_grad_norm_", clip_ours, clip_theirs,
              [{"form": f, "max_norm": m} for f, m in itertools.product(
                  ("single", "list", "generator"), (1.0, 100.0))], grad=False),
            E("SGD", *_optim_pair("SGD"), grad=False),
            E("AdamW", *_optim_pair("AdamW"), grad=False)]
    return out


# Shared names that are not tensor functions of the grid, each with where it is tested.
SHARED_NOT_IN_GRID = {
    "backward": "every gradient comparison of the grid calls it",
    "grad": "compared for every float64 case", "grad_fn": "the graph: viz tests",
    "is_leaf": "tests/microtensor/test_engine.py", "requires_grad": "grid (float64 cases)",
    "requires_grad_": "tests/microtensor/test_dtypes.py", "retain_grad": "test_engine.py",
    "name": "ours only labels", "size": "ALLOWED: a property here",
    "Tensor": "the grid's inputs", "Module": "tests/nn/test_module.py",
    "ModuleList": "tests/nn/test_containers_clip_optim_trust.py",
    "Sequential": "tests/nn/test_containers_clip_optim_trust.py",
    "Parameter": "the optimizer rows", "Embedding": "F.embedding row; tests/nn/test_layers.py",
    "Optimizer": "the SGD and AdamW rows",
    "TransformerEncoderLayer": "tests/nn/test_transformer.py",
    "TransformerDecoderLayer": "tests/nn/test_transformer.py", "zeros": "factories",
    "randn": "random", "manual_seed": "random", "is_grad_enabled": "test_protocols.py",
    "no_grad": "test_protocols.py", "functional": "a module", "utils": "a module",
    "attention": "a module", "autograd": "a module", "ops": "a module",
    "profiler": "a module", "random": "a module", "tensor": "a module", "np": "an import",
}

# Kept on purpose, each with its reason: (entry name or "*", predicate on
# (form, kind, our error, torch's error), reason). Few, each documented.
ALLOWED = [
    ("*", lambda form, kind, ours, theirs: (
        kind.dtype in ("int64", "bool") and 0 in kind.shape and isinstance(ours, TypeError)
        and theirs is None),
     "an empty bool or integer tensor where torch takes floats only: torch checks the dtype "
     "inside its kernel, which it skips when there are no elements; we refuse the dtype "
     "whatever the size"),
    ("layer_norm", lambda form, kind, ours, theirs: kind.values == "huge",
     "rows whose Σ(x − μ)² overflows although each x − μ is finite: torch's 1/√var is 0 (a "
     "wrong row of zeros) or NaN; we rescale the row and give its true normalized values "
     "(tests/oracle/test_conformance.py::test_layer_norm_of_huge_rows_is_the_true_row)"),
    ("LayerNorm", lambda form, kind, ours, theirs: kind.values == "huge", "as layer_norm"),
    ("__getitem__", lambda form, kind, ours, theirs: (
        isinstance(form["index"], (slice, tuple)) and theirs is not None and ours is None
        and any(isinstance(p, slice) and (p.step or 1) < 0 for p in (
            form["index"] if isinstance(form["index"], tuple) else (form["index"],)))),
     "a negative step: torch refuses it (ValueError), we take numpy's meaning, the values of "
     "torch.flip along that axis (tests/microtensor/test_indexing.py)"),
    ("clip_grad_norm_", lambda form, kind, ours, theirs: kind.values == "huge",
     "torch's total norm overflows (float32 squares past 3.4e38, float64 past 1e308) to inf and "
     "it then zeroes every gradient; we take the norm of the scaled gradients, finite and "
     "true, and clip to max_norm (tests/nn/test_containers_clip_optim_trust.py)"),
]

# Operators torch has that this engine refuses in one line (not ops of the engine):
REFUSED_OPERATORS = {
    "__floordiv__", "__rfloordiv__", "__ifloordiv__", "__mod__", "__rmod__", "__imod__",
    "__lshift__", "__rlshift__", "__ilshift__", "__rshift__", "__rrshift__", "__irshift__",
    "__rpow__"}
