"""The `Tensor`: a numpy array plus the bookkeeping reverse-mode autograd needs (notes 3.8).

Every method that computes (`+`, `@`, `sum`, `softmax`, ...) builds one op from `ops/` and
runs it through `apply` (at the end of this file): the op's forward works on numpy arrays,
and when an input requires grad the op becomes the output's `grad_fn`, the graph node that
`backward()` (autograd.py) later visits. Tensor turns scalars, masks and indices into
arrays first, so the ops never see a Tensor.

Names and dtype rules follow PyTorch, where students go next: Python floats become
float32, Python ints int64, numpy arrays keep their dtype (the rules: promotion.py).
Deliberate differences:

    here                         PyTorch
    sum(axis=, keepdims=)        sum(dim=, keepdim=)      (numpy's names; dim=, keepdim= work)
    max(axis=) -> values         amax(dim)                (max(dim=) is torch's: values, indices)
    view == reshape              view needs .contiguous() after transpose (no strides here)
    t.size: element count (int)  t.size() is the shape; t.numel() counts the elements
    float32 @ float64            float64 here (numpy's rule); RuntimeError there (one dtype)
    nn.Linear.weight [in, out]   [out, in]                (the course's X W_Q)
    softmax of an all −inf row   NaN there, zeros here    (a fully blocked query, notes 3.3)
    int_tensor + np.True_        int64 here, float32 there (a numpy bool counts as a bool here)
    t[::-1] (a negative step)    numpy's flip here; ValueError there
    x += y, x[i] = y             refused here on a tensor that requires grad (outside
                                 no_grad); recorded there for a non-leaf. Both write into the
                                 one array (views, numpy(), detach() see it), and backward
                                 refuses a graph that saved it (version counters)
    //  %  <<  >>  number ** t   TypeError here (not ops of this engine)
Python's protocols (==, bool, len, iteration, in, hash, format, ...): protocols.py.
"""
import collections
import numbers
import weakref

import numpy as np

from . import autograd, hooks
from .ops import arithmetic, masking, matmul, pointwise, reduction, shape, softmax
from .promotion import as_array, category, result_type
from .protocols import TensorProtocols


