"""`a @ b` follows numpy's matmul: 2-D, batched, broadcast batch dims, and 1-D operands on either
side.

1-D operands are the classic pitfall: numpy treats a 1-D left operand as a row vector
and a 1-D right operand as a column, then drops that axis from the result; the
backward pass must put it back before forming GBᵀ and AᵀG. Broadcast batch dims are
the other: the gradient of the smaller operand is the sum over the batches it was
reused in. Values are compared with numpy, gradients with finite differences.
"""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes
from mt_testing import (
    FEW_EXAMPLES,
    array64,
    assert_close,
    check_gradients,
    numerical_gradient,
    tensor64,
)

import microtensor as mt

SHAPES = {
    "2-D @ 2-D": ((3, 4), (4, 5)),
    "batched 3-D": ((2, 3, 4), (2, 4, 5)),
    "batched 4-D": ((2, 2, 3, 4), (2, 2, 4, 3)),
    "broadcast batch [2,1,3,4]@[5,4,6]": ((2, 1, 3, 4), (5, 4, 6)),
    "broadcast batch [1,3,4]@[2,4,2]": ((1, 3, 4), (2, 4, 2)),
    "[B,T,K]@[K,N] (fast path)": ((2, 3, 4), (4, 5)),
    "[B,H,T,K]@[K,N] (fast path)": ((2, 2, 3, 4), (4, 2)),
    "2-D @ 3-D": ((3, 4), (2, 4, 5)),
    "1-D @ 2-D": ((4,), (4, 5)),
    "1-D @ 3-D": ((4,), (2, 4, 5)),
    "2-D @ 1-D": ((3, 4), (4,)),
    "3-D @ 1-D": ((2, 3, 4), (4,)),
    "1-D @ 1-D": ((4,), (4,)),
}


@pytest.mark.parametrize("case", SHAPES)
def test_matmul_matches_numpy_values_and_finite_difference_gradients(case):
    shape_a, shape_b = SHAPES[case]
    a, b = tensor64(*shape_a, seed=1), tensor64(*shape_b, seed=2)
    out = a @ b
    assert_close(out, np.matmul(a.data, b.data), f"{case}: a @ b")
    assert check_gradients(lambda x, y: x @ y, a, b)
    (a @ b).backward(np.ones(out.shape))
    assert a.grad.shape == shape_a and b.grad.shape == shape_b, (
        f"{case}: gradients must have shapes {shape_a} and {shape_b}; "
        f"got {a.grad.shape}, {b.grad.shape}")


def test_1d_left_operand_gradient_sums_over_broadcast_batches():
    # v @ B for a 1-D v and a stack B [2, 4, 3]: v is reused in both batches
    v, B = tensor64(4, seed=1), tensor64(2, 4, 3, seed=2)
    upstream = array64(2, 3, seed=3)
    (v @ B).backward(upstream)
    expected_v = numerical_gradient(lambda x: np.sum(np.matmul(x, B.data) * upstream), v.data)
    expected_B = numerical_gradient(lambda x: np.sum(np.matmul(v.data, x) * upstream), B.data)
    assert_close(v.grad, expected_v, "d(v @ B)/dv", atol=1e-6)
    assert_close(B.grad, expected_B, "d(v @ B)/dB", atol=1e-6)


def test_1d_right_operand_gradient_sums_over_all_rows_of_all_batches():
    A, v = tensor64(2, 3, 4, seed=1), tensor64(4, seed=2)
    upstream = array64(2, 3, seed=3)
    (A @ v).backward(upstream)
    assert_close(v.grad, np.einsum("btk,bt->k", A.data, upstream), "d(A @ v)/dv = Σ g·A")
    assert_close(A.grad, upstream[..., None] * v.data, "d(A @ v)/dA = g ⊗ v")


def test_dot_product_of_two_vectors_is_a_scalar_with_swapped_gradients():
    a, b = tensor64(5, seed=1), tensor64(5, seed=2)
    out = a @ b
    assert out.shape == (), f"1-D @ 1-D should be a 0-d scalar; got shape {out.shape}"
    out.backward()
    assert_close(a.grad, b.data, "d(a·b)/da = b")
    assert_close(b.grad, a.data, "d(a·b)/db = a")


def test_matmul_with_a_numpy_array_on_either_side():
    x = tensor64(3, 4)
    w = array64(4, 2, seed=5)
    m = array64(2, 3, seed=6)
    assert_close(x @ w, x.data @ w, "Tensor @ ndarray")
    left = m @ x
    assert isinstance(left, mt.Tensor), f"ndarray @ Tensor should give a Tensor; got {type(left)}"
    assert_close(left, m @ x.data, "ndarray @ Tensor")
    left.sum().backward()
    assert_close(x.grad, m.T @ np.ones((2, 4)), "gradient of ndarray @ x")


def test_fast_path_weight_gradient_sums_over_batch_and_time():
    # [B, T, K] @ [K, N] runs as one [B*T, K] @ [K, N] product; dW = Σ_{b,t} xᵀ g
    x, w = tensor64(3, 5, 4, seed=1), tensor64(4, 2, seed=2)
    upstream = array64(3, 5, 2, seed=3)
    (x @ w).backward(upstream)
    assert_close(w.grad, np.einsum("btk,btn->kn", x.data, upstream), "dW of [B,T,K] @ [K,N]")
    assert_close(x.grad, upstream @ w.data.T, "dX of [B,T,K] @ [K,N]")


@FEW_EXAMPLES
@given(batch=mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3),
       m=st.integers(1, 3), k=st.integers(1, 3), n=st.integers(1, 3),
       vector_a=st.booleans(), vector_b=st.booleans(), seed=st.integers(0, 2**16))
def test_matmul_with_any_broadcast_batch_shapes_matches_numpy_and_finite_differences(
        batch, m, k, n, vector_a, vector_b, seed):
    batch_a, batch_b = batch.input_shapes
    shape_a = (k,) if vector_a else (*batch_a, m, k)
    shape_b = (k,) if vector_b else (*batch_b, k, n)
    a, b = tensor64(*shape_a, seed=seed), tensor64(*shape_b, seed=seed + 1)
    assert_close(a @ b, np.matmul(a.data, b.data), f"{shape_a} @ {shape_b}")
    assert check_gradients(lambda x, y: x @ y, a, b)


def test_a_1d_operand_runs_the_reading_paths_matmul_between_two_reshapes():
    # issue 31: torch's 1-D form lives in parity/surface/arithmetic.py, built from path ops
    a, b = tensor64(3), tensor64(3, 2)
    z = a @ b
    ops, node = [], z.grad_fn
    while node is not None and not isinstance(node, mt.autograd.AccumulateGrad):
        ops.append(node.op)
        node = node.inputs[0]
    assert ops == ["reshape", "matmul", "reshape"], f"expected reshape<-matmul<-reshape; got {ops}"
    assert z.shape == (2,), f"expected shape (2,); got {z.shape}"
    assert_close(z.data, a.data @ b.data, "1-D @ 2-D")
    z.sum().backward()
    assert_close(a.grad, b.data.sum(axis=1), "∂/∂a of Σ(a @ b) = row sums of b")
    assert_close(b.grad, np.repeat(a.data[:, None], 2, axis=1), "∂/∂b of Σ(a @ b): a, each column")
