"""The conformance grid's long and low-precision reductions (issue 32): every op that adds up
(sum, mean, softmax, log_softmax, layer_norm, cross_entropy, the gradient of a broadcast bias and
of masked_fill's value) over every axis of tensors with a long axis, in float16, float32 and
float64, against PyTorch 2.13.

Each case compares the dtype and shape with torch's in the input's dtype, and the values with
torch's float64 result on the same numbers (rounded as the dtype rounds), within a bound of the
dtype: never our error against torch's own float16 or float32 error, which differs by machine.
`python -m pytest -s -k reductions_size tests/oracle` prints the count.
"""
import itertools
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import microtensor as mt  # noqa: E402
import microtensor.functional as F  # noqa: E402

LONG = (4096, 100_003)
SHAPES = [s for n in LONG for s in ((n, 3), (3, n), (2, n, 3))]
DTYPES = ("float16", "float32", "float64")
VALUES = ("uniform", "tenth", "normal")  # [0, 1); 0.1 everywhere (the drift case); N(0, 1)
# relative bound on |ours − float64| per dtype: float16 is rounded once at the end, float32 adds
# in a cascade (torch's class of accuracy), float64 as numpy's
RTOL = {"float16": 2 ** -10, "float32": 2e-6, "float64": 1e-12}


def make(shape, dtype, values):
    rng = np.random.default_rng(hash((shape, dtype, values)) % 2**32)
    data = {"uniform": lambda: rng.random(shape), "tenth": lambda: np.full(shape, 0.1),
            "normal": lambda: rng.standard_normal(shape)}[values]()
    return data.astype(dtype)


