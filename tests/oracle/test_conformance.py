"""Conformance with PyTorch across the API surface microtensor shares with it (issue 16).

The names are found by intersecting microtensor's (Tensor, functional, nn, nn.utils,
nn.optim) with torch's; `conformance_table.py` says how each is called and with which
argument forms. Every entry runs on a grid of inputs (float32, float64, int64, bool; 0-d,
zero-size along each axis; ±inf, NaN, huge values) and must agree with torch on: raising
or not (our message one line), values, dtypes, shapes and, for float64 inputs, gradients.
`test_conformance_size` prints the grid's size: python -m pytest -s -k conformance_size.
"""
import dataclasses
import math
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import conformance_table as table  # noqa: E402  (needs torch)

import microtensor as mt  # noqa: E402
import microtensor.functional as F  # noqa: E402
import nn  # noqa: E402

# the grid computes with inf and NaN on purpose: numpy's warnings about it are expected
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

SHAPES = [(), (3,), (2, 3), (0,), (0, 3), (3, 0), (2, 0, 3)]


@dataclasses.dataclass(frozen=True)
class Kind:
    dtype: str
    shape: tuple
    values: str

    def make(self):
        n = math.prod(self.shape)
        rng = np.random.default_rng(hash((self.dtype, self.shape, self.values)) % 2**32)
        if self.dtype == "bool":
            data = rng.random(n) < 0.5
        elif self.dtype == "int64":
            data = rng.integers(-3, 4, n)
        elif self.values == "special":
            data = np.resize([np.inf, -np.inf, np.nan, 0.0, -0.0, 1.5, -2.0], n)
        elif self.values == "huge":
            big = 3e38 if self.dtype == "float32" else 1e300
            data = np.resize([big, -big, 2e19, 1.0, -1e30], n)
        else:
            data = rng.standard_normal(n)
        return np.asarray(data).astype(self.dtype).reshape(self.shape)


KINDS = [Kind(d, s, v) for s in SHAPES for d, values in (
    ("float32", ("normal", "special", "huge")), ("float64", ("normal", "special", "huge")),
    ("int64", ("normal",)), ("bool", ("normal",))) for v in values]
ENTRIES = table.entries()


# ---- comparing one result ----------------------------------------------------------------
def _plain(value):
    """A result as (kind, payload): arrays with their dtype, Python scalars, sequences."""
    if isinstance(value, mt.Tensor):
        return ("array", value.data.dtype.name, np.asarray(value.data))
    if isinstance(value, torch.Tensor):
        array = value.detach().numpy()
        return ("array", array.dtype.name, array)
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.name, value)
    if isinstance(value, (list, tuple)):
        return ("seq", len(value), [_plain(v) for v in value])
    if hasattr(value, "__reversed__") and not isinstance(value, (str, bytes)):
        return _plain(list(value)) if not hasattr(value, "shape") else _plain(value)
    return ("scalar", type(value).__name__, value)


def _differs(ours, theirs, dtype, wide=None):
    """None if equal, else a short reason. Where torch's value is NaN ours may be any
    non-finite value (the issue's rule: where torch gives NaN or inf we may too); where
    torch's float32 is inf or NaN ours may instead be torch's float64 value (`wide`): the
    true value, which torch's float32 arithmetic overflowed on the way to."""
    return _differs_plain(_plain(ours), _plain(theirs), dtype,
                          None if wide is None else _plain(wide))


def _differs_plain(a, b, dtype, wide=None):
    if a[0] != b[0] or a[1] != b[1]:
        return f"{a[0]} {a[1]} vs torch {b[0]} {b[1]}"
    if a[0] == "seq":
        wides = wide[2] if wide is not None and wide[0] == "seq" else [None] * len(a[2])
        return next(filter(None, (_differs_plain(x, y, dtype, w)
                                  for x, y, w in zip(a[2], b[2], wides))), None)
    x, y = np.asarray(a[2]), np.asarray(b[2])
    if x.shape != y.shape:
        return f"shape {x.shape} vs torch {y.shape}"
    if x.dtype.kind in "fc" or isinstance(a[2], float):
        tol = dict(rtol=1e-5, atol=1e-6) if dtype != "float64" else dict(rtol=1e-9, atol=1e-12)
        with np.errstate(all="ignore"):
            ok = np.isclose(x, y, equal_nan=True, **tol) & (np.isinf(x) == np.isinf(y))
            ok |= np.isnan(y) & ~np.isfinite(x)
            if wide is not None and np.shape(wide[2]) == x.shape:
                w = np.asarray(wide[2], dtype=np.float64)
                ok |= ~np.isfinite(y) & np.isclose(x, w, rtol=1e-5, atol=1e-6, equal_nan=True)
        if not ok.all():
            return f"values {x.ravel()[:6]} vs torch {y.ravel()[:6]}"
    elif not np.array_equal(x, y):
        return f"values {x.ravel()[:6]} vs torch {y.ravel()[:6]}"
    return None


def _run(fn, x, form):
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return fn(x, **form), None
    except Exception as error:  # noqa: BLE001  (the comparison is whether both raise)
        return None, error


def _weighted_sum(results, lib):
    """Σ w ⊙ out over the float results: weights that differ per element catch permutations."""
    flat = results if isinstance(results, (tuple, list)) else [results]
    total = None
    for r in flat:
        if isinstance(r, (mt.Tensor, torch.Tensor)) and r.requires_grad:
            w = np.asarray(np.cos(np.arange(math.prod(r.shape))).reshape(r.shape) + 2)
            term = (r * (mt.Tensor(w) if lib == "mt" else torch.from_numpy(w))).sum()
            total = term if total is None else total + term
    return total


