"""Shared fixtures for the nn tests: a fixed seed, float64 modules, a weighted gradcheck, graph walking, numpy softmax.

Helpers are handed out as fixtures (not imported), so this conftest never clashes with
the conftest of another test folder.
"""
import numpy as np
import pytest

import microtensor as mt


@pytest.fixture(autouse=True)
def _seed():
    """Every test starts from the same package-wide seed: module init and dropout repeat."""
    mt.manual_seed(0)


def _to_float64(module):
    """Cast every parameter of `module` to float64 in place (for gradcheck); returns the module."""
    for p in module.parameters():
        p.data = p.data.astype(np.float64)
    return module


def _weighted_gradcheck(fn, inputs, seed=123, **tolerances):
    """`microtensor.gradcheck` of L = Σ w ⊙ fn(*inputs) with fixed random weights w.

    Not a plain sum: softmax rows and LayerNorm outputs sum to constants, so Σ fn(x)
    would have a zero gradient whatever backward computes.
    """
    with mt.no_grad():
        shape = fn(*inputs).shape
    rng = np.random.default_rng(seed)
    weights = rng.uniform(0.5, 1.5, size=shape) * rng.choice([-1.0, 1.0], size=shape)
    return mt.gradcheck(lambda *xs: (fn(*xs) * weights).sum(), inputs, **tolerances)


def _graph_nodes(root):
    """Every `Function` node behind the Tensor `root` (each once, in no particular order)."""
    nodes, seen, stack = [], set(), [root]
    while stack:
        tensor = stack.pop()
        node = tensor._node
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        nodes.append(node)
        stack.extend(node.inputs)
    return nodes


def _np_softmax(s, axis=-1):
    """Reference softmax in numpy: exp(s − max) / Σ exp(s − max)."""
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.fixture
def to_float64():
    return _to_float64


@pytest.fixture
def weighted_gradcheck():
    return _weighted_gradcheck


@pytest.fixture
def graph_nodes():
    return _graph_nodes


@pytest.fixture
def np_softmax():
    return _np_softmax
