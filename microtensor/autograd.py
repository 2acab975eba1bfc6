"""Reverse-mode automatic differentiation: the graph node (`Function`), grad mode and the backward
pass.

Every op that runs while gradients are enabled, on an input that requires grad, leaves one
`Function` node on its output tensor as `tensor.grad_fn` (PyTorch's name). The node knows
its op, the node behind each input, the arrays it saved for backward and the module it ran
in; it does not hold the tensors themselves, so once backward has freed the saved arrays the
graph keeps no activations (nor does attention: its weights are kept only when asked for,
`nn.keep_attention`). `backward()` visits the nodes from the output back to the
leaves and applies the chain rule at each one (course notes 3.8; Baydin et al. 2018,
"Automatic Differentiation in Machine Learning: a Survey"; PyTorch's autograd design).
"""
import functools
import inspect
import weakref

import numpy as np

from . import hooks
from .scope import current_scope

_grad_enabled = True


class no_grad:
    """Ops inside record no graph, as `torch.no_grad`: a context manager (nests), and a
    decorator written `@no_grad()` or `@no_grad` (torch takes both)."""

    def __new__(cls, func=None):
        self = super().__new__(cls)
        self._previous = []  # a stack: one instance may be entered again while inside
        if func is None:
            return self
        if not callable(func):
            raise TypeError(f"no_grad takes no argument, or the function it decorates; got "
                            f"{type(func).__name__}")
        return self(func)  # bare @no_grad

    def __enter__(self):
        global _grad_enabled
        self._previous.append(_grad_enabled)
        _grad_enabled = False

    def __exit__(self, *exc_info):
        global _grad_enabled
        _grad_enabled = self._previous.pop()

    def __call__(self, func):
        if inspect.isgeneratorfunction(func):
            return _generator_without_grad(func)

        @functools.wraps(func)
        def without_grad(*args, **kwargs):
            with no_grad():
                return func(*args, **kwargs)
        return without_grad


def _generator_without_grad(func):
    """A generator function's body runs only while the caller asks for the next item, so each
    step runs under no_grad and the caller's code between items as before (as torch)."""
    @functools.wraps(func)
    def steps(*args, **kwargs):
        gen = func(*args, **kwargs)
        try:
            with no_grad():
                item = next(gen)
            while True:
                try:
                    sent = yield item
                except GeneratorExit:
                    gen.close()
                    raise
                except BaseException as error:  # thrown in by the caller: pass it on
                    with no_grad():
                        item = gen.throw(error)
                else:
                    with no_grad():
                        item = gen.send(sent)
        except StopIteration as stop:
            return stop.value
    return steps


