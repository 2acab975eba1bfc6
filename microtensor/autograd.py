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

    Broadcasting copies an input along new leading axes and along axes of size 1, so the
    gradient adds up the copies' gradients. E.g. grad (2, 3, 4) to (3, 1): axis 0 is new, axis
    2 was stretched from 1; the sum over (0, 2) has shape (3,), reshaped to (3, 1).
    """
    if grad.shape == shape:
        return grad
    new = grad.ndim - len(shape)  # axes 0 .. new − 1 are new (leading); shape's axis i is
    # grad's axis new + i
    stretched = [new + i for i, n in enumerate(shape) if n == 1 and grad.shape[new + i] != 1]
    # = grad.sum(axes), rounded as torch rounds (parity/summation.py)
    return sum_as_torch(grad, (*range(new), *stretched)).reshape(shape)


class Function:
    """One op of the graph: forward on the inputs' numpy arrays, backward from g = ∂L/∂output
    to one gradient per input (it may give None where `needs_input_grad` says none is needed),
    in the input's shape or a broadcast of it (backward() sums it back: `unbroadcast`). E.g. Mul
    (ops/arithmetic.py's, simplified):

        class Mul(Function):  # z = a ⊙ b;   ∂L/∂a = g ⊙ b,   ∂L/∂b = g ⊙ a
            def forward(self, a, b):
                self.save(a=a, b=b)
                return a * b
            def backward(self, g):
                return g * self.saved["b"], g * self.saved["a"]

    One instance per call is that call's node; apply (tensor.py) sets `needs_input_grad`
    before forward, then, when it records the op, `inputs` (the node behind each input),
    `input_shapes`, and its output's `shape` and `dtype`."""

    op = "function"  # the name errors and pictures give the op
    inputs = input_shapes = needs_input_grad = ()
    saved = {}  # a default nothing writes into: save() gives each node its own dict

    def save(self, **arrays):
        """Keep `arrays` for backward, unless no input needs a gradient (no_grad, or none
        requires grad): then no backward will read them."""
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

    # backward() (below) sums each gradient to its input node's shape and casts it to its
    # dtype: a leaf's node answers with the leaf's
    shape = property(lambda self: self.variable.shape)
    dtype = property(lambda self: self.variable.dtype)


def node_of(tensor):
    """The node backward reaches `tensor` through: its grad_fn, or for a leaf that requires
    grad its one AccumulateGrad, which all its uses share (backward() sums their gradients
    first, then runs it once), or None.
    The node is made at the leaf's first use in a graph and shared while a graph holds it
    (the leaf keeps only a weak reference to it: parity/leaves.py); on a first reading, take
    it as the leaf's own node."""
    if not tensor._requires_grad:
        return None
    return tensor.grad_fn or leaf_node(tensor, AccumulateGrad)  # made once (parity/leaves.py)


def topological_order(root):
    """`root` and the nodes it depends on, each one after every node that feeds it: the
    post-order of a depth-first search, with a stack instead of recursion (a chain of 10,000
    ops). E.g. d = b + c, with b and c both from a; x✓ is an (x, True) entry, pushed below
    x's inputs, so it pops only after they are all in `order`; the stack's top on the right:

        pop d:   push d✓ b c     stack [d✓ b c]
        pop c:   push c✓ a       stack [d✓ b c✓ a]
        pop a:   push a✓         stack [d✓ b c✓ a✓]
        pop a✓, c✓               order [a, c]
        pop b:   push b✓ (a seen) stack [d✓ b✓]
        pop b✓, d✓               order [a, c, b, d]
    """
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
    `root` is a node: the loss tensor's (Tensor.backward passes `node_of(loss)`).

    In reversed topological order every consumer of a node runs before it, so the gradient of
    its output is complete (summed over all paths) when the node's backward runs. `step(node,
    g)`, if given, runs it (Tensor.backward's: torch's checks and hooks around it); on a first
    reading take `step` as `node.backward`.

    E.g. the README's L = (x * w).sum(), x [2, 3], w [3]: the order is [w's AccumulateGrad,
    x's, Mul, Sum]; reversed, Sum's backward gives g = 1 broadcast to [2, 3], Mul's gives
    g ⊙ w for x and g ⊙ x for w, which unbroadcast sums over the rows to [3]; each
    AccumulateGrad then adds its gradient to .grad (w.grad = x's column sums).
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
                # asarray: an op may return a number; astype: the gradient in its input's dtype,
                # whatever the op's arithmetic widened it to
                pg = unbroadcast(np.asarray(pg), parent.shape).astype(parent.dtype, copy=False)
                # summed over the paths into a new array, not +=: pg may be shared (Add
                # returns the same g for both inputs)
                grads[parent] = grads[parent] + pg if parent in grads else pg
