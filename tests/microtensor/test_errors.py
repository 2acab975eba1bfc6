"""Mistakes give clear errors: the message names the op and the shapes or values involved.

A student who writes `x @ w` with the wrong weight layout should read which op failed
and both shapes, not a bare numpy traceback from deep inside the engine.
"""
import operator
import re

import numpy as np
import pytest
from mt_testing import tensor64

import microtensor as mt
import microtensor.functional as F


def _message(excinfo):
    return str(excinfo.value)


def test_matmul_inner_dim_mismatch_names_the_op_and_both_shapes():
    with pytest.raises(ValueError) as excinfo:
        tensor64(2, 3) @ tensor64(4, 5)
    message = _message(excinfo)
    for part in ("matmul", "(2, 3)", "(4, 5)"):
        assert part in message, f"expected {part!r} in the error; got: {message}"
    assert "matmul: matmul" not in message, (
        f"the op name should appear once at the start; got: {message}")


def test_matmul_batch_dim_mismatch_names_the_op_and_both_shapes():
    with pytest.raises(ValueError) as excinfo:
        tensor64(2, 3, 4) @ tensor64(3, 4, 5)
    message = _message(excinfo)
    for part in ("matmul", "(2, 3, 4)", "(3, 4, 5)"):
        assert part in message, f"expected {part!r} in the error; got: {message}"


def test_matmul_with_a_0d_operand_is_refused():
    with pytest.raises(ValueError, match="matmul"):
        tensor64(3) @ mt.Tensor(np.array(2.0))


@pytest.mark.parametrize("op, apply_op", [("add", operator.add), ("sub", operator.sub),
                                          ("mul", operator.mul), ("div", operator.truediv)])
def test_broadcast_mismatch_names_the_op_and_both_shapes(op, apply_op):
    a, b = tensor64(2, 3), tensor64(4)
    with pytest.raises(ValueError) as excinfo:
        apply_op(a, b)
    message = _message(excinfo)
    assert message.startswith(f"{op}:"), f"expected the error to start with '{op}:'; got: {message}"
    assert "(2, 3)" in message and "(4,)" in message, f"expected both shapes in: {message}"


def test_reshape_to_an_incompatible_shape_names_both_shapes():
    with pytest.raises(ValueError) as excinfo:
        tensor64(2, 3).reshape(4, 2)
    message = _message(excinfo)
    assert "(2, 3)" in message and "(4, 2)" in message, f"expected both shapes in: {message}"


@pytest.mark.parametrize("sizes", [(2.5, 2), (True, 6), (-2, 3), (-1, -1)])
def test_reshape_refuses_sizes_that_are_not_ints_or_a_single_minus_one(sizes):
    with pytest.raises(ValueError, match=r"^reshape: ") as excinfo:
        tensor64(2, 3).reshape(*sizes)
    assert str(sizes[0]) in str(excinfo.value), f"expected {sizes} named in: {excinfo.value}"


def test_reshape_takes_numpy_ints_and_one_minus_one_as_python_ints():
    out = tensor64(2, 3).reshape(np.int64(3), -1)
    assert out.shape == (3, 2), f"expected (3, 2); got {out.shape}"
    sizes = mt.ops.shape.Reshape((np.int64(3), -1)).new_shape
    assert [type(n) for n in sizes] == [int, int], f"expected Python ints; got {sizes!r}"


@pytest.mark.parametrize("bad_target", [5, -1])
def test_cross_entropy_with_target_out_of_range_names_the_target_and_class_count(bad_target):
    logits = tensor64(3, 5)
    with pytest.raises(ValueError) as excinfo:
        F.cross_entropy(logits, np.array([0, bad_target, 1]))
    message = _message(excinfo)
    assert str(bad_target) in message and "[0, 5)" in message, (
        f"expected the bad target {bad_target} and the range [0, 5) in: {message}")
    assert message.count("cross_entropy") == 1, f"the op name should appear once; got: {message}"


