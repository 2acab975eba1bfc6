"""Issue 32's engine findings, each held against PyTorch 2.13 (in float64 where the question is
accuracy, in torch's own dtype where it is a dtype, a gradient or an error): reductions that add
up as torch's over any axis, masked_fill's value as a differentiable argument, the dtypes of
construction, Python ints out of a small dtype's range, and the loud differences of the hunt.
Tolerances are bounds on the error against the float64 sum, never our error against torch's."""
import warnings

import numpy as np
import pytest

import microtensor as mt
import nn
from microtensor import functional as F

torch = pytest.importorskip("torch")


def exact(values, axis):
    """The float64 sum (torch's, in float64) of the given float16/float32 values over axis."""
    return torch.tensor(np.asarray(values, dtype=np.float64)).sum(dim=axis).numpy()


# ---- #1: reductions add up as torch's, whatever the axis, length and dtype --------------------

def test_float16_sum_and_mean_over_axis_0_of_4096_ones_are_4096_and_1_as_torch():
    ones = np.ones((4096, 2), np.float16)
    for op, expected in (("sum", 4096.0), ("mean", 1.0)):
        ours = getattr(mt.Tensor(ones), op)(axis=0)
        theirs = getattr(torch.tensor(ones), op)(dim=0)
        assert ours.dtype == np.float16 and theirs.dtype == torch.float16
        assert np.array_equal(ours.data, theirs.numpy()) and ours.data[0] == expected, \
            f"{op}(axis=0) of 4096 float16 ones: expected (torch) {theirs}, got {ours}"


def test_float32_mean_of_a_million_rows_of_0_1_over_axis_0_is_within_1e_6_of_the_float64_mean():
    values = np.full((10**6, 2), 0.1, np.float32)
    truth = exact(values, 0) / 10**6
    got = mt.Tensor(values).mean(axis=0).data
    assert np.all(np.abs(got - truth) <= 1e-6 * truth), \
        f"mean over 10⁶ rows: expected (torch, float64) {truth}, got {got}"


LENGTHS = [5, 4096, 100_003]


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("axis", [0, 1, 2, (0, 2), (0, 1, 2)], ids=repr)
def test_sum_over_every_axis_of_any_length_is_within_the_dtypes_bound_of_the_float64_sum(
        dtype, n, axis):
    shape = [3, 3, 3]
    shape[axis if isinstance(axis, int) else axis[0]] = n
    count = np.prod(shape) // np.prod([s for i, s in enumerate(shape) if i not in
                                        np.atleast_1d(axis)])
    # values that add up to ~2000 (float16's max is 65504): past 2048 a float16 accumulator
    # adds 1 only in steps of 2
    values = (np.random.default_rng(n).uniform(0.0, 1.0, shape) * 4000 / count).astype(dtype)
    truth = exact(values, axis)
    ours = mt.Tensor(values).sum(axis=axis)
    # float32: a cascade's error bound; float16: the result's own rounding (2⁻¹¹ relative),
    # which a float16 accumulator misses by far (it stops counting at 2048)
    bound = (2e-6 if dtype == np.float32 else 1e-3) * np.abs(truth) + 1e-6
    assert ours.dtype == dtype and np.all(np.abs(ours.data - truth) <= bound), \
        f"sum(axis={axis}) of {values.shape} {np.dtype(dtype)}: expected (float64) {truth}, " \
        f"got {ours.data}"


def test_sum_over_a_transposed_view_adds_as_accurately_as_over_a_contiguous_axis():
    values = np.full((2, 300_000), 0.1, np.float32).T  # axis 0 is not the first in memory
    truth = exact(values, 0)
    got = mt.Tensor(values).sum(axis=0).data
    assert np.all(np.abs(got - truth) <= 2e-6 * truth), f"expected {truth}, got {got}"


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_float16_softmax_and_log_softmax_over_axis_0_add_in_float32_as_torch(op):
    zeros = np.zeros((4096, 3), np.float16)
    ours = getattr(mt.Tensor(zeros), op)(axis=0).data
    theirs = getattr(torch.tensor(zeros), op)(dim=0).numpy()
    assert ours.dtype == np.float16 and np.array_equal(ours, theirs), \
        f"{op}(axis=0) of 4096 float16 zeros: expected (torch) {theirs[0]}, got {ours[0]}"


def test_float16_layer_norm_statistics_add_in_float32_within_one_float16_step_of_float64():
    x = (np.linspace(-1, 1, 2**16) + 100).astype(np.float16)
    truth = torch.nn.functional.layer_norm(torch.tensor(x, dtype=torch.float64), (2**16,))
    got = F.layer_norm(mt.Tensor(x), (2**16,)).data
    step = np.spacing(np.abs(truth.numpy()).astype(np.float16)).astype(np.float64)
    assert got.dtype == np.float16 and np.all(np.abs(got - truth.numpy()) <= step), \
        f"layer_norm in float16: expected (float64) {truth.numpy()[:3]}, got {got[:3]}"


def test_float16_cross_entropy_mean_over_many_rows_adds_in_float32():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(20_000, 3)).astype(np.float16)
    targets = rng.integers(0, 3, 20_000)
    truth = torch.nn.functional.cross_entropy(torch.tensor(logits, dtype=torch.float64),
                                              torch.tensor(targets)).item()
    got = F.cross_entropy(mt.Tensor(logits), mt.Tensor(targets)).item()
    assert abs(got - truth) <= 1e-3 * truth, f"expected (float64) {truth}, got {got}"


def test_gradient_of_a_bias_broadcast_over_a_million_rows_is_within_1e_6_of_the_float64_sum():
    upstream = np.full((10**6, 2), 0.1, np.float32)
    bias = mt.Tensor(np.zeros(2, np.float32), requires_grad=True)
    (mt.Tensor(np.zeros((10**6, 2), np.float32)) + bias).backward(upstream)
    truth = exact(upstream, 0)
    assert np.all(np.abs(bias.grad - truth) <= 1e-6 * truth), \
        f"bias gradient over 10⁶ rows of 0.1: expected (torch, float64) {truth}, got {bias.grad}"


def test_linear_bias_gradient_over_many_rows_of_float32_is_within_1e_6_of_float64():
    layer = nn.Linear(2, 2)
    x = mt.Tensor(np.ones((300_000, 2), np.float32))
    (layer(x) * 0.1).sum().backward()
    truth = 0.1 * 300_000
    assert np.all(np.abs(layer.bias.grad - truth) <= 1e-6 * truth), \
        f"Linear bias gradient over 300000 rows: expected {truth}, got {layer.bias.grad}"
