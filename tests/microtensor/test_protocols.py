"""Python's protocols on Tensor answer as torch.Tensor's do, or refuse in one line (issue 16).

The first test walks Python's data-model names: each is defined by Tensor, left to Python
to refuse (no default exists), or one of object's defaults listed with why it is right.
"""
import copy
import math
import pickle

import numpy as np
import pytest

import microtensor as mt
import microtensor.functional as F

# every special method name of Python's data model that an instance can be asked for
DATA_MODEL = """
__eq__ __ne__ __lt__ __le__ __gt__ __ge__ __hash__ __bool__ __len__ __length_hint__ __iter__
__next__ __reversed__ __contains__ __getitem__ __setitem__ __delitem__ __missing__ __add__
__radd__ __iadd__ __sub__ __rsub__ __isub__ __mul__ __rmul__ __imul__ __matmul__ __rmatmul__
__imatmul__ __truediv__ __rtruediv__ __itruediv__ __floordiv__ __rfloordiv__ __ifloordiv__
__mod__ __rmod__ __imod__ __divmod__ __rdivmod__ __pow__ __rpow__ __ipow__ __lshift__
__rlshift__ __ilshift__ __rshift__ __rrshift__ __irshift__ __and__ __rand__ __iand__ __xor__
__rxor__ __ixor__ __or__ __ror__ __ior__ __neg__ __pos__ __abs__ __invert__ __complex__
__int__ __float__ __index__ __round__ __trunc__ __floor__ __ceil__ __enter__ __exit__
__aenter__ __aexit__ __await__ __aiter__ __anext__ __call__ __format__ __repr__ __str__
__bytes__ __copy__ __deepcopy__ __reduce__ __reduce_ex__ __getstate__ __setstate__
__getnewargs__ __getnewargs_ex__ __sizeof__ __dir__ __getattr__ __getattribute__ __setattr__
__delattr__ __get__ __set__ __delete__ __set_name__ __init_subclass__ __class_getitem__
__instancecheck__ __subclasscheck__ __buffer__ __release_buffer__ __array__
""".split()

# object's own answers that are right for a tensor too, each with why
OBJECT_DEFAULTS_KEPT = {
    "__getattribute__": "attribute lookup", "__setattr__": "attribute assignment",
    "__delattr__": "attribute deletion", "__dir__": "lists the attributes",
    "__sizeof__": "size of the Python object", "__init_subclass__": "subclassing (Parameter)",
    "__reduce__": "pickling goes through __getstate__", "__reduce_ex__": "the same",
    "__str__": "object's __str__ calls Tensor.__repr__",
}


def _defined_by_tensor(name):
    return any(name in vars(cls) for cls in mt.Tensor.__mro__[:-1])


def test_no_data_model_name_is_left_to_objects_default():
    left = [n for n in DATA_MODEL
            if n in vars(object) and not _defined_by_tensor(n) and n not in OBJECT_DEFAULTS_KEPT]
    assert not left, f"expected every name object answers to be Tensor's own; left: {left}"


def test_names_tensor_does_not_define_are_refused_by_python():
    t = mt.Tensor([1.0, 2.0])
    for name in ("__round__", "__floor__", "__call__", "__enter__", "__bytes__"):
        assert not _defined_by_tensor(name) and name not in vars(object), name
    for attempt in (lambda: round(t), lambda: t(), lambda: bytes(t),
                    lambda: divmod(t, 2), lambda: t // 2, lambda: t % 2, lambda: t << 1,
                    lambda: 2 ** t):
        with pytest.raises(TypeError):
            attempt()


# ---- the example: == with a padding mask --------------------------------------
def test_equality_builds_the_padding_mask_of_notes_3_3():
    ids, pad = mt.Tensor([[0, 5, 0]]), 5
    s = mt.Tensor([[1.0, 1.0, 1.0]])
    mask = ids != pad  # block everything but position 1... and the reverse below
    weights = s.masked_fill(ids == 0, -math.inf).softmax(-1).data
    assert mask.dtype == np.bool_, f"expected a bool tensor from !=, got {type(mask)}"
    np.testing.assert_allclose(weights, [[0.0, 1.0, 0.0]],
                               err_msg=f"expected softmax [0, 1, 0] (PyTorch), got {weights}")


@pytest.mark.parametrize("name, op", [("==", "__eq__"), ("!=", "__ne__"), ("<", "__lt__"),
                                      ("<=", "__le__"), (">", "__gt__"), (">=", "__ge__")])
