"""The `Tensor`: a numpy array plus what reverse-mode autograd needs (notes 3.8), and `apply`,
which runs one op and records it as the output's `grad_fn`.

The ops (`+`, `@`, `sum`, `softmax`, ...) are each defined once in a file of ops/, with the
Tensor method that calls them attached there by `tensor_method`. Names and dtype rules follow
PyTorch, where students go next: Python floats become float32, Python ints int64, numpy
arrays keep their dtype (parity/promotion.py); Python's protocols (==, bool, len, in-place
operators, ...) are parity/protocols.py. The deliberate differences from PyTorch are listed in
docs/conformance.md.
"""
import weakref

import numpy as np

from . import autograd, parity
from .parity.promotion import as_array


class Tensor:
    """An n-dimensional array that can record the ops applied to it and differentiate them.

    Args:
        data: a number, nested list, numpy array or Tensor (copied, as `torch.tensor`).
        requires_grad: record ops on it so that `backward()` fills `.grad`.
            Only floating-point tensors may require grad (TypeError otherwise).
        dtype: numpy dtype to cast to; default follows PyTorch's rules (see module doc).
        name: a label for error messages; pictures show the names of leaves (inputs and
            parameters, which nn names "blocks.0.attn.q_proj.weight").
    """

    # A new tensor's state, as class attributes: a tensor sets its own only when one changes,
    # so that an op output (`_make`, ~100 per GPT forward) needs no more than its data.
    grad = None
    name = None
    grad_fn = None  # the graph node (Function) that made this tensor; None for a leaf
    _accumulator = None  # a leaf's AccumulateGrad node, weakly held (autograd.py)
    _requires_grad = False
    # [n]: in-place writes so far, one list shared by the tensors that share this array (views,
    # detach), as torch's version counter; backward checks it (parity/versions.py)
    _version = None

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

    # True for `nn.Parameter`, a learnable weight: pictures draw these as the model's weights
    is_parameter = False

    @property
    def is_leaf(self):
        """True for a tensor no recorded op made (PyTorch's name): backward stops here."""
        return self.grad_fn is None

    def requires_grad_(self, flag=True):
        """Set `requires_grad` in place (a trailing _ marks in-place, as PyTorch); returns self."""
        if flag and not np.issubdtype(self.dtype, np.floating):
            raise TypeError(
                f"only floating-point tensors can require grad; got dtype {self.dtype}"
                + (f" for '{self.name}'" if self.name else "")
                + " (integer tensors hold ids, indices or targets)")
        if not flag and self.grad_fn is not None:  # it would cut the graph without a word
            raise RuntimeError("requires_grad can be changed on leaf tensors only (as torch); "
                               "for a copy off the graph use detach()")
        self._requires_grad = bool(flag)
        return self

    # `t.requires_grad = True` goes through the same checks as requires_grad_()
    requires_grad = property(lambda self: self._requires_grad, requires_grad_)

    # ---- numpy-like attributes -------------------------------------------------
    shape = property(lambda self: self.data.shape)
    ndim = property(lambda self: self.data.ndim)
    dtype = property(lambda self: self.data.dtype)
    size = property(lambda self: self.data.size)  # number of elements (torch: numel())
    T = property(lambda self: self._transpose_2d())

    def __repr__(self):
        extra = ", requires_grad=True" if self.requires_grad else ""
        if self.grad_fn is not None:
            extra += f", grad_fn={self.grad_fn!r}"
        body = np.array2string(self.data, precision=4, separator=", ", prefix="tensor(")
        return f"tensor({body}, dtype={self.dtype}{extra})"

    def numpy(self):
        """The underlying array (shared, not copied); `.detach().numpy()` in PyTorch."""
        return self.data

    def item(self):
        """The value of a one-element tensor as a Python number."""
        if self.data.size != 1:
            raise ValueError(f"item() needs a tensor with one element; got shape {self.shape}")
        return self.data.item()

    def detach(self):
        """A tensor sharing this one's data (no copy, as PyTorch), cut off from the graph."""
        out = Tensor._make(self.data)
        out._version = self._version_box()  # one array: one count of in-place writes
        return out

    def _version_box(self):
        if self._version is None:
            self._version = [0]
        return self._version

    # ---- autograd ---------------------------------------------------------------
    def backward(self, grad=None, retain_graph=False):
        """Add dL/d(leaf) to `.grad` of every leaf that requires grad (notes 3.8).

        Without `grad`, L is self (a loss). With it, `grad` stands for dL/d(self) of a loss
        L computed after self; each leaf then gets dL/d(leaf) by the chain rule.

        Args:
            grad: dL/d(self), same shape as self (cast to self's dtype); may be omitted for
                a one-element tensor (then 1).
            retain_graph: keep the saved arrays so that backward can run again.
        Raises:
            RuntimeError: self does not require grad.
            ValueError: self has more than one element and no `grad` was given,
                or `grad` has the wrong shape.
            TypeError: `grad` does not hold real numbers (strings, complex, objects).
        """
        grad = parity.loss_gradient(self, grad)  # checked: shape, dtype; 1 for a scalar
        autograd.backward(self, grad, retain_graph=retain_graph)

    def _accumulate_grad(self, g):
        if self.grad is None:
            self.grad = np.array(g, dtype=self.dtype)  # a copy: g may be shared with others
        else:
            self.grad += g

    def retain_grad(self):
        """Keep `.grad` on this intermediate tensor after backward() (a leaf keeps it anyway).

        Its node holds only a weak reference to it: retaining a gradient never keeps the
        tensor, or its data, alive.
        """
        if self.grad_fn is not None:
            self.grad_fn._retained = weakref.ref(self)
        return self

    def zero_grad(self):
        """Forget the accumulated gradient: `.grad = None` (PyTorch has zero_grad on modules
        and optimizers only, where set_to_none=True does the same; on a tensor, t.grad = None)."""
        self.grad = None


def apply(fn, *inputs):
    """Run the op `fn` (a `Function`) on Tensors: forward on their arrays, then, if an input
    requires grad (and grad is enabled), record `fn` as the output's `grad_fn`.

    Every op goes through here, as `apply(MyOp(), x)`: a fresh instance per call, because the
    instance becomes that call's graph node and holds its saved arrays. `needs_input_grad` is
    known before forward runs, so that forward saves only what backward will use.
    """
    record = autograd._grad_enabled and any(t._requires_grad for t in inputs)
    needs = tuple([t._requires_grad for t in inputs]) if record else (False,) * len(inputs)
    out = Tensor._make(fn.run(tuple([t.data for t in inputs]), needs))
    if record:
        fn.inputs = tuple([autograd.node_of(t) for t in inputs])
        fn.input_shapes = tuple([t.data.shape for t in inputs])
        out.grad_fn, out._requires_grad = fn, True
    parity.after_op(fn, inputs, out, record)  # views, the pictures' record, hooks
    return out


def tensor_method(*names):
    """Attach the decorated function to Tensor as the methods `names` (its own name if none):
    the registration beside each op in ops/. A plain attribute: no cost per call."""
    def attach(function):
        for name in names or (function.__name__,):
            setattr(Tensor, name, function)
        return function
    return attach
