"""The backward engine: gradient accumulation, which tensors keep `.grad`, errors, freed graphs,
deep graphs, no_grad.

These are the rules of CONTRACT.md `Tensor.backward` and PyTorch's autograd:
gradients along several paths add up; leaves accumulate across backward() calls;
intermediates keep `.grad` only after retain_grad(); the saved arrays are freed
after one backward unless retain_graph=True; a 10,000-op chain needs no recursion.
"""
import numpy as np
import pytest
from mt_testing import assert_close, tensor64

import microtensor as mt


def test_tensor_used_twice_gets_the_sum_of_both_gradients():
    x = mt.Tensor(np.array([1.0, -2.0, 3.0]), requires_grad=True)
    (x * x + 3 * x).sum().backward()
    assert_close(x.grad, 2 * x.data + 3, "d(x² + 3x)/dx = 2x + 3")


def test_diamond_graph_propagates_each_node_once_after_all_its_consumers():
    # a feeds b and c, both feed d: a's gradient must be complete before a propagates
    x = mt.Tensor(np.array([2.0]), requires_grad=True)
    a = x * 3
    b, c = a * a, a * 5
    d = b + c + a
    d.sum().backward()
    # dd/da = 2a + 5 + 1, da/dx = 3
    assert_close(x.grad, 3 * (2 * a.data + 6), "gradient through a diamond")


def test_leaf_gradients_accumulate_across_two_backward_calls():
    x = mt.Tensor(np.array([1.0, 2.0]), requires_grad=True)
    (x * 4).sum().backward()
    (x * x).sum().backward()
    assert_close(x.grad, 4 + 2 * x.data, "grad after backward of 4x then of x² (accumulated)")


def test_zero_grad_forgets_the_accumulated_gradient():
    x = tensor64(3)
    (x * 2).sum().backward()
    x.zero_grad()
    assert x.grad is None, f"zero_grad() should set .grad to None; got {x.grad}"
    (x * 5).sum().backward()
    assert_close(x.grad, np.full(3, 5.0), "grad after zero_grad and a new backward")


def test_intermediates_have_no_grad_unless_retain_grad_is_called():
    x = tensor64(3)
    hidden = x * 2
    kept = (x + 1).retain_grad()
    (hidden * kept).sum().backward()
    assert hidden.grad is None, f"an intermediate should not keep .grad; got {hidden.grad}"
    assert_close(kept.grad, hidden.data, "retained intermediate grad = d(hidden·kept)/d(kept)")


def test_backward_on_non_scalar_without_grad_raises_value_error():
    y = tensor64(2, 3) * 2
    with pytest.raises(ValueError, match=r"\(2, 3\)"):
        y.backward()


def test_backward_on_non_scalar_with_grad_array_or_tensor():
    x = tensor64(2, 2)
    upstream = np.array([[1.0, 2.0], [3.0, 4.0]])
    (x * 3).backward(upstream)
    assert_close(x.grad, 3 * upstream, "grad from an ndarray upstream gradient")
    x.zero_grad()
    (x * 3).backward(mt.Tensor(upstream))
    assert_close(x.grad, 3 * upstream, "grad from a Tensor upstream gradient")


def test_backward_with_a_grad_of_the_wrong_shape_raises_value_error():
    y = tensor64(2, 3) * 2
    with pytest.raises(ValueError, match=r"\(3, 2\)"):
        y.backward(np.ones((3, 2)))


def test_backward_on_a_tensor_that_does_not_require_grad_raises_runtime_error():
    y = mt.Tensor(np.ones(3)) * 2
    with pytest.raises(RuntimeError, match="does not require grad"):
        y.sum().backward()


def test_second_backward_through_a_freed_graph_raises_runtime_error():
    x = tensor64(3)
    loss = (x.exp() * x).sum()
    loss.backward()
    with pytest.raises(RuntimeError, match="retain_graph"):
        loss.backward()


def test_retain_graph_allows_a_second_backward_that_accumulates():
    x = tensor64(3)
    loss = (x.exp() * x).sum()
    loss.backward(retain_graph=True)
    first = x.grad.copy()
    loss.backward()
    assert_close(x.grad, 2 * first, "two backward passes through a retained graph add up")
    assert_close(first, np.exp(x.data) * (1 + x.data), "d(x·eˣ)/dx = eˣ(1 + x)")


def test_ten_thousand_op_chain_backpropagates_without_recursion_error():
    x = mt.Tensor(np.array([1.0, 2.0]), requires_grad=True)
    y = x
    for _ in range(10_000):
        y = y * 1.0001
    y.sum().backward()
    assert_close(x.grad, np.full(2, 1.0001 ** 10_000), "d(x·1.0001¹⁰⁰⁰⁰)/dx", rtol=1e-9)
    del y  # tearing down the 10,000-deep chain must not recurse either


def test_ten_thousand_additions_give_gradient_one_and_the_right_value():
    x = mt.Tensor(np.array(0.5), requires_grad=True)
    y = x
    for _ in range(10_000):
        y = y + 1
    y.backward()
    assert y.item() == 10_000.5, f"expected 10000.5; got {y.item()}"
    assert x.grad == 1.0, f"d(x + 10000)/dx should be 1; got {x.grad}"