def _gradients(entry, kind, form):
    data = kind.make()
    xo = mt.Tensor(data.copy(), requires_grad=True)
    xt = torch.tensor(data.copy(), requires_grad=True)
    (ro, eo), (rt, et) = _run(entry.ours, xo, form), _run(entry.theirs, xt, form)
    if eo or et:
        return None
    lo, lt = _weighted_sum(ro, "mt"), _weighted_sum(rt, "torch")
    if lo is None or lt is None:
        return None if lo is None and lt is None else "one side has no gradient"
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lo.backward()
    lt.backward()
    go = np.zeros_like(data) if xo.grad is None else xo.grad
    gt = np.zeros_like(data) if xt.grad is None else xt.grad.numpy()
    reason = _differs_plain(("array", "float64", go), ("array", "float64", gt), "float64")
    return f"gradient: {reason}" if reason else None


def check(entry, form, kind):
    """None if microtensor agrees with torch on this case, else what differs."""
    data = kind.make()
    ro, eo = _run(entry.ours, mt.Tensor(data.copy()), form)
    rt, et = _run(entry.theirs, torch.from_numpy(data.copy()), form)
    if eo is not None and "\n" in str(eo).strip():
        return f"our error is not one line: {str(eo)[:120]!r}"
    if eo is not None and et is not None:
        return None
    reason = _compare(entry, form, kind, data, (ro, eo), (rt, et))
    for name, allowed, _why in table.ALLOWED if reason else ():
        if name in ("*", entry.name) and allowed(form, kind, eo, et):
            ALLOWED_HITS[name] = ALLOWED_HITS.get(name, 0) + 1
            return None
    return reason


ALLOWED_HITS = {}  # allow-list entry -> how many cases it kept (printed by the size test)


def _compare(entry, form, kind, data, ours, theirs):
    (ro, eo), (rt, et) = ours, theirs
    if (eo is None) != (et is None):
        err = eo or et
        return (f"{'we' if eo else 'torch'} raised {type(err).__name__}: {str(err)[:100]}, "
                f"{'torch' if eo else 'we'} did not")
    reason = _differs(ro, rt, kind.dtype)
    if reason and kind.dtype == "float32":
        wide, _ = _run(entry.theirs, torch.from_numpy(data.astype(np.float64)), form)
        reason = _differs(ro, rt, kind.dtype, wide)
    if reason is None and entry.grad and kind.dtype == "float64":
        reason = _gradients(entry, kind, form)
    return reason


def _cases(entry):
    return [(form, kind) for form in entry.forms for kind in KINDS
            if entry.inputs is None or entry.inputs(kind)]


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.name for e in ENTRIES])
def test_conformance_with_torch(entry):
    mismatches = []
    for form, kind in _cases(entry):
        reason = check(entry, form, kind)
        if reason:
            mismatches.append(f"{entry.name}({form}) on {kind}: {reason}")
    assert not mismatches, (f"expected torch's answers; {len(mismatches)} cases differ:\n"
                            + "\n".join(mismatches[:25]))


# ---- the surface is covered ----------------------------------------------------------------
def _public(module):
    return {n for n in dir(module) if not n.startswith("_")}


def shared_names():
    """Names microtensor shares with torch, by intersection of the two surfaces."""
    pairs = [(mt.Tensor, torch.Tensor), (F, torch.nn.functional), (mt, torch), (nn, torch.nn),
             (nn.utils, torch.nn.utils), (nn.optim, torch.optim)]
    names = set().union(*(_public(a) & _public(b) for a, b in pairs))
    dunders = {n for n in dir(mt.Tensor) if n.startswith("__")} & set(dir(torch.Tensor))
    return names | (dunders - set(vars(object)) - {"__dict__", "__module__", "__weakref__",
                                                   "__init__", "__getstate__", "__setstate__",
                                                   "__deepcopy__", "__array_priority__"})


def test_every_shared_name_is_in_the_grid_or_listed_with_a_reason():
    covered = {e.name.removeprefix("F.") for e in ENTRIES} | set(table.SHARED_NOT_IN_GRID) \
        | table.REFUSED_OPERATORS | {
            # reflected forms: each binary row calls `other op x` too
            "__radd__", "__rsub__", "__rmul__", "__rtruediv__", "__rmatmul__", "__rand__",
            "__ror__", "__rxor__",
            # tested in tests/microtensor/test_protocols.py
            "__ipow__", "__delitem__", "__complex__"}
    missing = sorted(shared_names() - covered)
    assert not missing, f"expected every shared name covered; not covered: {missing}"


def test_conformance_size():
    cases = sum(len(_cases(e)) for e in ENTRIES)
    functions = len({e.name for e in ENTRIES})
    print(f"\nconformance: {functions} functions, {len(KINDS)} input kinds, {cases} cases, "
          f"{len(table.ALLOWED)} allow-listed, shared names {len(shared_names())}")
    assert functions >= 60 and cases >= 5000, f"expected a large grid, got {cases} cases"


def test_layer_norm_of_huge_rows_is_the_true_row():
    """Σ(x − μ)² overflows for these rows; layer norm is scale-invariant (up to ε), so the
    rows divided by 1e290 (float64) or 1e30 (float32) give the expected values."""
    for dtype, big, scale in ((np.float64, 1e300, 1e290), (np.float32, 3e37, 1e30)):
        x = np.array([[big, -big, big / 10], [1.0, -big / 2, big]], dtype)
        got = F.layer_norm(mt.Tensor(x), 3).data
        want = F.layer_norm(mt.Tensor(x / dtype(scale)), 3).data
        np.testing.assert_allclose(got, want, rtol=1e-5, err_msg=f"{dtype.__name__}: "
                                   f"expected the rows of the rescaled input, got {got}")
