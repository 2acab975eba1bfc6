"""The engine: the graph node `Function`, `backward()` and grad mode (course notes 3.8).

An op on an input that requires grad leaves a `Function` on its output (`tensor.grad_fn`);
`backward()` visits the nodes from the output back to the leaves, applying the chain rule at
each (Baydin et al. 2018). tensor.py records the nodes; ops/ holds the ops; parity/ makes it
PyTorch-exact (version counters, hooks, the pictures' metadata), entered through
`parity.check_node` and `parity.after_node`: skip it and every gradient still reads in full.
"""
import weakref

import numpy as np

from . import parity


def unbroadcast(grad, shape):
    """Sum `grad` back to `shape`, undoing the broadcasting that the forward op did.

    The gradient of a broadcast is a sum: broadcasting copies an input along new leading axes
    and along axes of size 1, so its gradient adds up the gradients of the copies. E.g. a bias
    `[D]` added to `[B, T, D]` receives `grad.sum(axis=(0, 1))`.
    """
    if grad.shape == shape:
        return grad
    extra = grad.ndim - len(shape)
    if extra < 0:  # a backward that returned too few dims: say so, not numpy's IndexError
        raise ValueError(f"a gradient of shape {grad.shape} for an input of shape {shape}")
    stretched = tuple(extra + i for i, n in enumerate(shape)
                      if n == 1 and grad.shape[extra + i] != 1)
    # the new leading axes and the axes stretched from size 1, added up as torch adds them
    return parity.sum_as_torch(grad, tuple(range(extra)) + stretched).reshape(shape)


class Function(parity.NodeRecord):
    """One op of the graph: `forward` on numpy arrays and `backward` on their gradients.

    A subclass writes the two side by side, e.g. z = a ⊙ b:

        def forward(self, a, b):
            self.save(a=a, b=b)
            return a * b

        def backward(self, g):                    # g = ∂L/∂z
            return g * self.saved["b"], g * self.saved["a"]   # ∂L/∂a, ∂L/∂b

    `backward(g)` returns one gradient per input (None for one that needs none), in that
    input's shape (`self.input_shapes[i]`), or for an elementwise op in the broadcast output's
    shape, which the engine sums back (`unbroadcast`). Settings that are not arrays (an axis, a
    mask) go to `__init__`. A backward never writes into `g` (another input may share it). One
    instance per call: it is that call's graph node, with `inputs` (the node behind each input:
    its grad_fn, a leaf's `AccumulateGrad`, or None; torch's next_functions), the output's
    `shape` and `dtype`, `needs_input_grad` and `saved`. PyTorch splits the op from its ctx;
    here `save`/`saved` play the ctx. `parity.NodeRecord` keeps what the pictures read.
    """

    op = "function"
    inputs = input_shapes = needs_input_grad = shape = ()
    dtype = None

    def __init__(self):
        self.saved = {}

    def save(self, for_input=None, **arrays):
        """Keep `arrays` for backward if a gradient that uses them will be asked for: that of
        input `for_input` (∂L/∂a of a·b needs b, not a), or with None any; none in no_grad."""
        needed = any(self.needs_input_grad) if for_input is None \
            else self.needs_input_grad[for_input]
        if needed:
            self.saved.update(arrays)

    def run(self, arrays, needs_input_grad):
        """`forward(*arrays)`; a ValueError names the op and the input shapes."""
        self.needs_input_grad = needs_input_grad  # known first, so that forward saves less
        try:
            return np.asarray(self.forward(*arrays))
        except ValueError as error:  # e.g. numpy's broadcast error, which names no op
            raise parity.named_error(self.op, arrays, error) from None

    def __repr__(self):
        return f"<{self.op}{f' ({self.role})' if self.role else ''}>"