def is_grad_enabled():
    """True unless we are inside `no_grad()`."""
    return _grad_enabled


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
    keeps what backward needs with `self.save(...)`; `backward(grad)` receives dL/d(output)
    and returns one gradient per input (None for one that needs none), in the broadcast
    (output) shape: the engine sums it back to the input's shape. Settings that are not
    arrays of the graph (an axis, a mask, ids) go to `__init__`. Backward reads what it
    needs from `self.saved`, `self.needs_input_grad` and `self.input_shapes`. A backward
    never writes into the `grad` it receives: it may be shared with another input. A subclass
    with its own `__init__` calls `super().__init__()` first.

    PyTorch splits this in two: `torch.autograd.Function` holds a static forward/backward
    that keep arrays with `ctx.save_for_backward` (read back as `ctx.saved_tensors`), and
    the graph node is a separate object (`y.grad_fn`, e.g. `MulBackward0`). Here one
    instance per op call is both: `save`/`saved` play the part of the ctx.

    What a student can read off a node (`y.grad_fn`), as in PyTorch:
        op: the op's name ("matmul"), drawn in the pictures.
        inputs: one entry per input: the `Function` that made it, the `AccumulateGrad`
            of a leaf that requires grad, or None for a constant (no gradient goes there).
            PyTorch calls this `next_functions` and pairs each entry with an output index.
        input_shapes: the shape of each input; constants: {input index: value} of each
            one-element constant input (the 1/√d_k of attention's scaling);
            constant_names: {input index: name} of each named constant input (a Tensor
            made with name=, such as a fixed position table), which the pictures print.
        saved: {name: array} kept for backward; empty once backward has freed it
            (`saved_shapes()` still tells what it was).
        scope, module: the nn.Module calls it ran inside, ((path, class), ...), and the
            innermost path ("blocks.0.attn"; "" outside any module).
        role: None, or a step's name, set by the code that computes it
            (attention's "QKᵀ", "S", "A", "Z"; a block's "residual" adds).
        shape, dtype: of the output; needs_input_grad: which inputs get a gradient.
    """

    op = "function"
    role = None
    _retained = None  # weakref to the output tensor, set by `Tensor.retain_grad()`
    # A node's starting values, as class attributes: `run` and `connect` replace them (never
    # change them in place), and every op call makes a node, ~100 per GPT forward.
    inputs = input_shapes = scope = needs_input_grad = shape = ()
    dtype = None
    _saved_shapes = None

    def __init__(self):
        self.saved, self.constants, self.constant_names = {}, {}, {}  # dicts: one per node

    @property
    def module(self):
        return self.scope[-1][0] if self.scope else ""

    def save(self, for_input=None, **arrays):
        """Keep `arrays` for backward, but only if a gradient that uses them will be asked for.

        for_input=i: only ∂L/∂(input i) uses them (∂L/∂a of a·b needs b, not a);
        None: every input's gradient does. So nothing is saved under `no_grad()`, or
        when no input requires grad: the one rule that keeps forward-only runs lean.
        """
        if for_input is None:
            needed = any(self.needs_input_grad)
        else:
            needed = self.needs_input_grad[for_input]
        if needed:
            self.saved.update(arrays)

    def saved_shapes(self):
        """{name: shape} of what was saved for backward (still known after it is freed)."""
        if self.saved:
            return {k: np.shape(v) for k, v in self.saved.items()}
        return self._saved_shapes or {}

    def release(self):
        """Free the saved arrays once backward has used them (the graph's shape stays)."""
        if self.saved:
            self._saved_shapes = self.saved_shapes()
            self.saved = {}

    def run(self, arrays, needs_input_grad):
        """`forward(*arrays)`, with the op's name and the input shapes in any ValueError."""
        self.needs_input_grad = needs_input_grad  # known first, so that forward saves less
        try:
            return np.asarray(self.forward(*arrays))
        except ValueError as error:  # e.g. numpy's broadcast error: name the op and shapes
            message = str(error)
            if not message.startswith(self.op):  # the op's own checks name it already
                shapes = ", ".join(str(a.shape) for a in arrays)
                message = f"{self.op}: {message} (input shapes: {shapes})"
            raise ValueError(message) from None

    def describe(self, output):
        """Note the module scope the op ran in and its output's shape and dtype, for the graph
        and the hooks (a node that neither keeps is never described: no_grad skips this)."""
        self.scope, self.shape, self.dtype = current_scope(), output.shape, output.dtype

    def connect(self, inputs):
        """Link this node to the nodes behind its input tensors (it keeps no tensor)."""
        self.inputs = tuple([_node_of(t) for t in inputs])  # lists: cheaper than generators
        self.input_shapes = tuple([t.data.shape for t in inputs])
        self.constants = {i: t.data.item() for i, t in enumerate(inputs)
                          if not t.requires_grad and t.data.size == 1}
        self.constant_names = {i: t.name for i, (t, node) in enumerate(zip(inputs, self.inputs))
                               if node is None and t.name}

    def watch(self, tensors):
        """Note the version of each tensor whose array this node saved, so that backward can
        refuse to run on values changed in place since (torch's version counter check)."""
        arrays = list(self.saved.values())
        self._watched = [(t._version_box(), t._version_box()[0]) for t in tensors
                         if any(np.may_share_memory(a, t.data) for a in arrays)]

    _watched = ()

    def check_versions(self):
        for box, version in self._watched:
            if box[0] != version:
                raise RuntimeError(
                    f"backward through '{self.op}': a tensor it saved for backward was "
                    "modified in place since (x += ..., x[i] = ...); write x = x + ... "
                    "instead, or run backward before the change (as torch)")

    def __repr__(self):
        return f"<{self.op}{f' ({self.role})' if self.role else ''}>"


class AccumulateGrad:
    """Where the graph ends at a leaf that requires grad: backward adds dL/d(leaf) to
    `variable.grad`.

    PyTorch's name. `variable` is the leaf Tensor (a parameter, or an input made with
    requires_grad=True); a leaf's own `grad_fn` stays None.
    """

    op = "accumulate_grad"
    role = None
    inputs = ()

    def __init__(self, variable):
        self.variable = variable

    shape = property(lambda self: self.variable.shape)
    dtype = property(lambda self: self.variable.dtype)

    def __repr__(self):
        return f"<accumulate_grad {self.variable.name or tuple(self.variable.shape)}>"


def _node_of(tensor):
    """The node that backward reaches `tensor` through: its grad_fn, its leaf's
    AccumulateGrad (one per leaf while a graph uses it), or None if it needs no gradient."""
    if not tensor.requires_grad:
        return None
    if tensor.grad_fn is not None:
        return tensor.grad_fn
    accumulator = tensor._accumulator() if tensor._accumulator is not None else None
    if accumulator is None:
        accumulator = AccumulateGrad(tensor)
        tensor._accumulator = weakref.ref(accumulator)  # weak: the graph owns it
    return accumulator


def topological_order(root):
    """`root` and the nodes it depends on, each one after every node that feeds it (inputs
    first), so that reversed, each node comes after every node that consumes its output.

    Iterative depth-first search, so a chain of 10,000 ops needs no recursion. Each node is
    pushed twice: (node, False) to visit its inputs, and below them (node, True), which pops
    only once all of them are in `order`; then the node itself is appended.
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
    """Propagate `grad` = dL/d(tensor) to every leaf that requires grad (chain rule, notes 3.8).

    Leaves accumulate into `.grad`; intermediates keep theirs only after `retain_grad()`.
    Gradients reaching one node along several paths are summed. Unless `retain_graph`,
    each node's saved arrays are freed as soon as it has been used.
    """
    root = _node_of(tensor)
    grads = {root: grad}  # node -> dL/d(its output), summed over the paths seen so far
    observed = bool(hooks._backward_hooks)
    # output first: every consumer of a node runs before it, so its gradient is complete
    for node in reversed(topological_order(root)):
        g = grads.pop(node, None)
        if g is None:
            continue
        if isinstance(node, AccumulateGrad):
            node.variable._accumulate_grad(g)
            if observed:
                hooks.run_backward_hooks(node, (), g)
            continue
        retained = node._retained() if node._retained is not None else None
        if retained is not None:
            retained._accumulate_grad(g)
        if node._saved_shapes is not None and not node.saved:
            raise RuntimeError(
                f"backward through '{node.op}' a second time: its saved arrays were freed "
                "by the first backward(); call backward(retain_graph=True) the first time")
        node.check_versions()
        input_grads = node.backward(g)
        if not isinstance(input_grads, (tuple, list)):
            input_grads = (input_grads,)
        if len(input_grads) != len(node.inputs):  # zip would drop the missing ones silently
            raise RuntimeError(f"'{node.op}'.backward returned {len(input_grads)} gradients; "
                               f"expected {len(node.inputs)}, one per input (None for none)")
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
        if observed:
            hooks.run_backward_hooks(node, tuple(arrived), g)
        if not retain_graph:
            node.release()
