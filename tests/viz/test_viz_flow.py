"""viz.module_input_grad_norms reads ‖∂L/∂x_l‖ at each block's input off the graph, and agrees with
retain_grad()."""
import numpy as np
import pytest

import microtensor as mt
import nn
import viz


def block_inputs_by_retain_grad(model, x, y):
    """‖x_l.grad‖ for each block input x_l, by running the GPT's layers by hand (no viz)."""
    import microtensor.functional as F

    h = model.wte(x) + model.wpe(np.arange(x.shape[1]))
    inputs = []
    for block in model.blocks:
        h.retain_grad()
        inputs.append(h)
        h = block(h)
    logits = model.ln_f(h) @ model.wte.weight.T
    with viz.record_grad_norms():
        F.cross_entropy(logits, y).backward()
    return [float(np.linalg.norm(t.grad)) for t in inputs]


@pytest.mark.parametrize("norm_first", [True, False], ids=["pre-norm", "post-norm"])
def test_block_input_norms_equal_those_of_retained_grads(tiny_gpt, norm_first):
    model = tiny_gpt(n_layer=3, norm_first=norm_first)
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 11, (2, 8)), rng.integers(0, 11, (2, 8))
    _, loss = model(x, y)
    with viz.record_grad_norms():
        loss.backward()
    got = viz.module_input_grad_norms(loss, ["blocks.0", "blocks.1", "blocks.2"])
    model.zero_grad()
    expected = block_inputs_by_retain_grad(model, x, y)
    np.testing.assert_allclose(got, expected, rtol=1e-5,
                               err_msg="‖∂L/∂x_l‖ from the graph vs from retain_grad()")


def test_the_input_of_a_module_called_on_a_leaf_is_that_leaf():
    layer = nn.Linear(3, 2)
    x = mt.randn(4, 3, requires_grad=True, name="x")
    outer = nn.Sequential(layer)
    loss = (outer(x) ** 2).sum()
    with viz.record_grad_norms():
        loss.backward()
    (norm,) = viz.module_input_grad_norms(loss, ["0"])
    assert norm == pytest.approx(np.linalg.norm(x.grad)), f"expected ‖x.grad‖, got {norm}"


def test_before_backward_there_is_no_norm_to_read(tiny_gpt, gpt_step):
    loss = gpt_step(tiny_gpt(n_layer=1), backward=False)
    with pytest.raises(ValueError, match="call backward"):
        viz.module_input_grad_norms(loss, ["blocks.0"])


def test_a_module_that_is_not_in_the_graph_is_refused(tiny_gpt, gpt_step):
    loss = gpt_step(tiny_gpt(n_layer=1))
    with pytest.raises(ValueError, match="expected one input to 'blocks.5', found 0"):
        viz.module_input_grad_norms(loss, ["blocks.5"])


class Pair(nn.Module):
    """One Linear applied to two different inputs: which one is "the" input is ambiguous."""

    def __init__(self):
        super().__init__()
        self.inner = nn.Linear(2, 2)

    def forward(self, a, b):
        return self.inner(a) + self.inner(b)


class Twice(nn.Module):
    def __init__(self):
        super().__init__()
        self.pair = Pair()

    def forward(self, a, b):
        return self.pair(a, b)


def test_a_module_that_reads_two_outside_tensors_is_ambiguous():
    a, b = mt.randn(1, 2, requires_grad=True), mt.randn(1, 2, requires_grad=True)
    loss = Twice()(a, b).sum()
    with viz.record_grad_norms():
        loss.backward()
    with pytest.raises(ValueError, match="expected one input to 'pair', found 2"):
        viz.module_input_grad_norms(loss, ["pair"])