def test_cross_entropy_with_mismatched_target_shape_names_both_shapes():
    with pytest.raises(ValueError, match=re.escape("(2, 3, 5)")):
        F.cross_entropy(tensor64(2, 3, 5), np.zeros((2, 4), dtype=np.int64))


def test_cross_entropy_with_float_targets_is_a_type_error():
    with pytest.raises(TypeError, match="integers"):
        F.cross_entropy(tensor64(2, 3), np.array([0.0, 1.0]))


def test_cross_entropy_with_an_unknown_reduction_is_refused():
    with pytest.raises(ValueError, match="reduction"):
        F.cross_entropy(tensor64(2, 3), np.array([0, 1]), reduction="average")


@pytest.mark.parametrize("mask", [np.array([1, 0, 1]), np.array([1.0, 0.0, 0.0]), mt.Tensor([0, 1,
                                                                                             0])])
def test_masked_fill_with_a_non_boolean_mask_is_a_type_error(mask):
    with pytest.raises(TypeError, match="boolean"):
        tensor64(2, 3).masked_fill(mask, 0.0)


def test_embedding_with_an_id_out_of_range_names_the_range():
    with pytest.raises(IndexError, match=re.escape("[0, 4)")):
        F.embedding(np.array([0, 4]), tensor64(4, 2))


def test_layer_norm_with_a_wrong_normalized_shape_names_both_shapes():
    with pytest.raises(ValueError) as excinfo:
        F.layer_norm(tensor64(2, 3), 4)
    message = _message(excinfo)
    assert "(4,)" in message and "(2, 3)" in message, f"expected both shapes in: {message}"


def test_reduction_over_an_axis_out_of_range_names_the_axis():
    with pytest.raises(IndexError) as excinfo:  # IndexError, as torch's "Dimension out of range"
        tensor64(2, 3).sum(axis=2)
    message = _message(excinfo)
    assert "axis 2" in message, f"expected 'axis 2' in: {message}"
    assert "sum: sum" not in message, f"the op name should appear once; got: {message}"


def test_permute_with_a_non_permutation_is_refused():
    with pytest.raises(ValueError, match="permutation"):
        tensor64(2, 3, 4).permute(0, 0, 1)


def test_dot_T_on_a_3d_tensor_reverses_its_dims_with_a_warning_pointing_to_transpose():
    with pytest.warns(UserWarning, match="transpose"):  # as torch (issue 32)
        reversed_ = tensor64(2, 3, 4).T
    assert reversed_.shape == (4, 3, 2), f"expected (4, 3, 2), got {reversed_.shape}"


def test_getitem_out_of_range_names_the_tensor_shape():
    with pytest.raises(IndexError, match=re.escape("(2, 3)")):
        tensor64(2, 3)[5]


def test_pow_with_an_exponent_that_is_neither_a_number_nor_a_tensor_is_a_type_error():
    with pytest.raises(TypeError, match="scalar exponent"):
        # a Tensor exponent is torch's pow(Tensor, Tensor), tested in
        # test_torch_parity_reductions_masked_fill_construction_ints.py
        tensor64(3) ** "2"


def test_dropout_with_p_outside_0_1_is_refused():
    for p in (1.5, -0.1, "0.5", True):
        with pytest.raises(ValueError, match="p must be"):
            F.dropout(tensor64(3), p)
    out = F.dropout(tensor64(3), 1.0).data  # p = 1 drops everything, as torch
    assert (out == 0).all(), f"expected zeros at p = 1, got {out}"


def test_manual_seed_rejects_a_negative_seed():
    with pytest.raises(ValueError, match="seed"):
        mt.manual_seed(-1)


def test_transpose_with_a_dim_out_of_range_names_the_dims_and_shape():
    with pytest.raises(IndexError) as excinfo:
        tensor64(2, 3).transpose(0, 3)
    message = _message(excinfo)
    assert "transpose" in message and "(0, 3)" in message and "(2, 3)" in message, (
        f"expected the op, the dims (0, 3) and the shape (2, 3) in: {message}")