def test_no_grad_records_nothing_and_restores_grad_mode():
    x = tensor64(3)
    with mt.no_grad():
        assert not mt.is_grad_enabled(), "is_grad_enabled() should be False inside no_grad()"
        y = (x * 2).exp().sum()
    assert y.requires_grad is False, "an op under no_grad() must not require grad"
    assert y.grad_fn is None, "an op under no_grad() must not record a graph node"
    assert mt.is_grad_enabled(), "grad mode should be back on after no_grad()"
    with pytest.raises(RuntimeError):
        y.backward()


def test_no_grad_restores_grad_mode_after_an_exception():
    with pytest.raises(ZeroDivisionError), mt.no_grad():
        raise ZeroDivisionError("raised inside no_grad()")
    assert mt.is_grad_enabled(), "grad mode should be back on after an exception in no_grad()"


def test_no_grad_works_as_a_decorator():
    @mt.no_grad()
    def double(t):
        return t * 2

    assert double(tensor64(2)).requires_grad is False, (
        "a no_grad-decorated function recorded a graph")


def test_detach_cuts_the_graph():
    x = tensor64(3)
    y = (x * 2).detach()
    assert not y.requires_grad, "detach() should give a tensor that does not require grad"
    z = (x * y).sum()
    z.backward()
    assert_close(x.grad, y.data, "gradient does not flow through the detached factor")


@pytest.mark.parametrize("data", [[1, 2, 3], 5, np.array([1, 2], dtype=np.int32), [True, False]])
def test_integer_and_boolean_tensors_cannot_require_grad(data):
    with pytest.raises(TypeError, match="floating-point"):
        mt.Tensor(data, requires_grad=True)


def test_a_constant_operand_gets_no_gradient():
    x, c = tensor64(2), mt.Tensor(np.array([3.0, 4.0]))
    (x * c).sum().backward()
    assert c.grad is None, f"a tensor without requires_grad must get no .grad; got {c.grad}"


def test_no_grad_on_a_generator_function_covers_each_step_and_not_the_caller():
    # as torch's decorator: the body runs between next() calls, so each step is wrapped
    x = mt.Tensor([1.0], requires_grad=True)
    seen_by_body, seen_by_caller = [], []

    @mt.no_grad()
    def stream(a):
        for k in (2.0, 3.0):
            seen_by_body.append(mt.is_grad_enabled())
            yield a * k
        return "done"

    outputs = []
    for y in stream(x):
        seen_by_caller.append(mt.is_grad_enabled())
        outputs.append(y)
    assert [y.requires_grad for y in outputs] == [False, False], (
        f"expected no graph from the body, got requires_grad {[y.requires_grad for y in outputs]}")
    assert seen_by_body == [False, False] and seen_by_caller == [True, True], (
        f"expected grad off in the body, on in the caller; got body {seen_by_body}, "
        f"caller {seen_by_caller}")
    gen = stream(x)
    next(gen)
    gen.close()
    assert mt.is_grad_enabled(), "closing the generator early must leave grad mode on"
    assert [t.data.item() for t in stream(x)] == [2.0, 3.0]


def test_gradcheck_reports_the_input_the_element_and_both_values():
    class WrongSquare(mt.autograd.Function):
        op = "wrong_square"

        def forward(self, a):
            self.save(a=a)
            return a * a

        def backward(self, g):
            return g * self.saved["a"]  # should be 2a: off by a factor of 2

    x = mt.Tensor(np.array([1.0, 2.0]), requires_grad=True, name="x")
    with pytest.raises(mt.GradcheckError, match=r"x, element \(0,\).*gives 1\b.*give 2\b"):
        mt.gradcheck(lambda t: mt.apply(WrongSquare(), t).sum(), [x])


def test_gradcheck_accepts_a_one_element_output_of_any_rank():
    x = tensor64(3, 1)
    assert mt.gradcheck(lambda t: (t * t).sum(axis=0), [x]), "a [1]-shaped output is one element"


def test_gradcheck_refuses_inputs_of_which_none_requires_grad():
    # as torch.autograd.gradcheck (ValueError); True here would pass a wrong backward unchecked
    weight = mt.Tensor(np.array([1.0, 2.0]), requires_grad=True)  # used inside fn, not checked
    x = mt.Tensor(np.array([0.3, -1.2]))                          # requires_grad forgotten
    with pytest.raises(ValueError, match="none of the 1 inputs requires grad") as error:
        result = mt.gradcheck(lambda t: (t * t * weight).sum(), [x])
        pytest.fail(f"expected a ValueError, got {result!r}")
    assert "requires_grad=True" in str(error.value), f"the message should say how: {error.value}"


def test_gradcheck_refuses_float32_inputs():
    x = mt.Tensor(np.ones(2, dtype=np.float32), requires_grad=True)
    with pytest.raises(TypeError, match="float64"):
        mt.gradcheck(lambda t: t.sum(), [x])
