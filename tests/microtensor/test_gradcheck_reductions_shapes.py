"""Reductions (sum mean max) and shape ops (reshape transpose permute .T getitem masked_fill cat).

Values are compared with numpy and gradients with finite differences (float64). The
indexing tests pin the scatter-add: an element read several times by an integer array
must receive the sum of all those reads' gradients, not the last one.
"""
import numpy as np
import pytest
from mt_testing import assert_close, check_gradients, tensor64

import microtensor as mt
import microtensor.functional as F

AXES = [None, 0, 1, -1, -2, (0, 2), (-1, 0), (0, 1, 2)]


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("name", ["sum", "mean", "max"])
def test_reduction_matches_numpy_and_finite_differences(name, axis, keepdims):
    # distinct values spaced 0.1 apart: no ties, so max is differentiable at x
    values = np.random.default_rng(0).permutation(24) * 0.1 - 1.2
    x = mt.Tensor(values.reshape(2, 3, 4), requires_grad=True)
    def reduce(t):
        return getattr(t, name)(axis=axis, keepdims=keepdims)

    expected = getattr(np, name)(x.data, axis=axis, keepdims=keepdims)
    assert_close(reduce(x), expected, f"{name}(axis={axis}, keepdims={keepdims})")
    assert check_gradients(reduce, x)


def test_mean_gradient_is_one_over_the_count_of_averaged_elements():
    x = tensor64(2, 5)
    x.mean(axis=1).sum().backward()
    assert_close(x.grad, np.full((2, 5), 0.2), "d(mean over 5)/dx")


def test_max_gradient_goes_only_to_the_arg_max():
    x = mt.Tensor(np.array([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]]), requires_grad=True)
    x.max(axis=1).sum().backward()
    assert_close(x.grad, [[0, 1, 0], [1, 0, 0]], "max gradient")


@pytest.mark.parametrize("shape, new_shape", [
    ((2, 6), (3, 4)), ((2, 6), (12,)), ((24,), (2, 3, 4)), ((2, 3, 4), (4, -1)), ((1,), ()),
])
def test_reshape_moves_values_and_gradients_like_numpy(shape, new_shape):
    x = tensor64(*shape)
    assert_close(x.reshape(new_shape), x.data.reshape(new_shape), f"reshape to {new_shape}")
    if new_shape:  # reshape() with no shape at all is a TypeError, as torch's
        assert_close(x.reshape(*new_shape), x.data.reshape(new_shape), f"reshape(*{new_shape})")
    assert check_gradients(lambda t: t.reshape(new_shape), x)


@pytest.mark.parametrize("dim0, dim1", [(0, 1), (1, 2), (0, 2), (-1, -2), (2, 2)])
def test_transpose_swaps_two_axes_and_its_gradient_swaps_back(dim0, dim1):
    x = tensor64(2, 3, 4)
    assert_close(x.transpose(dim0, dim1), np.swapaxes(x.data, dim0, dim1),
                 f"transpose({dim0}, {dim1})")
    assert check_gradients(lambda t: t.transpose(dim0, dim1), x)


@pytest.mark.parametrize("dims", [(0, 1, 2), (2, 0, 1), (1, 2, 0), (2, 1, 0), (-1, 0, 1)])
def test_permute_reorders_axes_and_its_gradient_applies_the_inverse_order(dims):
    x = tensor64(2, 3, 4)
    assert_close(x.permute(*dims), np.transpose(x.data, dims), f"permute{dims}")
    assert_close(x.permute(dims), np.transpose(x.data, dims), f"permute({dims})")
    assert check_gradients(lambda t: t.permute(*dims), x)


def test_dot_T_transposes_a_matrix_with_gradient():
    x = tensor64(3, 5)
    assert_close(x.T, x.data.T, ".T")
    assert check_gradients(lambda t: t.T, x)