def test_comparisons_are_elementwise_bool_tensors_without_gradient_on_either_side(name, op):
    import operator
    fn = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
          ">": operator.gt, ">=": operator.ge}[name]
    a = np.array([[1.0, 2.0, np.nan], [-np.inf, 0.5, 3.0]])
    b = np.array([2.0, 2.0, 1.0])
    t = mt.Tensor(a, requires_grad=True)
    for other in (mt.Tensor(b), b, 2.0, 2, np.float32(2)):
        for got, want in ((fn(t, other), fn(a, other)), (fn(other, t), fn(other, a))):
            assert isinstance(got, mt.Tensor), f"{name}: expected a Tensor, got {type(got)}"
            assert got.dtype == np.bool_ and not got.requires_grad, (
                f"{name}: expected bool without grad, got {got.dtype}, {got.requires_grad}")
            np.testing.assert_array_equal(got.data, want, err_msg=f"{name} with {other!r}")


def test_comparisons_cast_to_pytorchs_result_type():
    torch = pytest.importorskip("torch")
    for x, y in (([0.1], 0.1), ([1, 2, 3], 1.5), ([True, False], 1), ([16777217], 16777216.0)):
        got = (mt.Tensor(x) == y).data
        want = (torch.tensor(x) == y).numpy()
        np.testing.assert_array_equal(got, want, err_msg=f"{x} == {y}: expected {want}")


def test_comparison_with_none_or_a_string_is_false_as_torch():
    t = mt.Tensor([1.0])
    assert (t == None) is False and (t != "a") is True  # noqa: E711
    with pytest.raises(TypeError):
        t < None  # noqa: B015


def test_bitwise_operators_combine_bool_masks_and_refuse_floats():
    a, b = mt.Tensor([True, False, True]), np.array([True, True, False])
    np.testing.assert_array_equal((a | b).data, [True, True, True])
    np.testing.assert_array_equal((b & a).data, [True, False, False])
    np.testing.assert_array_equal((~a).data, [False, True, False])
    np.testing.assert_array_equal((mt.Tensor([True]) & 1).data, [1])  # int64, as torch
    with pytest.raises(TypeError, match="only bool and integer"):
        mt.Tensor([1.0]) & mt.Tensor([1.0])
    with pytest.raises(TypeError, match="only bool and integer"):
        ~mt.Tensor([1.0])


# ---- one element as a Python value -------------------------------------------------------
def test_bool_int_float_need_exactly_one_element():
    assert bool(mt.Tensor([0.0])) is False and bool(mt.Tensor(2)) is True
    assert int(mt.Tensor([[2.7]])) == 2 and float(mt.Tensor(3)) == 3.0
    for bad in (mt.Tensor([1.0, 2.0]), mt.Tensor(np.zeros(0))):
        with pytest.raises(RuntimeError, match="ambiguous"):
            bool(bad)
        with pytest.raises(ValueError, match="one element"):
            float(bad)


def test_index_takes_one_element_integer_tensors_only():
    assert [10, 11, 12][mt.Tensor(2)] == 12 and [10, 11][mt.Tensor([1])] == 11
    with pytest.raises(TypeError, match="integer tensors"):
        [1, 2][mt.Tensor(1.0)]


def test_format_spec_formats_a_0d_tensor_and_is_refused_otherwise_as_torch():
    assert f"{mt.Tensor(1.23456):.3f}" == "1.235"
    assert f"{mt.Tensor([1.0])}" == repr(mt.Tensor([1.0]))
    with pytest.raises(TypeError, match="unsupported format"):
        f"{mt.Tensor([1.5]):.3f}"


# ---- a container along dim 0 ---------------------------------------------------------------
def test_len_iteration_and_reversed_go_along_dim_0_and_carry_gradient():
    x = mt.Tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], requires_grad=True)
    rows = list(x)
    assert len(x) == 3 and len(rows) == 3 and rows[1].shape == (2,)
    (rows[0] * 1 + rows[2] * 3).sum().backward()
    np.testing.assert_array_equal(x.grad, [[1, 1], [0, 0], [3, 3]],
                                  err_msg="expected each row's gradient to reach x")
    np.testing.assert_array_equal(reversed(x).data, x.data[::-1])


def test_len_and_iteration_of_a_0d_tensor_raise_type_error_as_torch():
    with pytest.raises(TypeError, match="0-d"):
        len(mt.Tensor(1.0))
    with pytest.raises(TypeError, match="0-d"):
        iter(mt.Tensor(1.0))


def test_in_asks_whether_any_element_equals():
    t = mt.Tensor([[1.0, 2.0], [3.0, np.nan]])
    assert 2 in t and 3.0 in t and mt.Tensor(1.0) in t
    assert 5 not in t and np.nan not in t
    with pytest.raises(TypeError, match="takes a Tensor or a number"):
        "a" in t  # noqa: B015


def test_hash_is_by_identity_so_tensors_stay_usable_in_sets_and_dicts():
    a, b = mt.Tensor([1.0]), mt.Tensor([1.0])
    assert len({a, b}) == 2 and {a: 1}[a] == 1 and hash(a) == hash(a)


