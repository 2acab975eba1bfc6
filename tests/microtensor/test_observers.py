"""The engine's observers and memory: hooks see ops and nodes, a plain step records no gradient
norms, names never move, backward frees a step's activations."""
import gc
import types

import numpy as np

import microtensor as mt
import nn
import viz
from models import GPT, GPTConfig


def small_gpt():
    mt.manual_seed(0)
    return GPT(GPTConfig(vocab_size=11, block_size=16, n_layer=2, n_head=2, n_embd=32))


def batch(b=4, t=16, vocab=11):
    rng = np.random.default_rng(0)
    return rng.integers(0, vocab, (b, t)), rng.integers(0, vocab, (b, t))


def test_a_forward_hook_sees_each_op_and_stops_after_remove():
    x = mt.Tensor(np.ones((2, 3)), requires_grad=True)
    seen = []
    handle = mt.hooks.register_forward_hook(lambda fn, inputs, out: seen.append((fn.op, out.shape)))
    y = (x * 2.0).sum()
    handle.remove()
    (x + 1.0).sum()
    assert seen == [("mul", (2, 3)), ("sum", ())], f"expected mul then sum, got {seen}"
    assert y.grad_fn is not None and y.grad_fn.op == "sum", f"got {y.grad_fn!r}"


def test_a_backward_hook_gets_each_node_with_its_output_and_input_gradients():
    x = mt.Tensor(np.array([1.0, 2.0]), requires_grad=True)
    calls = []
    with mt.hooks.register_backward_hook(lambda fn, gin, gout: calls.append((fn.op, gin, gout))):
        (x * 3.0).sum().backward()
    ops = [op for op, _, _ in calls]
    assert ops == ["sum", "mul", "accumulate_grad"], f"expected sum, mul, the leaf; got {ops}"
    _, grad_inputs, grad_output = calls[1]
    assert np.array_equal(grad_output, [1.0, 1.0]) and np.array_equal(grad_inputs[0], [3.0, 3.0]), (
        f"mul: expected grad_output [1, 1] and grad_input [3, 3]; got {grad_output}, {grad_inputs}")
    assert grad_inputs[1] is None, "the constant 3.0 gets no gradient"


def test_a_plain_training_step_records_no_gradient_norms():
    model = small_gpt()
    optimizer = nn.optim.AdamW(model.parameters(), lr=1e-3)
    _, loss = model(*batch())
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    nodes, edges = viz.trace(loss)
    noted = [e for e in edges if e.grad_norm is not None]
    noted += [n for n in nodes.values() if n.kind == "op" and n.grad_norm is not None]
    assert not noted, (
        f"expected no gradient norms without viz.record_grad_norms(); got {len(noted)}")
    assert not mt.hooks._backward_hooks, "no backward hook may stay installed"


def test_record_grad_norms_gives_every_edge_its_norm():
    model = small_gpt()
    _, loss = model(*batch())
    with viz.record_grad_norms():
        loss.backward()
    _, edges = viz.trace(loss)
    missing = [e for e in edges if e.grad_norm is None and not isinstance(e.src, tuple)]
    assert not missing, (
        f"expected a norm on every edge that carries gradient; {len(missing)} lack one")


def test_a_graph_drawn_before_calling_a_submodule_draws_identically_after():
    model = small_gpt()
    _, loss = model(*batch())
    with viz.record_grad_norms():
        loss.backward()
    before = viz.draw_graph(loss).source
    model.blocks[1](mt.randn(1, 3, 32))  # calling a submodule on its own
    model.blocks[0].attn.q_proj(mt.randn(1, 3, 32))
    after = viz.draw_graph(loss).source
    assert before == after, "calling a submodule changed a picture recorded earlier"
    assert "blocks.1.attn" in after, "expected full module paths in the picture"


# classes, modules and functions lead to every global of the process, not to a step's data
_NOT_DATA = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType)


def _arrays_reachable(root, skip):
    """Bytes of the numpy arrays reachable from `root` through references, leaving out `skip`
    ids."""
    total, seen, stack = 0, set(), [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or id(obj) in skip or isinstance(obj, _NOT_DATA):
            continue
        seen.add(id(obj))
        if isinstance(obj, np.ndarray):
            total += obj.nbytes if obj.base is None else 0
        stack.extend(gc.get_referents(obj))
    return total


def test_after_backward_the_steps_activations_are_not_reachable_from_the_loss():
    model = small_gpt()
    _, loss = model(*batch())
    weights = {id(a) for p in model.parameters() for a in (p.data, p.grad)}
    held = _arrays_reachable(loss, weights)
    loss.backward()
    weights |= {id(p.grad) for p in model.parameters()}
    kept = _arrays_reachable(loss, weights)
    assert held > 300_000, f"the forward graph should hold the activations first; got {held} bytes"
    assert kept < 32_000, (f"expected only ids and targets (< 32 kB) reachable after backward, "
                           f"got {kept:,} bytes of {held:,}")