class Tensor(TensorProtocols):
    """An n-dimensional array that can record the ops applied to it and differentiate them.

    Args:
        data: a number, nested list, numpy array or Tensor (copied, as `torch.tensor`).
        requires_grad: record ops on it so that `backward()` fills `.grad`.
            Only floating-point tensors may require grad (TypeError otherwise).
        dtype: numpy dtype to cast to; default follows PyTorch's rules (see module doc).
        name: a label for error messages; pictures show the names of leaves (inputs and
            parameters, which nn names "blocks.0.attn.q_proj.weight").
    """

    __array_ufunc__ = None  # makes `ndarray + Tensor` call Tensor.__radd__, not numpy's add

    def __array__(self, dtype=None, copy=None):
        """The data, no graph: np.array(tensor) copies, np.asarray(tensor) shares (as torch)."""
        if copy is False and dtype is not None and np.dtype(dtype) != self.dtype:
            raise ValueError(f"np.asarray(tensor, copy=False): a {self.dtype} tensor cannot "
                             f"become {np.dtype(dtype)} without a copy")
        data = self.data if dtype is None else self.data.astype(dtype, copy=False)
        return data.copy() if copy and data is self.data else data

    # A new tensor's state, as class attributes: a tensor sets its own only when one changes,
    # so that an op output (`_make`, ~100 per GPT forward) needs no more than its data.
    grad = None
    name = None
    grad_fn = None  # the graph node (Function) that made this tensor; None for a leaf
    _accumulator = None  # a leaf's AccumulateGrad node, weakly held (autograd.py)
    _requires_grad = False
    # [n]: in-place writes so far, one list shared by the tensors that share this array (views,
    # detach), as torch's version counter; backward checks it (autograd.py)
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
        if not self.requires_grad:
            raise RuntimeError(
                "backward() on a tensor that does not require grad: no input of the ops "
                "that made it had requires_grad=True (or it was made under no_grad())")
        if grad is None:
            if self.data.size != 1:
                raise ValueError(
                    f"backward() without `grad` needs a scalar (one-element) tensor; got "
                    f"shape {self.shape}: pass grad= an array of that shape")
            grad = np.ones_like(self.data)
        grad = np.asarray(grad.data if isinstance(grad, Tensor) else grad)
        if grad.dtype.kind not in "biuf":  # numpy's cast would fail with a message naming no one
            raise TypeError(f"backward(grad): grad must hold real numbers; got dtype {grad.dtype}")
        grad = grad.astype(self.dtype, copy=False)
        if grad.shape != self.shape:
            raise ValueError(f"backward(grad): grad has shape {grad.shape}; expected {self.shape}")
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

    # ---- arithmetic (numpy broadcasting; scalars and arrays on either side) ----------
    def _lift(self, other, dtype=None):
        """`other` as a Tensor of `dtype` (a constant is cast; one that requires grad is not)."""
        if not isinstance(other, Tensor):
            if isinstance(other, (numbers.Number, np.generic)) and dtype is not None:
                return Tensor._make(np.asarray(other, dtype=dtype))  # to dtype at once: no rounding
            # a copy, as Tensor(array): an op may save it for backward, and the caller may
            # refill the array before then (one buffer over micro-batches)
            other = Tensor._make(np.array(other) if isinstance(other, np.ndarray)
                                 else as_array(other, None))
        if dtype is None or other.dtype == dtype:
            return other
        if other.requires_grad:  # cast on the graph, so that its gradient still reaches it
            return apply(pointwise.Cast(dtype), other)
        return Tensor._make(other.data.astype(dtype))

    def _binary(self, op, a, b, true_divide=False):
        """a `op` b, where self is a or b; the other one may be a Tensor, array or scalar."""
        other = b if a is self else a
        a_data = a.data if isinstance(a, Tensor) else a
        b_data = b.data if isinstance(b, Tensor) else b
        # the two common cases first, that result_type would only confirm: the same dtype, or a
        # Python number with a floating tensor (a scalar never widens it: float32 * 0.5 is float32)
        if (other.dtype == self.dtype if isinstance(other, Tensor)
                else isinstance(other, (int, float)) and self.dtype.kind == "f"):
            dtype = self.dtype
        else:
            dtype = result_type(a_data, b_data)
        if op is arithmetic.Sub and np.bool_ in (result_type(a_data), result_type(b_data)):
            raise TypeError("-: subtraction with a bool operand is not supported (as in "
                            "PyTorch); cast the mask first, e.g. mask.data.astype(np.int64)")
        if true_divide and category(dtype) < 2:  # int / int is float32 in PyTorch, not float64
            dtype = np.dtype(np.float32)
        return apply(op(), self._lift(a, dtype), self._lift(b, dtype))

    def __add__(self, other):
        return self._binary(arithmetic.Add, self, other)

    def __radd__(self, other):
        return self._binary(arithmetic.Add, other, self)

    def __sub__(self, other):
        return self._binary(arithmetic.Sub, self, other)

    def __rsub__(self, other):
        return self._binary(arithmetic.Sub, other, self)

    def __mul__(self, other):
        return self._binary(arithmetic.Mul, self, other)

    def __rmul__(self, other):
        return self._binary(arithmetic.Mul, other, self)

    def __truediv__(self, other):
        return self._binary(arithmetic.Div, self, other, true_divide=True)

    def __rtruediv__(self, other):
        return self._binary(arithmetic.Div, other, self, true_divide=True)

    def __neg__(self):
        if self.dtype == np.bool_:
            raise TypeError("-t on a bool tensor is not supported (as torch); use ~t to invert")
        return apply(arithmetic.Neg(), self)

    def __pos__(self):
        if self.dtype == np.bool_:
            raise TypeError("+t on a bool tensor is not supported (as torch)")
        return self

    def __abs__(self):
        if self.dtype == np.bool_:
            raise TypeError("abs() of a bool tensor is not supported (as torch)")
        return apply(pointwise.Abs(), self)

    abs = __abs__

    def __pow__(self, exponent):
        if not isinstance(exponent, numbers.Number):
            raise TypeError(f"** takes a scalar exponent; got {type(exponent).__name__}")
        base = self._lift(self, result_type(self.data, exponent))  # int ** 0.5 is float32, as torch
        if category(base.dtype) < 2 and exponent < 0:
            raise ValueError(f"** {exponent}: integers to negative integer powers are not "
                             "allowed (as torch); use a float exponent")
        # a Python number, so that numpy does not widen: float32 ** np.float64(2) is float32
        exponent = exponent.item() if isinstance(exponent, np.generic) else exponent
        return apply(arithmetic.Pow(exponent), base)

    def __matmul__(self, other):
        return _matmul(self, self._lift(other))

    def __rmatmul__(self, other):
        return _matmul(self._lift(other), self)

    # ---- pointwise math ---------------------------------------------------------------
    def _floating(self):
        """self, or for a bool or integer tensor its float32 copy: exp(int) is float32 in
        PyTorch (numpy would give float64)."""
        return self if category(self.dtype) == 2 else Tensor._make(self.data.astype(np.float32))

    def exp(self):
        return apply(pointwise.Exp(), self._floating())

    def log(self):
        return apply(pointwise.Log(), self._floating())

    def sqrt(self):
        return apply(pointwise.Sqrt(), self._floating())

    def tanh(self):
        return apply(pointwise.Tanh(), self._floating())

    def relu(self):
        if self.dtype == np.bool_:
            raise TypeError("relu of a bool tensor is not supported (as torch)")
        return apply(pointwise.ReLU(), self)

    # ---- reductions (axis: None, an int or a tuple; torch's dim= and keepdim= work too) -----
    def sum(self, axis=None, keepdims=False, *, dim=None, keepdim=None):
        return apply(reduction.Sum(*_axis_args(axis, keepdims, dim, keepdim)), self)

    def mean(self, axis=None, keepdims=False, *, dim=None, keepdim=None):
        return apply(reduction.Mean(*_axis_args(axis, keepdims, dim, keepdim)), self)

    def max(self, axis=None, keepdims=False, *, dim=None, keepdim=None):
        """max(axis=) (numpy's name): the largest values, torch's amax (ties share the
        gradient). max(dim=) (torch's name): torch's named tuple (values, indices) of
        `torch.max(x, dim)`, so that torch code `v, i = x.max(dim=1)` means the same here."""
        if dim is not None:
            if axis is not None:
                raise TypeError(f"give axis= or dim=, not both; got axis={axis!r}, dim={dim!r}")
            return _max_with_indices(self, dim, keepdims if keepdim is None else keepdim)
        return apply(reduction.Max(*_axis_args(axis, keepdims, dim, keepdim)), self)

    # ---- shapes -----------------------------------------------------------------------
    def reshape(self, *new_shape):
        # not `*shape`: that name would hide the `ops.shape` module used below
        if not new_shape:
            raise TypeError("reshape() needs a shape, e.g. reshape(-1) or reshape(())")
        if len(new_shape) == 1 and isinstance(new_shape[0], (tuple, list, np.ndarray)):
            new_shape = tuple(new_shape[0])
        return apply(shape.Reshape(new_shape), self)

    def view(self, *shape):
        return self.reshape(*shape)

    def transpose(self, dim0, dim1):
        n = self.data.ndim
        if n == 0 and dim0 in (0, -1) and dim1 in (0, -1):  # a 0-d tensor has dim 0, as torch
            return self.reshape(())
        axes = list(range(n))
        if not (-n <= dim0 < n and -n <= dim1 < n):
            raise IndexError(f"transpose: dims ({dim0}, {dim1}) are out of range for a tensor "
                             f"of shape {self.shape}")
        axes[dim0], axes[dim1] = axes[dim1], axes[dim0]
        return apply(shape.Permute(axes, op="transpose"), self)

    def permute(self, *dims):
        if not dims:
            raise TypeError("permute() needs dims, e.g. permute(1, 0)")
        if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
            dims = tuple(dims[0])
        return apply(shape.Permute(dims), self)

    def _transpose_2d(self):
        if self.ndim != 2:
            raise ValueError(f".T is for 2-D tensors; got shape {self.shape}: use transpose()")
        return self.transpose(0, 1)

    def __getitem__(self, index):
        return apply(shape.GetItem(self._index(index)), self)

    @staticmethod
    def _index(index):
        """index with each Tensor in it (ids, a bool mask) as its array, for numpy.

        A 0-d integer Tensor is an int. A list holding sequences, slices, None or ... is a
        tuple of indices, as in PyTorch
        (t[[[0, 1], [1, 0]]] is t[[0, 1], [1, 0]]); numpy would read it as one array index.
        """
        def plain(p):
            if isinstance(p, Tensor):  # a 0-d integer tensor is an int, as torch's: numpy
                # would read a 0-d array as an array index and move its dims first
                return int(p.data) if p.ndim == 0 and category(p.dtype) == 1 else p.data.copy()
            return p.copy() if isinstance(p, np.ndarray) else p  # kept for backward: a copy
        if isinstance(index, list) and any(
                isinstance(p, (list, tuple, slice, Tensor, np.ndarray)) or p is None
                or p is Ellipsis for p in index):
            index = tuple(index)
        # a tuple index stays a tuple and a single one stays single, as the caller wrote it
        return tuple(map(plain, index)) if isinstance(index, tuple) else plain(index)

    # ---- attention building blocks ----------------------------------------------------
    def masked_fill(self, mask, value):
        """Replace entries where `mask` is True (blocked) by `value`; mask broadcasts.

        mask: a boolean Tensor or numpy array; TypeError for any other dtype.
        """
        mask = np.array(mask.data if isinstance(mask, Tensor) else mask)  # kept: a copy
        if mask.dtype != np.bool_:
            raise TypeError(f"mask must be boolean (True = blocked); got dtype {mask.dtype}. "
                            "For an additive float mask add it to the scores instead")
        value = value.item() if isinstance(value, Tensor) else value
        if not isinstance(value, (numbers.Number, np.generic)):
            raise TypeError(f"masked_fill: value must be a number; got {type(value).__name__}")
        if category(self.dtype) == 1 and not np.isfinite(value):  # as torch: no int for −inf
            raise ValueError(f"masked_fill: value {value} cannot be stored in a {self.dtype} "
                             "tensor")
        return apply(masking.MaskedFill(mask, value), self)

    def softmax(self, axis=-1, *, dim=None):
        return apply(softmax.Softmax(_axis_args(axis, False, dim, None)[0]), self._float_only())

    def log_softmax(self, axis=-1, *, dim=None):
        return apply(softmax.LogSoftmax(_axis_args(axis, False, dim, None)[0]),
                     self._float_only())

    def _float_only(self, op=None):
        """self, or TypeError for bool and integer tensors (PyTorch refuses them in softmax,
        log_softmax and layer_norm: their results are not of the input's kind)."""
        if category(self.dtype) < 2:
            raise TypeError(f"{op or 'softmax'}: needs a floating-point tensor; got dtype "
                            f"{self.dtype}")
        return self


