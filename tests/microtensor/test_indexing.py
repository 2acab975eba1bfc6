"""Indexing gives PyTorch's values and gradients in every index form numpy has (issue 16):
nested sequences, lists, arrays, bool masks, None, Ellipsis, Tensors, 0-d tensors; repeated
positions accumulate in backward; a negative step gives torch.flip's values."""
import numpy as np
import pytest

import microtensor as mt

torch = pytest.importorskip("torch")
# torch 2.13 reads x[[[0, 1], [1, 0]]] as x[[0, 1], [1, 0]] (the rule compared here); it warns
pytestmark = pytest.mark.filterwarnings("ignore:Using a non-tuple sequence:UserWarning")

X = np.arange(24, dtype=np.float64).reshape(2, 3, 4) / 7


def _pair(index):
    """the index on our side and on torch's (Tensors and arrays converted)."""
    if isinstance(index, tuple):
        pairs = [_pair(p) for p in index]
        return tuple(p for p, _ in pairs), tuple(q for _, q in pairs)
    if isinstance(index, mt.Tensor):
        return index, torch.from_numpy(index.data.copy())
    if isinstance(index, np.ndarray):
        return index, torch.from_numpy(index)
    return index, index


FORMS = [
    1, -1, (0, 2), (slice(None), 1), (Ellipsis, 2), (None, 0), (0, None, slice(1, 3)),
    [1, 1, 0], [[0, 1], [1, 0]], ([0, 1, 1], [2, 2, 0]), ((0, 0), (1, 1)),
    np.array([[1, 1], [0, 0]]), X > 0.5, (slice(None), [True, False, True]),
    mt.Tensor([1, 1]), mt.Tensor(1), (mt.Tensor(0), slice(None), mt.Tensor([3, 3, 0])),
    (Ellipsis, None), (slice(None), np.array([[0], [2]]), np.array([1, 1])),
]


@pytest.mark.parametrize("index", FORMS, ids=[repr(f)[:40] for f in FORMS])
def test_every_index_form_gives_torchs_values_and_gradients(index):
    ours, theirs = _pair(index)
    x = mt.Tensor(X, requires_grad=True)
    t = torch.tensor(X, requires_grad=True)
    got, want = x[ours], t[theirs]
    np.testing.assert_array_equal(got.data, want.detach().numpy(),
                                  err_msg=f"x[{index!r}]: expected torch's values")
    weights = np.cos(np.arange(got.data.size)).reshape(got.shape)
    (got * mt.Tensor(weights)).sum().backward()
    (want * torch.from_numpy(weights)).sum().backward()
    np.testing.assert_allclose(x.grad, t.grad.numpy(), rtol=1e-12,
                               err_msg=f"x[{index!r}]: expected torch's gradient")


def test_repeated_positions_accumulate_their_gradients():
    x = mt.Tensor(np.zeros(3), requires_grad=True)
    x[[0, 0, 2, 0]].sum().backward()
    np.testing.assert_array_equal(x.grad, [3, 0, 1], err_msg="expected x[0] read three times")
    y = mt.Tensor(np.zeros((2, 2)), requires_grad=True)
    y[(0, 0), (1, 1)].sum().backward()  # a tuple inside the index tuple reads by arrays too
    np.testing.assert_array_equal(y.grad, [[0, 2], [0, 0]])


@pytest.mark.parametrize("index", [slice(None, None, -1), (Ellipsis, slice(None, None, -2)),
                                   (slice(None), slice(2, None, -1))])
def test_a_negative_step_gives_torch_flips_values_and_gradients(index):
    """torch refuses negative steps; ours read as numpy's, which torch.flip computes."""
    x = mt.Tensor(X, requires_grad=True)
    got = x[index]
    t = torch.tensor(X, requires_grad=True)
    parts = index if isinstance(index, tuple) else (index,)
    want = t
    for axis, p in enumerate(parts if parts[0] is not Ellipsis else (slice(None),) * (
            X.ndim - len(parts) + 1) + parts[1:]):
        if isinstance(p, slice) and p.step and p.step < 0:
            start = p.start if p.start is not None else X.shape[axis] - 1
            kept = torch.arange(start, -1, -1)[::1]
            want = want.index_select(axis, kept[::abs(p.step)] if p.step == -1 else
                                     kept[torch.arange(0, len(kept), abs(p.step))])
    np.testing.assert_array_equal(got.data, want.detach().numpy())
    got.sum().backward()
    want.sum().backward()
    np.testing.assert_array_equal(x.grad, t.grad.numpy())


def test_a_float_index_is_refused_as_torch():
    with pytest.raises(IndexError):
        mt.Tensor(X)[mt.Tensor(1.0)]


def test_an_int_next_to_an_array_keeps_torchs_dim_order_in_reading_and_writing():
    """numpy counts the 0 as an array index and puts the list's dim first: x[0, :, [3, 1]]
    would be [2, 3], the transpose of torch's [3, 2]."""
    x = mt.Tensor(X)
    np.testing.assert_array_equal(x[0, :, [3, 1]].data, torch.tensor(X)[0, :, [3, 1]].numpy())
    t, want = mt.Tensor(np.zeros((2, 3, 4))), torch.zeros(2, 3, 4, dtype=torch.float64)
    values = np.arange(6.0).reshape(3, 2)
    t[0, :, [3, 1]] = values
    want[0, :, [3, 1]] = torch.from_numpy(values)
    np.testing.assert_array_equal(t.data, want.numpy(), err_msg="expected torch's positions")
