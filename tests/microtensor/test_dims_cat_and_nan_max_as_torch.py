"""Issue 25's engine findings (#3, #8, #9, #12b), each held against PyTorch in float64 or hand
values: every dims form means the same everywhere, cat promotes as torch, a NaN maximum's
gradient goes where torch puts it, and a dims argument given twice is refused."""
import numpy as np
import pytest

import microtensor as mt

torch = pytest.importorskip("torch")

X = [[1.0, 2.0, 3.0], [4.0, 5.0, 0.0]]


def both(values=X):
    """The same float64 values as (ours, torch's), both requiring grad."""
    return (mt.Tensor(np.array(values, dtype=np.float64), requires_grad=True),
            torch.tensor(values, dtype=torch.float64, requires_grad=True))


def assert_same(ours, theirs, what):
    theirs = theirs.detach().numpy()
    assert ours.shape == theirs.shape and np.allclose(ours, theirs, equal_nan=True), \
        f"{what}: expected (torch) {theirs}, got {ours}"


# ---- #3: an empty dims list reduces every dim, as torch -------------------------------------

def test_sum_mean_and_max_over_an_empty_dims_list_reduce_every_dim_by_hand_values():
    x = mt.Tensor(X)
    assert x.sum(dim=[]).item() == 15.0, f"sum(dim=[]): expected 15., got {x.sum(dim=[])}"
    assert x.mean(dim=[]).item() == 2.5, f"mean(dim=[]): expected 2.5, got {x.mean(dim=[])}"
    assert x.max(axis=[]).item() == 5.0, f"max(axis=[]): expected 5., got {x.max(axis=[])}"
    kept = x.sum(dim=[], keepdim=True)
    assert kept.shape == (1, 1) and kept.item() == 15.0, \
        f"sum(dim=[], keepdim=True): expected [[15.]], got {kept}"


DIMS = [0, 1, -1, -2, (0,), (1, 0), [0], [1], [-1, 0], [], ()]


@pytest.mark.parametrize("op", ["sum", "mean", "amax"])
@pytest.mark.parametrize("dims", DIMS, ids=repr)
@pytest.mark.parametrize("keepdim", [False, True])
def test_every_dims_form_reduces_as_torch_values_and_gradients(op, dims, keepdim):
    ours, theirs = both()
    if op == "amax":
        y = ours.max(axis=dims, keepdim=keepdim)
        t = theirs.amax(dim=dims, keepdim=keepdim)
    else:
        y = getattr(ours, op)(dim=dims, keepdim=keepdim)
        t = getattr(theirs, op)(dim=dims, keepdim=keepdim)
    assert_same(y.data, t, f"{op}(dim={dims!r}, keepdim={keepdim})")
    weights = np.arange(1.0, 1.0 + y.data.size).reshape(y.shape)
    (y * mt.Tensor(weights)).sum().backward()
    (t * torch.tensor(weights)).sum().backward()
    assert_same(ours.grad, theirs.grad, f"gradient of {op}(dim={dims!r}, keepdim={keepdim})")


@pytest.mark.parametrize("dims", [[1, 0], (1, 0), [-1, -2]], ids=repr)
def test_permute_takes_its_dims_as_a_list_or_tuple_with_negatives_as_torch(dims):
    ours, theirs = both()
    assert_same(ours.permute(dims).data, theirs.permute(dims), f"permute({dims!r})")


@pytest.mark.parametrize("dim", [0, 1, -1, -2])
def test_softmax_and_transpose_read_negative_dims_as_torch(dim):
    ours, theirs = both()
    assert_same(ours.softmax(dim=dim).data, theirs.softmax(dim=dim), f"softmax(dim={dim})")
    assert_same(ours.transpose(dim, 0).data, theirs.transpose(dim, 0), f"transpose({dim}, 0)")


@pytest.mark.parametrize("call", [lambda x: x.softmax(dim=[1]), lambda x: x.softmax(dim=1.0),
                                  lambda x: x.sum(dim=[0, 0]), lambda x: x.sum(dim=2)],
                         ids=["softmax list", "softmax float", "sum twice", "sum out of range"])
def test_a_dims_form_torch_refuses_is_refused(call):
    with pytest.raises((TypeError, ValueError, IndexError)):
        call(mt.Tensor(X))


