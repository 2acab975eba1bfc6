"""`max(dim=)` is torch's max(dim): (values, indices); `max(axis=)` stays numpy's amax."""
import numpy as np
import pytest

from microtensor import Tensor

torch = pytest.importorskip("torch")  # the oracle; CI installs it and fails on this skip

X = np.array([[1.0, 5.0, 5.0], [7.0, 0.0, 3.0]])  # a tie in row 0


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("keepdim", [False, True])
def test_max_with_dim_returns_values_and_indices_as_torch(dim, keepdim):
    x = Tensor(X, requires_grad=True)
    values, indices = x.max(dim=dim, keepdim=keepdim)
    xt = torch.tensor(X, requires_grad=True)
    vt, it = xt.max(dim=dim, keepdim=keepdim)
    np.testing.assert_array_equal(values.data, vt.detach().numpy(),
                                  err_msg=f"max(dim={dim}).values: expected torch's, got ours")
    np.testing.assert_array_equal(indices.data, it.numpy(),
                                  err_msg=f"max(dim={dim}).indices: expected torch's, got ours")
    assert indices.dtype == np.int64, f"indices dtype: expected int64, got {indices.dtype}"
    w = np.arange(1.0, 1.0 + values.size).reshape(values.shape)
    (values * Tensor(w)).sum().backward()
    (vt * torch.tensor(w)).sum().backward()
    np.testing.assert_array_equal(x.grad, xt.grad.numpy(), err_msg=(
        f"max(dim={dim}) gradient: expected torch's (all to the index returned), got ours"))


def test_max_with_dim_unpacks_and_indexes_as_torch_code_expects():
    values, indices = Tensor(X).max(dim=1)
    assert values.data.tolist() == [5.0, 7.0], f"expected [5, 7], got {values.data.tolist()}"
    assert indices.data.tolist() == [1, 0], f"expected [1, 0], got {indices.data.tolist()}"
    first = Tensor(X).max(dim=1)[0]
    assert first.data.tolist() == [5.0, 7.0], (
        f"x.max(dim=1)[0] is the values in torch: expected [5, 7], got {first.data.tolist()}")


def test_max_with_axis_stays_amax_sharing_ties():
    x = Tensor(X, requires_grad=True)
    x.max(axis=1).sum().backward()
    xt = torch.tensor(X, requires_grad=True)
    torch.amax(xt, dim=1).sum().backward()
    np.testing.assert_array_equal(x.grad, xt.grad.numpy(), err_msg="max(axis=) is amax")


def test_max_with_dim_refuses_a_tuple_and_an_empty_dim():
    with pytest.raises(TypeError, match="dim must be one int"):
        Tensor(X).max(dim=(0, 1))
    with pytest.raises(IndexError, match="size 0"):
        Tensor(np.zeros((2, 0))).max(dim=1)
    with pytest.raises(TypeError, match="not both"):
        Tensor(X).max(axis=0, dim=1)