class AccumulateGrad:
    """Where the graph ends at a leaf that requires grad (PyTorch's name): backward adds
    dL/d(leaf) to `variable.grad`. The leaf's own `grad_fn` stays None."""

    op = "accumulate_grad"
    role = None
    inputs = ()

    def __init__(self, variable):
        self.variable = variable

    # backward sums each gradient to its input node's shape and casts it to its dtype
    shape = property(lambda self: self.variable.shape)
    dtype = property(lambda self: self.variable.dtype)

    def __repr__(self):
        return f"<accumulate_grad {self.variable.name or tuple(self.variable.shape)}>"


def node_of(tensor):
    """The node backward reaches `tensor` through: its grad_fn, its leaf's AccumulateGrad (one
    per leaf while a graph uses it, weakly held: the graph owns it), or None (no gradient)."""
    if not tensor._requires_grad:
        return None
    if tensor.grad_fn is not None:
        return tensor.grad_fn
    accumulator = tensor._accumulator() if tensor._accumulator is not None else None
    if accumulator is None:
        accumulator = AccumulateGrad(tensor)
        tensor._accumulator = weakref.ref(accumulator)
    return accumulator


def topological_order(root):
    """`root` and the nodes it depends on, each one after every node that feeds it.

    Depth-first, with a stack instead of recursion (a chain of 10,000 ops): (node, False)
    visits its inputs, (node, True) below them pops once they are all in `order`.
    """
    order, visited = [], set()
    stack = [(root, False)]
    while stack:
        node, inputs_done = stack.pop()
        if inputs_done:
            order.append(node)
            continue
        if node in visited:
            continue
        visited.add(node)
        stack.append((node, True))
        for parent in node.inputs:
            if parent is not None and parent not in visited:
                stack.append((parent, False))
    return order


def backward(tensor, grad, retain_graph=False):
    """Propagate `grad` = dL/d(tensor) to every leaf that requires grad (the chain rule).

    Reversed topological order: every consumer of a node runs before it, so the gradient
    of its output is complete (summed over all paths) when the node's backward runs.
    """
    root = node_of(tensor)
    grads = {root: grad}  # node -> dL/d(its output), summed over the paths seen so far
    for node in reversed(topological_order(root)):
        g = grads.pop(node, None)
        if g is None:
            continue
        if isinstance(node, AccumulateGrad):
            node.variable._accumulate_grad(g)
            parity.after_node(node, (), g, retain_graph)
            continue
        parity.check_node(node, g)  # freed or changed saved arrays; retain_grad()
        input_grads = node.backward(g)
        if not isinstance(input_grads, (tuple, list)):  # one input: one gradient
            input_grads = (input_grads,)
        parity.check_gradient_count(node, input_grads)  # zip below would drop missing ones
        arrived = []
        for parent, pg in zip(node.inputs, input_grads):
            if parent is None or pg is None:
                arrived.append(None)
                continue
            pg = unbroadcast(np.asarray(pg), parent.shape)  # 0-d products are numpy scalars
            if pg.dtype != parent.dtype:  # e.g. float32 @ float64: a float64 gradient
                pg = pg.astype(parent.dtype)
            arrived.append(pg)
            previous = grads.get(parent)
            grads[parent] = pg if previous is None else previous + pg
        parity.after_node(node, tuple(arrived), g, retain_graph)  # hooks; free saved arrays


# ---- grad mode -----------------------------------------------------------------------------

_grad_enabled = True


def is_grad_enabled():
    """True unless we are inside `no_grad()`."""
    return _grad_enabled


class no_grad(parity.GradModeDecorator):
    """Ops inside record no graph, as `torch.no_grad`: `with no_grad():` (nests), or a
    decorator, `@no_grad()` or `@no_grad` (parity/grad_mode.py)."""

    def __init__(self, func=None):
        self._previous = []  # a stack: one instance may be entered again while inside

    def __enter__(self):
        global _grad_enabled
        self._previous.append(_grad_enabled)
        _grad_enabled = False

    def __exit__(self, *exc_info):
        global _grad_enabled
        _grad_enabled = self._previous.pop()