# ---- #8: cat promotes as torch -----------------------------------------------------------------

@pytest.mark.parametrize("dtypes", [("int64", "float32"), ("bool", "int64"), ("float32", "float64"),
                                    ("int32", "int64"), ("bool", "float32")], ids=str)
def test_cat_gives_torchs_promoted_dtype(dtypes):
    parts = [np.array([1, 0], dtype=dtypes[0]), np.array([1, 2], dtype=dtypes[1])]
    got = mt.cat([mt.Tensor(p) for p in parts])
    expected = torch.cat([torch.from_numpy(p) for p in parts])
    assert str(got.dtype) == str(expected.dtype).replace("torch.", ""), \
        f"cat of {dtypes}: expected {expected.dtype}, got {got.dtype}"
    assert_same(got.data, expected, f"cat of {dtypes}")


def test_cat_of_an_int_constant_and_a_float32_parameter_passes_the_gradient_in_float32():
    w = mt.Tensor(np.array([0.5, 1.5], dtype=np.float32), requires_grad=True)
    y = mt.cat([mt.Tensor(np.array([3, 4])), w])
    assert y.dtype == np.float32, f"expected float32, got {y.dtype}"
    (y * mt.Tensor(np.array([1, 2, 3, 4], dtype=np.float32))).sum().backward()
    assert w.grad.dtype == np.float32 and np.array_equal(w.grad, [3, 4]), \
        f"expected grad [3, 4] float32, got {w.grad!r}"


# ---- #9: a NaN maximum's gradient --------------------------------------------------------------

@pytest.mark.parametrize("values", [[1, np.nan, 3], [1, np.nan, np.nan], [[1, np.nan], [3, 3]],
                                    [2, 2, 1]], ids=str)
def test_max_over_everything_sends_the_gradient_where_torch_does(values):
    ours, theirs = both(values)
    y, t = ours.max(), theirs.max()
    assert_same(y.data, t, f"max() of {values}")
    y.backward()
    t.backward()
    assert_same(ours.grad, theirs.grad, f"gradient of max() of {values}")


def test_max_of_one_nan_among_three_has_the_gradient_0_1_0_by_hand():
    x = mt.Tensor(np.array([1, np.nan, 3]), requires_grad=True)
    x.max().backward()
    assert np.array_equal(x.grad, [0, 1, 0]), f"expected [0, 1, 0], got {x.grad}"


NAN_ROWS = [[1, np.nan, np.nan], [3, 2, 3]]


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_max_along_a_dim_with_nan_matches_torch_amax_and_torch_max(dim):
    ours, theirs = both(NAN_ROWS)
    ours.max(axis=dim).sum().backward()
    theirs.amax(dim=dim).sum().backward()
    assert_same(ours.grad, theirs.grad, f"gradient of max(axis={dim}) (torch amax)")
    ours, theirs = both(NAN_ROWS)
    (v, i), (tv, ti) = ours.max(dim=dim), theirs.max(dim=dim)
    assert_same(v.data, tv, f"max(dim={dim}) values")
    assert np.array_equal(i.data, ti.numpy()), f"max(dim={dim}) indices: expected {ti}, got {i}"
    v.sum().backward()
    tv.sum().backward()
    assert_same(ours.grad, theirs.grad, f"gradient of max(dim={dim})")


# ---- #12b: one parameter given twice ----------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda x: x.sum(-1, dim=0), lambda x: x.mean(0, dim=0), lambda x: x.max(1, dim=0),
    lambda x: x.softmax(-1, dim=0), lambda x: x.log_softmax(0, dim=0),
    lambda x: x.sum(0, True, keepdim=False), lambda x: mt.cat([x, x], 0, dim=1)],
    ids=["sum", "mean", "max", "softmax", "log_softmax", "keepdim", "cat"])
def test_a_dims_argument_given_positionally_and_by_keyword_is_a_type_error_as_torch(call):
    with pytest.raises(TypeError, match="multiple values"):
        call(mt.Tensor(X))


def test_torch_too_refuses_sum_with_a_dim_given_twice():
    with pytest.raises(TypeError):
        torch.tensor(X).sum(-1, dim=0)
