"""The engine: the graph node `Function` and `backward()`, the chain rule (course notes 3.8).

An op on an input that requires grad leaves a `Function` on its output (`tensor.grad_fn`);
`backward()` visits the nodes from the output back to the leaves, applying the chain rule at
each (Baydin et al. 2018). What PyTorch adds around each node (checks, hooks, freeing saved
arrays) wraps `node.backward(g)` from outside, in parity/graph.py; `no_grad`: grad_mode.py.
"""
import numpy as np

from .parity.leaves import leaf_node
from .parity.summation import sum_as_torch


def unbroadcast(grad, shape):
    """Sum `grad` back to `shape`, undoing the broadcasting that the forward op did.

    The gradient of a broadcast is a sum: broadcasting copies an input along new leading axes
    and along axes of size 1, so its gradient adds up the gradients of the copies. E.g. a bias
    `[D]` added to `[B, T, D]` receives `grad.sum(axis=(0, 1))`.
    """
    if grad.shape == shape:
        return grad
    extra = grad.ndim - len(shape)  # the new leading axes, then the axes stretched from 1
    axes = tuple(range(extra)) + tuple(extra + i for i, n in enumerate(shape)
                                       if n == 1 and grad.shape[extra + i] != 1)
    # grad.sum(axes), in blocks as torch: numpy adds these axes row by row (parity/summation.py)
    return sum_as_torch(grad, axes).reshape(shape)


class Function:
    """One op of the graph, its forward and backward side by side under its formula (e.g. Mul
    in ops/arithmetic.py). One instance per call is that call's node: `inputs` (the node behind
    each input), `input_shapes`, `saved`, and its output's `shape` and `dtype` (set by apply)."""

    op = "function"  # the name errors and pictures give the op
    inputs = input_shapes = needs_input_grad = ()
    saved = {}  # replaced by save(), never changed in place

    def forward(self, *arrays):  # the inputs' numpy arrays -> the output's array
        raise NotImplementedError(f"{type(self).__name__}.forward")

    def backward(self, g):
        """g = ∂L/∂output -> one gradient per input (None where `needs_input_grad` asks for
        none), in the input's shape or the output's: backward() sums it back (`unbroadcast`)."""
        raise NotImplementedError(f"{type(self).__name__}.backward")

    def save(self, **arrays):
        """Keep `arrays` for backward (not under no_grad: no backward will run)."""
        if any(self.needs_input_grad):
            self.saved = arrays


class AccumulateGrad:
    """Where the graph ends at a leaf that requires grad (PyTorch's name): its backward adds
    ∂L/∂leaf to `leaf.grad`, which sums over backward() calls until zero_grad()."""

    op = "accumulate_grad"
    inputs = ()

    def __init__(self, variable):
        self.variable = variable

    def backward(self, g):
        leaf = self.variable
        if leaf.grad is None:
            leaf.grad = np.array(g, dtype=leaf.dtype)  # a copy: g may be shared with others
        else:
            leaf.grad += g
        return ()  # nothing feeds a leaf

    # backward sums each gradient to its input node's shape and casts it to its dtype
    shape = property(lambda self: self.variable.shape)
    dtype = property(lambda self: self.variable.dtype)


def node_of(tensor):
    """The node backward reaches `tensor` through: its grad_fn, or for a leaf that requires
    grad its one AccumulateGrad, which all its uses share (their gradients sum there), or None."""
    if not tensor._requires_grad:
        return None
    return tensor.grad_fn or leaf_node(tensor, AccumulateGrad)  # made once (parity/leaves.py)


def topological_order(root):
    """`root` and the nodes it depends on, each one after every node that feeds it: depth
    first, with a stack instead of recursion (a chain of 10,000 ops)."""
    order, visited = [], set()
    stack = [(root, False)]  # (node, False) visits its inputs; (node, True) then adds it
    while stack:
        node, inputs_done = stack.pop()
        if inputs_done:
            order.append(node)
        elif node not in visited:
            visited.add(node)
            stack.append((node, True))
            stack.extend((p, False) for p in node.inputs if p is not None and p not in visited)
    return order


def backward(root, grad, step=None):
    """Propagate `grad` = ∂L/∂(root's output) to every leaf that requires grad: the chain rule.

    In reversed topological order every consumer of a node runs before it, so the gradient of
    its output is complete (summed over all paths) when the node's backward runs. `step(node,
    g)` runs it: Tensor.backward passes parity/graph.py's torch_step, node.backward(g) with
    torch's checks and hooks around it.
    """
    grads = {root: grad}  # node -> ∂L/∂(its output), summed over the paths seen so far
    for node in reversed(topological_order(root)):
        g = grads.pop(node, None)
        if g is None:  # every path from the root to this node carried no gradient
            continue
        input_grads = step(node, g) if step else node.backward(g)
        if not isinstance(input_grads, (tuple, list)):  # one input: one gradient
            input_grads = (input_grads,)
        for parent, pg in zip(node.inputs, input_grads):
            if parent is not None and pg is not None:
                pg = unbroadcast(np.asarray(pg), parent.shape).astype(parent.dtype, copy=False)
                grads[parent] = grads[parent] + pg if parent in grads else pg
