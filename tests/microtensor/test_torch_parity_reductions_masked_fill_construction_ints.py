"""Issue 32's engine findings, each held against PyTorch 2.13 (in float64 where the question is
accuracy, in torch's own dtype where it is a dtype, a gradient or an error): reductions that add
up as torch's over any axis, masked_fill's value as a differentiable argument, the dtypes of
construction, Python ints out of a small dtype's range, and the rest of the surface: retain_grad,
`.T`, pow(Tensor, Tensor), `.grad =` and dropout's default p.
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


# ---- #2: masked_fill's value is a differentiable argument; its mask broadcasts ---------------

MASK = [True, False, True]


def test_masked_fill_gives_a_0d_value_tensor_the_sum_of_g_where_the_mask_is_true_as_torch():
    x, v = mt.Tensor([1.0, 2.0, 3.0], requires_grad=True), mt.Tensor(5.0, requires_grad=True)
    tx = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    tv = torch.tensor(5.0, requires_grad=True)
    (x.masked_fill(mt.Tensor(MASK), v) * mt.Tensor([1.0, 2.0, 3.0])).sum().backward()
    (tx.masked_fill(torch.tensor(MASK), tv) * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert v.grad == tv.grad.item() == 4.0, f"value's gradient: expected (torch) 4, got {v.grad}"
    assert np.array_equal(x.grad, tx.grad.numpy()), f"x's gradient: expected {tx.grad}, " \
        f"got {x.grad}"


def test_masked_fill_with_only_the_value_requiring_grad_gives_an_output_that_requires_grad():
    v = mt.Tensor(5.0, requires_grad=True)
    y = mt.Tensor([1.0, 2.0, 3.0]).masked_fill(mt.Tensor(MASK), v)
    assert y.requires_grad, "torch's output requires grad when only the value does"
    (y * mt.Tensor([1.0, 2.0, 3.0])).sum().backward()
    assert v.grad == 4.0, f"expected 4 (1 + 3), got {v.grad}"


def test_a_mask_that_broadcasts_x_up_gives_torchs_broadcast_output_and_gradients():
    mask = [[True, False, True], [False, False, True]]
    x, v = mt.Tensor([1.0, 2.0, 3.0], requires_grad=True), mt.Tensor(9.0, requires_grad=True)
    tx = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    tv = torch.tensor(9.0, requires_grad=True)
    y, ty = x.masked_fill(mt.Tensor(mask), v), tx.masked_fill(torch.tensor(mask), tv)
    assert np.array_equal(y.data, ty.detach().numpy()), f"expected {ty}, got {y}"
    w = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    (y * mt.Tensor(w)).sum().backward()
    (ty * torch.tensor(w)).sum().backward()
    assert np.array_equal(x.grad, tx.grad.numpy()) and v.grad == tv.grad.item(), \
        f"expected x.grad {tx.grad}, v.grad {tv.grad}; got {x.grad}, {v.grad}"
    scalar = mt.Tensor(1.0).masked_fill(mt.Tensor([True]), 5.0)
    assert scalar.shape == (1,) and scalar.item() == 5.0, f"0-d x, [1] mask: got {scalar}"


@pytest.mark.parametrize("dtype, value", [("float32", mt.Tensor([1.0])), ("float32", 1e300),
                                          ("float16", 1e6), ("uint8", 300), ("int8", -129)],
                         ids=["1-element-1-d-value", "1e300-float32", "1e6-float16",
                              "300-uint8", "-129-int8"])
def test_masked_fill_refuses_a_value_torch_refuses(dtype, value):
    x, mask = np.zeros(2, dtype), np.array([True, False])
    tvalue = torch.tensor(value.data) if isinstance(value, mt.Tensor) else value
    with pytest.raises(RuntimeError):
        torch.tensor(x).masked_fill(torch.tensor(mask), tvalue)
    with pytest.raises(ValueError, match="masked_fill"):
        mt.Tensor(x).masked_fill(mask, value)


@pytest.mark.parametrize("dtype, value", [("uint8", -1), ("uint8", 255), ("float16", 65504.0),
                                          ("float32", float("-inf")), ("int64", 3.5)])
def test_masked_fill_stores_a_value_that_fits_as_torch(dtype, value):
    x, mask = np.zeros(2, dtype), np.array([True, False])
    ours = mt.Tensor(x).masked_fill(mask, value).data
    theirs = torch.tensor(x).masked_fill(torch.tensor(mask), value).numpy()
    assert ours.dtype == theirs.dtype and np.array_equal(ours, theirs), \
        f"expected (torch) {theirs}, got {ours}"


@pytest.mark.parametrize("build", ["masked_fill", "embedding"])
def test_a_second_backward_through_masked_fill_or_embedding_alone_is_refused_as_torch(build):
    w = mt.Tensor(np.ones((4, 2)), requires_grad=True)
    y = w.masked_fill(w.data > 5, 0.0) if build == "masked_fill" \
        else F.embedding(mt.Tensor([1, 2]), w)
    loss = y.sum()
    loss.backward()
    with pytest.raises(RuntimeError, match="second time"):
        loss.backward()


# ---- #6: construction infers torch's dtype from nested lists --------------------------------

CONSTRUCTED = [
    [np.float64(1.5), 2], [1.0, np.float64(0.1)], [np.array([1.0, 2.0]), np.array([3.0, 4.0])],
    [[np.float64(1.0)], [2.0]], [np.float32(1.5), 2], [np.float32(1.0), np.float64(2.0)],
    [np.float16(1.0), 2], [np.float16(1.0), 2.0], [np.int32(1), 2], [np.int32(1), 2.5],
    [np.int8(1), np.int16(2)], [np.uint8(3), True], [np.uint8(3), 1], [True, 2], [True, False],
    [np.bool_(True), True], [[1, 2], np.array([1.0, 2.0], np.float32)],
    [np.array([1, 2], np.int32), np.array([3, 4], np.int32)], [np.array([1, 2], np.uint8), [3, 4]],
    [1.5, 2], (1, 2.5), [[1, 2], [3, np.int32(4)]], [], [[], []],
]


@pytest.mark.parametrize("data", CONSTRUCTED, ids=repr)
def test_construction_from_nested_lists_of_numbers_numpy_scalars_and_arrays_has_torchs_dtype(
        data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's "a list of numpy.ndarrays is slow"
        expected = str(torch.tensor(data).dtype).removeprefix("torch.")
    got = mt.Tensor(data).dtype
    assert str(got) == expected, f"Tensor({data!r}): expected (torch) {expected}, got {got}"


# ---- Python ints out of a small dtype's range: wrapped in arithmetic, refused when stored ----

SMALL = {"uint8": [1, 2, 250], "int8": [1, -2, 100]}
WRAPPED = [("uint8", "==", -1), ("uint8", "==", 256), ("uint8", "<", 300), ("uint8", ">=", -1),
           ("uint8", "+", 300), ("uint8", "-", 300), ("int8", "+", 200), ("int8", "*", 1000),
           ("uint8", "r+", 300), ("uint8", "&", 300)]


@pytest.mark.parametrize("dtype, op, number", WRAPPED, ids=str)
def test_a_python_int_out_of_a_small_dtypes_range_wraps_in_arithmetic_and_comparisons_as_torch(
        dtype, op, number):
    import operator
    fn = {"==": operator.eq, "<": operator.lt, ">=": operator.ge, "+": operator.add,
          "-": operator.sub, "*": operator.mul, "&": operator.and_,
          "r+": lambda a, b: b + a}[op]
    ours = fn(mt.Tensor(np.array(SMALL[dtype], dtype)), number).data
    theirs = fn(torch.tensor(SMALL[dtype], dtype=getattr(torch, dtype)), number).numpy()
    assert ours.dtype == theirs.dtype and np.array_equal(ours, theirs), \
        f"{dtype} {op} {number}: expected (torch) {theirs}, got {ours}"


@pytest.mark.parametrize("dtype, number", [("uint8", 300), ("uint8", -256), ("int8", 200),
                                           ("float32", 1e300)])
def test_item_assignment_of_a_number_that_does_not_fit_is_refused_as_torch(dtype, number):
    with pytest.raises(RuntimeError):
        torch.zeros(2, dtype=getattr(torch, dtype))[0] = number
    x = mt.Tensor(np.zeros(2, dtype))
    with pytest.raises(ValueError, match="overflow"):
        x[0] = number
    assert x.data[0] == 0, f"a refused write must leave x as it was; got {x}"


@pytest.mark.parametrize("dtype, value", [("uint8", -1), ("uint8", 255), ("float16", 70000.0),
                                          ("uint8", mt.Tensor(300))])
def test_item_assignment_that_fits_or_of_a_tensor_casts_as_torch(dtype, value):
    x, tx = mt.Tensor(np.zeros(2, dtype)), torch.zeros(2, dtype=getattr(torch, dtype))
    x[0] = value
    tx[0] = torch.tensor(value.data) if isinstance(value, mt.Tensor) else value
    assert np.array_equal(x.data, tx.numpy()), f"expected (torch) {tx}, got {x}"


# ---- retain_grad, .T, pow(Tensor, Tensor), .grad =, dropout's p -------------------------------

def test_retain_grad_on_a_tensor_that_does_not_require_grad_is_refused_as_torch():
    with pytest.raises(RuntimeError):
        torch.tensor([1.0, 2.0]).retain_grad()
    with pytest.raises(RuntimeError, match="requires_grad=False"):
        mt.Tensor([1.0, 2.0]).retain_grad()


@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (2, 3, 4)], ids=str)
def test_dot_T_reverses_the_dims_of_any_tensor_as_torch_and_carries_the_gradient(shape):
    values = np.arange(float(np.prod(shape))).reshape(shape)
    x, tx = mt.Tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's deprecation for ndim != 2 (ours too)
        y, ty = x.T, tx.T
    assert np.array_equal(y.data, ty.detach().numpy()), f"expected {ty}, got {y}"
    weights = np.arange(1.0, 1.0 + values.size).reshape(ty.shape)
    (y * mt.Tensor(weights)).sum().backward()
    (ty * torch.tensor(weights)).sum().backward()
    assert np.array_equal(x.grad, tx.grad.numpy()), f"expected {tx.grad}, got {x.grad}"


def test_dot_T_on_a_3d_tensor_warns_as_torch_deprecates_it():
    with pytest.warns(UserWarning, match="deprecated"):
        _ = mt.Tensor(np.zeros((2, 3, 4))).T


@pytest.mark.parametrize("base, exponent", [([1.0, 2.0, 3.0], 2.0), ([0.0, -1.0, 2.0],
                                             [0.0, 2.0, 0.5]), ([0.0, 0.0], [-1.0, 0.5])],
                         ids=["0-d-exponent", "edges", "zero-base"])
def test_pow_with_a_tensor_exponent_computes_and_differentiates_both_sides_as_torch(
        base, exponent):
    a, p = mt.Tensor(np.array(base), requires_grad=True), \
        mt.Tensor(np.array(exponent), requires_grad=True)
    ta = torch.tensor(base, dtype=torch.float64, requires_grad=True)
    tp = torch.tensor(exponent, dtype=torch.float64, requires_grad=True)
    y, ty = a ** p, ta ** tp
    assert np.allclose(y.data, ty.detach().numpy(), equal_nan=True), f"expected {ty}, got {y}"
    y.sum().backward()
    ty.sum().backward()
    for ours, theirs, name in ((a.grad, ta.grad, "base"), (p.grad, tp.grad, "exponent")):
        assert np.allclose(ours, theirs.numpy(), equal_nan=True), \
            f"gradient of the {name}: expected (torch) {theirs}, got {ours}"


def test_pow_with_a_0d_tensor_exponent_has_torchs_dtype():
    for base, exponent in (([1, 2], 2.0), ([1.0, 2.0], np.array(2))):
        ours = (mt.Tensor(base) ** mt.Tensor(exponent)).dtype
        theirs = (torch.tensor(base) ** torch.tensor(exponent)).dtype
        assert str(ours) == str(theirs).removeprefix("torch."), f"expected {theirs}, got {ours}"


@pytest.mark.parametrize("grad", [np.zeros(3, np.float32), np.zeros((2, 1), np.float32),
                                  np.zeros(2, np.float64)], ids=["[3]", "[2,1]", "float64"])
def test_assigning_a_grad_of_another_shape_or_dtype_is_refused_as_torch(grad):
    with pytest.raises(RuntimeError):
        torch.zeros(2).grad = torch.tensor(grad)
    x = mt.Tensor(np.zeros(2, np.float32))
    with pytest.raises(RuntimeError, match="must match"):
        x.grad = grad
    x.grad = np.ones(2, np.float32)  # the right shape and dtype: kept
    assert np.array_equal(x.grad, [1.0, 1.0]), f"expected [1, 1], got {x.grad}"


def test_dropout_without_p_uses_torchs_default_of_one_half():
    x = mt.Tensor(np.ones(4, np.float32))
    assert F.dropout(x, training=False) is x, "dropout(x, training=False) is x, as torch's"
    mt.manual_seed(0)
    y = F.dropout(mt.Tensor(np.ones(10_000, np.float32))).data
    assert set(np.unique(y)) <= {0.0, 2.0} and 0.45 < (y == 0).mean() < 0.55, \
        f"p = 0.5: expected zeros and 2s about half and half, got {np.unique(y)}"