INDEXES = {
    "int": 1,
    "negative int": -1,
    "slice": slice(1, 3),
    "slice with step": (slice(None), slice(0, 4, 2)),
    "negative step": slice(None, None, -1),
    "negative step on inner axis": (slice(None), slice(3, 0, -2)),
    "ellipsis and None": (Ellipsis, None, 1),
    "integer list": [0, 2],
    "repeated integer array": np.array([1, 1, 1, 0]),
    "repeated pairs": (np.array([0, 2, 0, 0]), np.array([1, 3, 1, 1])),
    "array then slice (mixed)": (np.array([2, 0, 2]), slice(1, None)),
    "slice then repeated array (mixed)": (slice(None, 2), np.array([3, 3, 0])),
    "boolean mask": np.array([True, False, True]),
}


@pytest.mark.parametrize("name", INDEXES)
def test_getitem_matches_numpy_indexing_and_scatters_the_gradient_back(name):
    index = INDEXES[name]
    x = tensor64(3, 4)
    assert_close(x[index], x.data[index], f"x[{name}]")
    assert check_gradients(lambda t: t[index], x)


def test_getitem_with_repeated_indices_accumulates_every_read():
    x = mt.Tensor(np.zeros(4), requires_grad=True)
    out = x[np.array([2, 2, 2, 0])]
    out.backward(np.array([1.0, 10.0, 100.0, 5.0]))
    # element 2 was read three times: its gradient is 1 + 10 + 100, not the last one (100)
    assert_close(x.grad, [5.0, 0.0, 111.0, 0.0], "gradient of x[[2, 2, 2, 0]]")


def test_getitem_accepts_an_integer_tensor_as_index():
    x = tensor64(5, 2)
    ids = mt.Tensor([4, 0, 4])
    assert_close(x[ids], x.data[[4, 0, 4]], "x[Tensor([4, 0, 4])]")
    x[ids].sum().backward()
    assert_close(x.grad, np.array([[1, 1], [0, 0], [0, 0], [0, 0], [2, 2]]), "gradient")


@pytest.mark.parametrize("mask_shape", [(3, 4), (4,), (3, 1)])
@pytest.mark.parametrize("value", [0.0, -1e9, 7.5])
def test_masked_fill_writes_value_where_blocked_and_passes_gradient_elsewhere(mask_shape, value):
    x = tensor64(3, 4)
    mask = np.random.default_rng(1).random(mask_shape) < 0.4
    expected = np.where(mask, value, x.data)
    assert_close(x.masked_fill(mask, value), expected, "x.masked_fill")
    assert_close(F.masked_fill(x, mt.Tensor(mask), value), expected,
                 "F.masked_fill with a Tensor mask")
    if abs(value) < 1e3:  # Σ w·(−1e9) would swamp the finite differences of the rest
        assert check_gradients(lambda t: t.masked_fill(mask, value), x)
    x.masked_fill(mask, value).sum().backward()
    assert_close(x.grad, np.broadcast_to(~mask, (3, 4)).astype(float),
                 "gradient is 0 where blocked")


@pytest.mark.parametrize("axis, shapes", [
    (0, [(2, 3), (1, 3), (4, 3)]),
    (1, [(2, 3), (2, 1)]),
    (-1, [(2, 2, 1), (2, 2, 3)]),
    (1, [(2, 2, 3), (2, 5, 3)]),
])
def test_cat_joins_like_numpy_and_splits_the_gradient_back(axis, shapes):
    xs = [tensor64(*s, seed=i) for i, s in enumerate(shapes)]
    assert_close(mt.cat(xs, axis=axis), np.concatenate([x.data for x in xs], axis=axis), "cat")
    assert check_gradients(lambda *ts: mt.cat(ts, axis=axis), *xs)


def test_cat_with_a_constant_part_gives_gradient_only_to_the_tensor_that_requires_it():
    x = tensor64(2, 2)
    constant = mt.Tensor(np.ones((1, 2)))
    mt.cat([x, constant], axis=0).sum().backward()
    assert_close(x.grad, np.ones((2, 2)), "gradient of the part that requires grad")
    assert constant.grad is None, f"the constant part should get no gradient; got {constant.grad}"