def within(ours, exact, dtype, scale, what):
    """ours (our result in dtype) against exact (torch's float64 result): equal where the
    rounded value overflows, else within RTOL·scale (scale: the sum of |terms| or |value|)."""
    rounded = exact.astype(dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        overflowed = ~np.isfinite(rounded)
        # the floor: float16's subnormal step (softmax's small weights are subnormal there)
        floor = np.finfo(dtype).smallest_subnormal
        ok = np.where(overflowed, ours == rounded,
                      np.abs(ours.astype(np.float64) - exact) <= RTOL[dtype] * scale + floor)
    assert ok.all(), (f"{what}: expected (torch, float64) {exact.ravel()[:4]}, got "
                      f"{ours.ravel()[:4]} ({(~ok).sum()} of {ok.size} outside the {dtype} bound)")


def axes(shape):
    return list(range(len(shape))) + [None]


def _sum_mean(op, x, axis, dtype):
    ours = getattr(mt.Tensor(x), op)(axis=axis).data
    t = torch.from_numpy(x)
    theirs = getattr(t, op)() if axis is None else getattr(t, op)(dim=axis)
    assert ours.dtype.name == dtype == str(theirs.dtype).removeprefix("torch.") and \
        ours.shape == tuple(theirs.shape), f"{op}: dtype/shape {ours.dtype} {ours.shape} vs " \
        f"torch {theirs.dtype} {tuple(theirs.shape)}"
    wide = torch.from_numpy(x.astype(np.float64))
    exact = (getattr(wide, op)() if axis is None else getattr(wide, op)(dim=axis)).numpy()
    absolute = wide.abs()
    scale = (getattr(absolute, op)() if axis is None else getattr(absolute, op)(dim=axis))
    within(ours, exact, dtype, scale.numpy(), f"{op}(axis={axis})")


def _softmax(op, x, axis, dtype):
    ours = getattr(mt.Tensor(x), op)(axis).data
    theirs = getattr(torch.from_numpy(x), op)(axis)
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch."), (ours.dtype, theirs)
    exact = getattr(torch.from_numpy(x.astype(np.float64)), op)(axis).numpy()
    # x − max x is rounded to within ε·(|x| + max|x|), which exp turns into a relative error
    # of softmax and log_softmax keeps as an absolute one; the sum adds its own
    spread = np.abs(x).astype(np.float64) + np.abs(x).max() + np.log(x.shape[axis]) + 1
    within(ours, exact, dtype, 4 * spread * (np.abs(exact) if op == "softmax" else 1),
           f"{op}(axis={axis})")


def _layer_norm(x, dtype):
    n = x.shape[-1]
    ours = F.layer_norm(mt.Tensor(x), (n,)).data
    theirs = torch.nn.functional.layer_norm(torch.from_numpy(x), (n,))
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    exact = torch.nn.functional.layer_norm(torch.from_numpy(x.astype(np.float64)), (n,)).numpy()
    # the statistics' error shows as a relative error of every output, around |y| ≤ √n
    within(ours, exact, dtype, 4 * (np.abs(exact) + 1), "layer_norm")


def _cross_entropy(x, dtype):
    logits = x.reshape(-1, x.shape[-1])
    targets = np.arange(len(logits)) % logits.shape[-1]
    ours = F.cross_entropy(mt.Tensor(logits), targets).data
    theirs = torch.nn.functional.cross_entropy(torch.from_numpy(logits),
                                               torch.from_numpy(targets))
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    exact = torch.nn.functional.cross_entropy(torch.from_numpy(logits.astype(np.float64)),
                                              torch.from_numpy(targets)).numpy()
    within(ours, exact, dtype, 4 * np.abs(exact) + 1, "cross_entropy")


def _bias_gradient(x, axis, dtype):
    """x + b with b 1 along `axis` (a bias broadcast over it): b's gradient sums g over it."""
    shape = list(x.shape)
    shape[axis] = 1
    b = mt.Tensor(np.zeros(shape, dtype), requires_grad=True)
    (mt.Tensor(np.zeros_like(x)) + b).backward(x)
    tb = torch.zeros(shape, dtype=getattr(torch, dtype), requires_grad=True)
    (torch.zeros_like(torch.from_numpy(x)) + tb).backward(torch.from_numpy(x))
    assert b.grad.dtype.name == str(tb.grad.dtype).removeprefix("torch.")
    wide = torch.from_numpy(x.astype(np.float64))  # torch's sum: numpy's over axis 0 drifts
    within(b.grad, wide.sum(dim=axis, keepdim=True).numpy(), dtype,
           wide.abs().sum(dim=axis, keepdim=True).numpy(), f"bias gradient over axis {axis}")


def _masked_fill_value_gradient(x, dtype):
    mask = np.arange(x.size).reshape(x.shape) % 3 != 0
    v = mt.Tensor(np.array(0, dtype), requires_grad=True)
    mt.Tensor(np.zeros_like(x)).masked_fill(mask, v).backward(x)
    tv = torch.tensor(0, dtype=getattr(torch, dtype), requires_grad=True)
    torch.zeros_like(torch.from_numpy(x)).masked_fill(torch.from_numpy(mask), tv).backward(
        torch.from_numpy(x))
    assert np.asarray(v.grad).dtype.name == str(tv.grad.dtype).removeprefix("torch.")
    wide = np.where(mask, x.astype(np.float64), 0)
    within(np.asarray(v.grad), np.asarray(wide.sum()), dtype, np.abs(wide).sum(),
           "masked_fill value gradient")


def cases():
    out = []
    for shape, dtype, values in itertools.product(SHAPES, DTYPES, VALUES):
        for axis in axes(shape):
            out += [("sum", shape, dtype, values, axis), ("mean", shape, dtype, values, axis)]
            if axis is not None:
                out += [("softmax", shape, dtype, values, axis),
                        ("log_softmax", shape, dtype, values, axis),
                        ("bias gradient", shape, dtype, values, axis)]
        out += [("layer_norm", shape, dtype, values, -1), ("cross_entropy", shape, dtype,
                                                          values, -1),
                ("masked_fill value gradient", shape, dtype, values, None)]
    return out


CASES = cases()


def run(case):
    op, shape, dtype, values, axis = case
    x = make(shape, dtype, values)
    with warnings.catch_warnings(), np.errstate(over="ignore"):
        warnings.simplefilter("ignore")
        if op in ("sum", "mean"):
            _sum_mean(op, x, axis, dtype)
        elif op in ("softmax", "log_softmax"):
            _softmax(op, x, axis, dtype)
        elif op == "layer_norm":
            _layer_norm(x, dtype)
        elif op == "cross_entropy":
            _cross_entropy(x, dtype)
        elif op == "bias gradient":
            _bias_gradient(x, axis, dtype)
        else:
            _masked_fill_value_gradient(x, dtype)


@pytest.mark.parametrize("op", sorted({c[0] for c in CASES}))
def test_long_and_low_precision_reductions_add_up_as_torch_over_every_axis(op):
    mismatches = []
    for case in (c for c in CASES if c[0] == op):
        try:
            run(case)
        except AssertionError as error:
            mismatches.append(f"{case}: {str(error)[:200]}")
    assert not mismatches, (f"expected torch's sums; {len(mismatches)} cases differ:\n"
                            + "\n".join(mismatches[:20]))


def test_reductions_size():
    print(f"\nlong and low-precision reductions: {len(CASES)} cases ({len(SHAPES)} shapes, "
          f"{len(DTYPES)} dtypes, {len(VALUES)} value kinds, every axis)")
    assert len(CASES) >= 500, f"expected a grid of every axis, got {len(CASES)} cases"