# ---- writing in place ----------------------------------------------------------------------
def test_in_place_operators_change_the_tensor_every_name_for_it_sees():
    t = mt.Tensor([1.0, 2.0])
    alias = t
    t += 1
    t *= mt.Tensor([2.0, 3.0])
    assert alias is t
    np.testing.assert_array_equal(alias.data, [4.0, 9.0])


def test_in_place_refuses_a_tensor_that_requires_grad_unless_under_no_grad():
    p = mt.Tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="requires grad"):
        p -= 1
    with pytest.raises(RuntimeError, match="requires grad"):
        p[0] = 5.0
    with mt.no_grad():
        p -= mt.Tensor([0.5, 0.5])  # the manual SGD step of a course: allowed, as torch
        p[1] = 7.0
    np.testing.assert_array_equal(p.data, [0.5, 7.0])
    assert p.requires_grad


def test_in_place_refuses_a_result_of_a_wider_kind_or_shape_as_torch():
    with pytest.raises(RuntimeError, match="can't be cast"):
        ids = mt.Tensor([1, 2])
        ids += 1.5
    with pytest.raises(RuntimeError, match="shape"):
        z = mt.Tensor(np.zeros(3))
        z += np.ones((2, 3))


def test_setitem_writes_with_every_index_form_and_casts_as_torch():
    t = mt.Tensor(np.zeros((3, 4), dtype=np.int64))
    t[0] = 1.7  # truncated to 1, as torch
    t[t.data == 0] = mt.Tensor(2)
    t[mt.Tensor([2]), ::-1] = np.arange(4)
    np.testing.assert_array_equal(t.data, [[1, 1, 1, 1], [2, 2, 2, 2], [3, 2, 1, 0]])


# ---- copies and pickling --------------------------------------------------------------------
def test_deepcopy_and_pickle_copy_a_leaf_and_refuse_a_non_leaf_deepcopy():
    p = mt.Tensor([1.0, 2.0], requires_grad=True, name="w")
    q = copy.deepcopy(p)
    assert q is not p and q.requires_grad and q.name == "w"
    q.data[0] = 9
    assert p.data[0] == 1.0, "expected the copy to own its data"
    r = pickle.loads(pickle.dumps(p * 2))
    np.testing.assert_array_equal(r.data, [2.0, 4.0])
    assert r.grad_fn is None
    with pytest.raises(RuntimeError, match="leaf"):
        copy.deepcopy(p * 2)


# ---- numpy on the left ------------------------------------------------------------------
def test_numpy_array_on_the_left_goes_to_tensor():
    a = np.array([1.0, 2.0])
    t = mt.Tensor([2.0, 2.0], requires_grad=True)
    for got in (a == t, a + t, a < t):
        assert isinstance(got, mt.Tensor), f"expected a Tensor from ndarray op Tensor, got {got!r}"


def test_abs_and_unary_plus():
    x = mt.Tensor([-2.0, 0.0, 3.0], requires_grad=True)
    abs(x).sum().backward()
    np.testing.assert_array_equal(x.grad, [-1.0, 0.0, 1.0], err_msg="d|x|/dx = sign(x)")
    assert (+x) is x and abs(mt.Tensor([-1, 2])).dtype == np.int64
    with pytest.raises(TypeError):
        abs(mt.Tensor([True]))


# ---- decorators -----------------------------------------------------------------------------
def test_no_grad_decorates_with_or_without_parentheses_and_nests():
    x = mt.Tensor([1.0], requires_grad=True)

    @mt.no_grad
    def bare():
        return x * 2

    @mt.no_grad()
    def called():
        return x * 2

    assert not bare().requires_grad and not called().requires_grad
    guard = mt.no_grad()
    with guard:
        with guard:
            assert not mt.is_grad_enabled()
        assert not mt.is_grad_enabled(), "expected the outer no_grad still in force"
    assert mt.is_grad_enabled() and (x * 2).requires_grad


def test_unary_float_functions_of_integer_tensors_are_float32_as_torch():
    for fn in (mt.Tensor.exp, mt.Tensor.log, mt.Tensor.sqrt, mt.Tensor.tanh):
        got = fn(mt.Tensor([1, 2])).dtype
        assert got == np.float32, f"{fn.__name__}(int64): expected float32, got {got}"
    assert F.relu(mt.Tensor([-1, 2])).dtype == np.int64


