"""Reverse-mode automatic differentiation: the graph node (`Function`), grad mode and the backward pass.

Every op that runs while gradients are enabled leaves one `Function` node on its output:
the op's name, its input tensors, the arrays it saved for backward and the `nn.Module`
it ran in. `backward()` visits those nodes from the output back to the leaves and applies
the chain rule at each one (course notes 3.8; Baydin et al. 2018, "Automatic
Differentiation in Machine Learning: a Survey").
"""
import contextlib

import numpy as np

_grad_enabled = True
_scope = ()  # ((path, class name), ...) of the nn.Module calls we are inside, innermost last
_profiler = None  # the active microtensor.profile() record, if any


@contextlib.contextmanager
def no_grad():
    """Context manager (also a decorator): ops inside it record no graph, as `torch.no_grad`."""
    global _grad_enabled
    previous, _grad_enabled = _grad_enabled, False
    try:
        yield
    finally:
        _grad_enabled = previous


def is_grad_enabled():
    """True unless we are inside `no_grad()`."""
    return _grad_enabled


@contextlib.contextmanager
def module_scope(path, kind=""):
    """Tag every op created inside with the module `path` (e.g. "blocks.0.attn") of type `kind`.

    `nn.Module.__call__` opens one around `forward`, so each graph node knows which layer
    made it: the pictures group nodes by it.
    """
    global _scope
    outer = _scope
    _scope = outer + ((path, kind),)
    try:
        yield
    finally:
        _scope = outer


def inside_module():
    """True while some nn.Module's forward is running."""
    return bool(_scope)


def current_scope():
    """((path, class name), ...) of the modules being called, outermost first."""
    return _scope


def unbroadcast(grad, shape):
    """Sum `grad` back to `shape`, undoing the broadcasting that the forward op did.

    Broadcasting copies an input along new leading axes and along axes of size 1, so the
    input's gradient is the sum over those copies. E.g. a bias `[D]` added to `[B, T, D]`
    receives `grad.sum(axis=(0, 1))`.
    """
    if grad.shape == shape:
        return grad
    extra = grad.ndim - len(shape)
    if extra > 0:
        grad = grad.sum(axis=tuple(range(extra)))
    stretched = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    if stretched:
        grad = grad.sum(axis=stretched, keepdims=True)
    return grad.reshape(shape)


class Function:
    """One op of the graph: `forward` on numpy arrays and `backward` on their gradients.

    A subclass writes the two side by side. `forward(*arrays)` returns the output array and
    keeps what backward needs with `self.save(name=array)`; `backward(grad)` receives
    dL/d(output) and returns one gradient per input (None for an input that needs none),
    in that input's broadcast shape: the engine un-broadcasts it.
    Non-tensor settings (an axis, a shape) go to `__init__`.

    Rules for the arrays: `needs_input_grad` is known before forward runs, so forward saves
    only what the needed gradients use (∂L/∂a of a·b needs b, not a). A backward never
    writes into the `grad` it receives: it may be shared with another input, or be a
    read-only broadcast view; the engine copies it before keeping it in a leaf's `.grad`.
    """

    op = "function"  # the name drawn in graph pictures

    def __init__(self):
        self.inputs = ()
        self.saved = {}
        self.scope = ()  # ((module path, class name), ...) it was created in, outermost first
        self.needs_input_grad = ()
        self.grad_norm = None  # |dL/d(output)|, noted during backward for the pictures
        self.input_grad_norms = ()  # |dL/d(input_i)| arriving at each input

    @property
    def module(self):
        """Dotted path of the innermost module this op ran in ("" outside any module)."""
        return self.scope[-1][0] if self.scope else ""

    def save(self, **arrays):
        """Keep arrays for backward; the pictures list their names and shapes."""
        self.saved.update(arrays)

    def saved_shapes(self):
        """{name: shape} of what was saved for backward (still known after it is freed)."""
        if self.saved:
            self._saved_shapes = {k: np.shape(v) for k, v in self.saved.items()}
        return getattr(self, "_saved_shapes", {})

    def release(self):
        """Free the saved arrays once backward has used them (the graph's shape stays)."""
        self.saved_shapes()
        self.saved = {}

    def __call__(self, *inputs):
        """Run forward on the inputs' data and, if any input requires grad, record this node."""
        from .tensor import Tensor  # late import: tensor.py imports this module

        record = _grad_enabled and any(t.requires_grad for t in inputs)
        # set before forward, so that forward can skip saving what no gradient will need
        self.needs_input_grad = tuple(record and t.requires_grad for t in inputs)
        try:
            data = np.asarray(self.forward(*(t.data for t in inputs)))
        except ValueError as error:  # e.g. numpy's broadcast error: name the op and shapes
            message = str(error)
            if not message.startswith(self.op):  # the op's own checks name it already
                shapes = ", ".join(str(t.shape) for t in inputs)
                message = f"{self.op}: {message} (input shapes: {shapes})"
            raise ValueError(message) from None
        out = Tensor._make(data)
        if _profiler is not None:
            _profiler.record(self, inputs, data)
        if record:
            self.inputs = inputs
            self.scope = _scope
            out.requires_grad = True
            out._node = self
        return out



