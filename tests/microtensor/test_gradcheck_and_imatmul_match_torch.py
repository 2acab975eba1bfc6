"""gradcheck's inputs and `x @= m` as torch 2.13 takes them: a non-leaf input, a lone Tensor as
`inputs`, and in-place matmul (values, the version count, a leaf requiring grad refused)."""
import numpy as np
import pytest

import microtensor as mt

torch = pytest.importorskip("torch")


def test_gradcheck_of_a_non_leaf_input_passes_as_torchs():
    x = mt.Tensor(np.array([1.0, -2.0, 3.0]), requires_grad=True)
    tx = torch.tensor([1.0, -2.0, 3.0], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a: (a * a).sum(), (tx * 1,)) is True
    assert mt.gradcheck(lambda a: (a * a).sum(), (x * 1,)) is True


def test_gradcheck_of_a_non_leaf_input_still_finds_a_wrong_gradient():
    x = mt.Tensor(np.array([1.0, 2.0]), requires_grad=True)
    with pytest.raises(mt.GradcheckError, match=r"gives 0, finite differences give 2"):
        mt.gradcheck(lambda a: (a.detach() * a.detach()).sum() + (a * 0).sum(), (x * 1,))


def test_gradcheck_takes_one_tensor_as_one_input_as_torch():
    data = np.array([[0.5, -1.0], [2.0, 0.25]])
    tx = torch.tensor(data, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a: (a ** 3).sum(), tx) is True
    x = mt.Tensor(data, requires_grad=True)
    assert mt.gradcheck(lambda a: (a ** 3).sum(), x) is True
    assert x.grad is None, f"gradcheck left .grad {x.grad}; expected None as before"


def test_imatmul_binds_a_new_tensor_as_torch():
    """torch 2.13's `x @= m` is `x = x @ m`: a new tensor, the old one unchanged, any shape."""
    v, m = [1.0, 2.0], [[0.0, 1.0], [1.0, 0.0]]
    tx = told = torch.tensor(v, dtype=torch.float64)
    tx @= torch.tensor(m, dtype=torch.float64)
    x = old = mt.Tensor(np.array(v))
    x @= mt.Tensor(np.array(m))
    np.testing.assert_array_equal(x.data, tx.numpy(), err_msg="[1, 2] @= [[0, 1], [1, 0]]")
    np.testing.assert_array_equal(old.data, told.numpy(), err_msg="the tensor x was before")
    assert (x is old, tx is told) == (False, False), "@= binds a new tensor, as torch"
    y, ty = mt.Tensor(np.ones((2, 3))), torch.ones(2, 3, dtype=torch.float64)
    y @= mt.Tensor(np.ones((3, 4)))
    ty @= torch.ones(3, 4, dtype=torch.float64)
    assert y.shape == tuple(ty.shape) == (2, 4), f"got {y.shape}, torch {tuple(ty.shape)}"


def test_imatmul_on_a_leaf_requiring_grad_records_the_graph_as_torch():
    x = mt.Tensor(np.array([1.0, 2.0]), requires_grad=True)
    leaf = x
    x @= mt.Tensor(np.array([[0.0, 3.0], [1.0, 0.0]]))
    x.sum().backward()
    np.testing.assert_array_equal(leaf.grad, [3.0, 1.0], err_msg="d/dx sum(x @ m) = m.sum(1)")
