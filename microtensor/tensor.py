"""The `Tensor`: a numpy array plus what reverse-mode autograd needs (notes 3.8), and `apply`,
which runs one op and records it as the output's `grad_fn`.

Each op (`+`, `@`, `sum`, `softmax`, ...) is defined once in ops/, which attaches its Tensor
method in one line (`Tensor.__mul__ = lambda a, b: apply(Mul(), a, b)`; a layer's op, such
as layer norm, a `microtensor.functional` function instead); parity/ puts
PyTorch's argument rules (surface/) and the rest of torch.Tensor (tensor_api.py) around it.
"""
import numpy as np

from . import autograd, grad_mode
from .parity import graph
from .parity.gradient_argument import check_requires_grad, loss_gradient
from .parity.promotion import as_array


class Tensor:
    """An n-dimensional array that can record the ops applied to it and differentiate them.

    Args:
        data: a number, nested list, numpy array or Tensor (copied, as `torch.tensor`).
        requires_grad: record ops on it so that `backward()` fills `.grad`.
            Only floating-point tensors may require grad (TypeError otherwise).
        dtype: numpy dtype to cast to; by default as PyTorch, Python floats become float32,
            ints int64, and numpy arrays keep their dtype (parity/promotion.py).
        name: a label that errors and pictures show ("blocks.0.attn.q_proj.weight").
    """

    # A new tensor's state, as class attributes: a tensor sets its own only when one changes
    grad = None  # a leaf's ∂L/∂self (a numpy array) after backward(); read it as a plain
    # attribute (parity/tensor_api.py makes it a property that checks what is assigned)
    name = None
    grad_fn = None  # the graph node (Function) that made this tensor; None for a leaf
    _requires_grad = False
    _accumulator = None  # a leaf's AccumulateGrad node, weakly held (parity/leaves.py)

    def __init__(self, data, requires_grad=False, dtype=None, name=None):
        self.data = as_array(data.data if isinstance(data, Tensor) else data, dtype)
        self.name = name
        if requires_grad:
            self.requires_grad_(True)

    @classmethod
    def _make(cls, data):
        """Wrap an array as a Tensor without copying it (op outputs, `detach`, constants)."""
        t = cls.__new__(cls)
        t.data = data
        return t

    def requires_grad_(self, flag=True):
        """Set `requires_grad` in place (a trailing _ marks in-place, as PyTorch); returns self.
        TypeError for a tensor that is not floating point, RuntimeError for False off a leaf."""
        check_requires_grad(self, flag)
        self._requires_grad = bool(flag)
        return self

    # `t.requires_grad = True` goes through the same checks as requires_grad_()
    requires_grad = property(lambda self: self._requires_grad, requires_grad_)

    # ---- numpy-like attributes -------------------------------------------------
    shape = property(lambda self: self.data.shape)
    ndim = property(lambda self: self.data.ndim)
    dtype = property(lambda self: self.data.dtype)
    size = property(lambda self: self.data.size)  # number of elements (torch: numel())
    T = property(lambda self: self._transpose_2d())  # 2-D: transpose(0, 1) (surface/shape.py)

    def backward(self, grad=None, retain_graph=False):
        """Add ∂L/∂leaf to `.grad` of every leaf that requires grad (notes 3.8): L is self (a
        one-element loss; `grad` defaults to 1) or a later loss, with `grad` = ∂L/∂self;
        `retain_graph` keeps the saved arrays for another backward.
        RuntimeError, ValueError, TypeError: bad calls (parity/gradient_argument.py)."""
        grad = loss_gradient(self, grad)  # checked: shape, dtype; 1 for a scalar
        # read it as autograd.backward(node_of(self), grad): graph.torch_step(retain_graph)
        # returns step(node, g), which runs node.backward(g) with torch's checks and hooks
        # around it, then frees the node's saved arrays unless retain_graph (parity/graph.py);
        # with no hooks registered, the gradients are node.backward's
        autograd.backward(autograd.node_of(self), grad, graph.torch_step(retain_graph))


def apply(fn, *inputs):
    """Run the op `fn` (a `Function`) on Tensors: forward on their arrays, then, if an input
    requires grad (and grad is enabled), record `fn` as the output's `grad_fn`. A fresh `fn`
    per call, as it becomes that call's graph node: `apply(Mul(), a, b)` (a number such as the
    0.5 of `x * 0.5` is made a Tensor first, by the operator's wrapper in parity/surface/).
    """
    # grad_mode.enabled: False inside `with microtensor.no_grad():` (grad_mode.py)
    record = grad_mode.enabled and any(t._requires_grad for t in inputs)
    # known before forward: save() keeps nothing if no gradient is needed (no_grad), and ops
    # with a costly gradient (Mul, MatMul, ...) skip an input that needs none (x * 0.5's 0.5)
    fn.needs_input_grad = tuple([t._requires_grad and record for t in inputs])
    try:
        out = Tensor._make(np.asarray(fn.forward(*[t.data for t in inputs])))
    except ValueError as error:  # numpy's (a broadcast error): name the op and the shapes
        raise graph.named_error(fn.op, [t.data for t in inputs], error) from None
    if record:
        fn.inputs = tuple([autograd.node_of(t) for t in inputs])
        fn.input_shapes = tuple([t.data.shape for t in inputs])
        fn.shape, fn.dtype = out.data.shape, out.data.dtype  # backward sums to these
        out.grad_fn, out._requires_grad = fn, True
    # bookkeeping only, to pass on a first reading (out is final): view counters, the
    # pictures' labels, hooks. It also frees saved arrays that no asked-for gradient reads
    # (save() keeps both inputs of a ⊙ b; microtensor/save_less.py drops the unneeded one)
    graph.after_op(fn, inputs, out, record)
    return out