# Noting |grad| at every edge costs one dot product per edge; the pictures need it, a
# training loop does not, so trainers may switch it off (see `record_grad_norms`).
_record_grad_norms = True


@contextlib.contextmanager
def record_grad_norms(enabled):
    """Turn the gradient-norm bookkeeping used by the graph pictures on or off."""
    global _record_grad_norms
    previous, _record_grad_norms = _record_grad_norms, enabled
    try:
        yield
    finally:
        _record_grad_norms = previous


def _norm(a):
    flat = a.reshape(-1)
    return float(np.sqrt(np.dot(flat, flat)))


def topological_order(root):
    """Tensors that `root` depends on (through grad-requiring paths), inputs before outputs.

    Iterative depth-first search, so a chain of 10,000 ops needs no recursion.
    """
    order, visited = [], set()
    stack = [(root, False)]
    while stack:
        tensor, inputs_done = stack.pop()
        if inputs_done:
            order.append(tensor)
            continue
        if id(tensor) in visited:
            continue
        visited.add(id(tensor))
        stack.append((tensor, True))
        if tensor._node is not None:
            for parent in tensor._node.inputs:
                if parent.requires_grad and id(parent) not in visited:
                    stack.append((parent, False))
    return order


def backward(root, grad, retain_graph=False):
    """Propagate `grad` = dL/d(root) to every leaf that requires grad (chain rule, notes 3.8).

    Leaves accumulate into `.grad`; intermediates keep theirs only after `retain_grad()`.
    Gradients reaching one tensor along several paths are summed. Unless `retain_graph`,
    each node's saved arrays are freed as soon as it has been used.
    """
    grads = {id(root): grad}
    for tensor in reversed(topological_order(root)):
        g = grads.pop(id(tensor), None)
        if g is None:
            continue
        node = tensor._node
        if node is None or tensor._retains_grad:
            tensor._accumulate_grad(g)
        if node is None:
            continue
        # Only ops that saved arrays can tell they were freed; ops that save nothing (add,
        # sum) can be run again, as in PyTorch.
        if not node.saved and node.inputs and getattr(node, "_saved_shapes", None):
            raise RuntimeError(
                f"backward through '{node.op}' a second time: its saved arrays were freed "
                "by the first backward(); call backward(retain_graph=True) the first time")
        input_grads = node.backward(g)
        if not isinstance(input_grads, tuple):
            input_grads = (input_grads,)
        norms = []
        for parent, pg in zip(node.inputs, input_grads):
            if pg is None or not parent.requires_grad:
                norms.append(None)
                continue
            pg = unbroadcast(pg, parent.shape)
            if pg.dtype != parent.dtype:
                pg = pg.astype(parent.dtype)
            norms.append(_norm(pg) if _record_grad_norms else None)
            previous = grads.get(id(parent))
            grads[id(parent)] = pg if previous is None else previous + pg
        if _record_grad_norms:
            node.grad_norm = _norm(g)
            node.input_grad_norms = tuple(norms)
        if not retain_graph:
            node.release()