def test_in_place_on_a_tensor_a_graph_saved_makes_backward_refuse_as_torch():
    x = mt.Tensor([1.0, 2.0], requires_grad=True)
    c = mt.Tensor([3.0, 4.0])
    y = (x * c).sum()
    c += 10  # the constant changes after the forward that saved it
    with pytest.raises(RuntimeError, match="modified in place"):
        y.backward()
    lin_w = mt.Tensor([[1.0], [2.0]], requires_grad=True)
    out = (mt.Tensor([[1.0, 1.0]], requires_grad=True) @ lin_w).sum()
    with mt.no_grad():
        lin_w -= 1.0  # an optimizer step between forward and backward
    with pytest.raises(RuntimeError, match="modified in place"):
        out.backward()


def test_in_place_on_a_tensor_no_graph_saved_leaves_backward_alone():
    x = mt.Tensor([1.0, 2.0], requires_grad=True)
    c = mt.Tensor([3.0, 4.0])
    y = (x + c).sum()  # add saves nothing for backward
    c += 10
    y.backward()
    np.testing.assert_array_equal(x.grad, [1.0, 1.0])


def test_in_place_writes_reach_views_numpy_and_detach_as_torch():
    a = mt.Tensor(np.array([[1.0, 2.0], [3.0, 4.0]]))
    n, d, row, flat = a.numpy(), a.detach(), a[0], a.reshape(4)
    a += 1
    np.testing.assert_array_equal(n, [[2, 3], [4, 5]], err_msg="numpy() shares the array")
    np.testing.assert_array_equal(d.data, [[2, 3], [4, 5]], err_msg="detach() shares it")
    row += 10
    flat[3] = 0.0
    np.testing.assert_array_equal(a.data, [[12, 13], [4, 0]],
                                  err_msg="writes through a view reach the tensor")


# ---- arrays the caller keeps: refilled before backward --------------------------------------
def test_a_numpy_buffer_refilled_before_backward_does_not_change_the_gradient():
    buf, w = np.ones(3), mt.Tensor(np.ones(3), requires_grad=True)
    losses = []
    for v in (1.0, 2.0, 3.0):  # micro-batches through one input buffer
        buf[...] = v
        losses.append((w * buf).sum())
    (losses[0] + losses[1] + losses[2]).backward()
    np.testing.assert_array_equal(w.grad, [6.0, 6.0, 6.0], err_msg="expected 1 + 2 + 3")


def test_ids_masks_and_index_arrays_refilled_before_backward_do_not_move_the_gradient():
    weight = mt.Tensor(np.zeros((4, 2)), requires_grad=True)
    ids = np.array([0, 1])
    out = F.embedding(ids, weight)
    ids[...] = [2, 3]
    out.sum().backward()
    np.testing.assert_array_equal(weight.grad[:, 0], [1, 1, 0, 0], err_msg="rows 0 and 1")
    x, mask = mt.Tensor(np.ones(3), requires_grad=True), np.array([True, False, False])
    y = x.masked_fill(mask, 0.0)
    mask[...] = [False, False, True]
    y.sum().backward()
    np.testing.assert_array_equal(x.grad, [0, 1, 1], err_msg="the mask at forward time")
    z, where = mt.Tensor(np.zeros(3), requires_grad=True), np.array([0, 0])
    picked = z[where]
    where[...] = 2
    picked.sum().backward()
    np.testing.assert_array_equal(z.grad, [2, 0, 0])


# ---- requires_grad ---------------------------------------------------------------------------
def test_requires_grad_attribute_is_checked_as_requires_grad_():
    x = mt.Tensor([1, 2])
    with pytest.raises(TypeError, match="floating-point"):
        x.requires_grad = True
    y = mt.Tensor([1.0], requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="leaf tensors only"):
        y.requires_grad_(False)
    leaf = mt.Tensor([1.0])
    leaf.requires_grad = True
    (leaf * 3).sum().backward()
    assert leaf.grad[0] == 3.0


def test_a_custom_function_returning_the_wrong_number_of_gradients_is_refused():
    class MyMul(mt.Function):
        op = "mymul"

        def forward(self, a, b):
            self.save(a=a, b=b)
            return a * b

        def backward(self, g):
            return g * self.saved["b"]  # forgot ∂L/∂b

    a, b = mt.Tensor([1.0], requires_grad=True), mt.Tensor([3.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="returned 1 gradients; expected 2"):
        mt.apply(MyMul(), a, b).sum().backward()


def test_a_custom_function_returning_a_gradient_with_too_few_dims_is_refused():
    class RowSum(mt.Function):
        op = "rowsum"

        def forward(self, a):
            return a.sum(axis=1, keepdims=True)

        def backward(self, g):
            return g.ravel()  # [2] for an input [2, 3]: would reshape into nonsense

    a = mt.Tensor(np.ones((2, 3)), requires_grad=True)
    with pytest.raises(ValueError, match=r"a gradient of shape \(2,\) for an input of shape "
                                         r"\(2, 3\)"):
        mt.apply(RowSum(), a).sum().backward()