_VIEW_OPS = frozenset({"getitem", "reshape", "permute", "transpose"})


def _root(array):
    """The array that owns `array`'s memory (numpy views point to it through .base)."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def _matmul(a, b):
    if np.bool_ in (a.dtype, b.dtype):
        raise TypeError("@ of bool tensors is not supported (as torch); cast to int first")
    return apply(matmul.MatMul(), a, b)


MaxResult = collections.namedtuple("max", ["values", "indices"])  # torch.return_types.max


def _max_with_indices(x, dim, keepdim):
    """torch.max(x, dim): (values, int64 indices of the first largest entry along dim).

    The values are the entries at the indices, picked by indexing, so the gradient goes to
    that one entry (as torch), not shared between ties as amax's.
    """
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
        raise TypeError(f"max(dim=): dim must be one int (torch's max(dim) returns values and "
                        f"indices); got {dim!r}; for several axes use max(axis=...)")
    if not -max(x.ndim, 1) <= dim < max(x.ndim, 1):
        raise IndexError(f"max(dim={dim}): out of range for a tensor of {x.ndim} dims")
    if x.ndim == 0:
        return MaxResult(x.reshape(()), Tensor(np.array(0)))
    axis = int(dim) % x.ndim
    if x.shape[axis] == 0:
        raise IndexError(f"max(dim={dim}): the dim has size 0, it has no largest entry "
                         f"(shape {x.shape})")
    idx = x.data.argmax(axis=axis, keepdims=True)                # first largest, as torch
    where = list(np.indices(idx.shape, sparse=True))
    where[axis] = idx
    values = x[tuple(where)]                                     # keepdim shape
    if not keepdim:
        values = values.reshape(values.shape[:axis] + values.shape[axis + 1:])
        idx = idx.squeeze(axis)
    return MaxResult(values, Tensor(idx.astype(np.int64)))


def _axis_args(axis, keepdims, dim, keepdim):
    """(axis, keepdims) from numpy's names or PyTorch's (dim=, keepdim=), not both."""
    if dim is not None:
        if axis is not None and axis != -1:
            raise TypeError(f"give axis= or dim=, not both; got axis={axis!r}, dim={dim!r}")
        axis = dim
    return axis, keepdims if keepdim is None else keepdim


def apply(fn, *inputs):
    """Run the op `fn` (a `Function`) on Tensors: forward on their arrays, then, if an input
    requires grad (and grad is enabled), record `fn` as the output's `grad_fn`.

    Every Tensor method and `microtensor.functional` goes through here; a new op is a
    `Function` subclass called as `apply(MyOp(), x)`: a fresh instance per call, because the
    instance becomes that call's graph node and holds its saved arrays. `needs_input_grad`
    is known before forward runs, so that forward saves only what backward will use.
    Forward hooks see each call.
    """
    record = autograd.is_grad_enabled() and any(t._requires_grad for t in inputs)
    needs = tuple([t._requires_grad and record for t in inputs])  # gradients backward owes
    data = fn.run(tuple([t.data for t in inputs]), needs)
    out = Tensor._make(data)
    if fn.op in _VIEW_OPS and _root(data) is _root(inputs[0].data):
        out._version = inputs[0]._version_box()  # a view: writes through it count for both
    observed = bool(hooks._forward_hooks)
    if record or observed:
        fn.describe(data)
    if record:
        fn.connect(inputs)
        out.grad_fn, out._requires_grad = fn, True
        if fn.saved:
            fn.watch(inputs + (out,))
    if observed:
        hooks.run_forward_hooks(fn, inputs, out)
    return out
