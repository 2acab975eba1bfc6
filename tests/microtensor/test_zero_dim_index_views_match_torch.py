"""Integer indexing down to a 0-d tensor gives a view of the indexed tensor, as torch's (numpy's
a[1] is a scalar copy): writes through either side show in the other, and the version counter
is shared, so a backward that saved the array refuses after such a write."""
import numpy as np
import pytest

import microtensor as mt

torch = pytest.importorskip("torch")


def _both(values):
    return mt.Tensor(np.array(values)), torch.tensor(values, dtype=torch.float64)


def test_an_in_place_write_into_x_1_reaches_x_as_torch():
    x, tx = _both([1.0, 2.0, 3.0])
    v, tv = x[1], tx[1]
    v += 10
    tv += 10
    np.testing.assert_array_equal(x.data, tx.numpy(), err_msg="v = x[1]; v += 10")


def test_x_1_sees_a_later_write_into_x_as_torch():
    x, tx = _both([1.0, 2.0, 3.0])
    v, tv = x[1], tx[1]
    x[1] = 7
    tx[1] = 7
    assert v.item() == tv.item() == 7.0, f"v after x[1] = 7: got {v.item()}, torch {tv.item()}"


def test_writing_each_element_while_iterating_writes_x_as_torch():
    x, tx = _both([1.0, 2.0, 3.0])
    for e in x:
        e += 10
    for e in tx:
        e += 10
    np.testing.assert_array_equal(x.data, tx.numpy(), err_msg="for e in x: e += 10")


def test_chained_indexing_writes_through_as_torch():
    x, tx = _both([[1.0, 2.0], [3.0, 4.0]])
    x[0][1] *= 0
    tx[0][1] *= 0
    np.testing.assert_array_equal(x.data, tx.numpy(), err_msg="x[0][1] *= 0")


def test_backward_after_writing_a_saved_tensor_through_x_1_raises_as_torch():
    w, tw = _both([1.0, 2.0, 3.0])
    p = mt.Tensor(np.ones(3), requires_grad=True)
    tp = torch.ones(3, dtype=torch.float64, requires_grad=True)
    loss, tloss = (p * w).sum(), (tp * tw).sum()          # mul saves w for p's gradient
    v, tv = w[1], tw[1]
    v += 10
    tv += 10
    with pytest.raises(RuntimeError):
        tloss.backward()
    with pytest.raises(RuntimeError):
        loss.backward()
