"""Helpers for the course tests: closeness checks whose messages say expected vs got, graph look-ups, Jacobians.

The module has a distinctive name (not `helpers.py`) so it cannot be confused with a
helper module of another test folder once both are on sys.path.
"""
import numpy as np

import microtensor as mt


def _array(x):
    return np.asarray(x.data if isinstance(x, mt.Tensor) else x, dtype=np.float64)


def _show(a):
    return np.array2string(a, precision=6, suppress_small=True, max_line_width=100)


def check_close(got, expected, what, atol=1e-6, rtol=0.0):
    """Assert got ≈ expected elementwise; the message names `what` and prints both arrays."""
    got, expected = _array(got), _array(expected)
    assert got.shape == expected.shape, f"{what}: expected shape {expected.shape}, got {got.shape}"
    if not np.allclose(got, expected, atol=atol, rtol=rtol):
        diff = np.max(np.abs(got - expected))
        raise AssertionError(f"{what}: expected\n{_show(expected)}\ngot\n{_show(got)}\n"
                             f"(largest |difference| {diff:.3g}, allowed atol={atol}, rtol={rtol})")


def check_shape(tensor, expected, what):
    """Assert a tensor (or array) has exactly the shape `expected`."""
    got = tuple(np.shape(tensor.data if isinstance(tensor, mt.Tensor) else tensor))
    assert got == tuple(expected), f"{what}: expected shape {tuple(expected)}, got {got}"


def graph_tensors(root):
    """{name: Tensor} for every named tensor in the graph behind `root`, root included.

    Attention names its steps "QKᵀ", "S", "S (masked)", "A" and "Z", so a test can read
    each intermediate off the graph instead of recomputing it.
    """
    found, seen, stack = {}, set(), [root]
    while stack:
        tensor = stack.pop()
        if id(tensor) in seen:
            continue
        seen.add(id(tensor))
        if tensor.name:
            found.setdefault(tensor.name, tensor)
        if tensor._node is not None:
            stack.extend(tensor._node.inputs)
    return found


def np_softmax(s, axis=-1):
    """Reference softmax in numpy: exp(s − max) / Σ exp(s − max) along `axis`."""
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def to_float64(module):
    """Cast every parameter of `module` to float64 in place; returns the module."""
    for p in module.parameters():
        p.data = p.data.astype(np.float64)
    return module


def backward_jacobian(fn, x):
    """∂fn(x)/∂x as a dense [fn(x).size, x.size] matrix, one backward() per output element."""
    x = np.asarray(x, dtype=np.float64)
    rows = []
    for i in range(fn(mt.Tensor(x)).size):
        xt = mt.Tensor(x.copy(), requires_grad=True)
        y = fn(xt)
        upstream = np.zeros(y.shape)
        upstream.flat[i] = 1.0
        y.backward(upstream)
        rows.append(xt.grad.reshape(-1).copy())
    return np.stack(rows)


def numeric_jacobian(fn, x, eps=1e-6):
    """∂fn(x)/∂x by central finite differences, [fn(x).size, x.size]; fn maps arrays to arrays."""
    x = np.asarray(x, dtype=np.float64)
    cols = []
    for j in range(x.size):
        step = np.zeros(x.size)
        step[j] = eps
        step = step.reshape(x.shape)
        cols.append((np.asarray(fn(x + step)) - np.asarray(fn(x - step))).reshape(-1) / (2 * eps))
    return np.stack(cols, axis=1)
