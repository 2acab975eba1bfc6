"""The rest of torch.Tensor's everyday surface, which no gradient needs: how a tensor prints,
`numpy()`, `item()`, `is_leaf`, `detach()`, `retain_grad()`, `zero_grad()`, the version
counter's box, and the state that only parity/ and the pictures read."""
import warnings
import weakref

import numpy as np

from ..tensor import Tensor


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


def retain_grad(self):
    """Keep `.grad` on this intermediate tensor after backward() (a leaf keeps it anyway).

    Its node holds only a weak reference to it: retaining a gradient never keeps the tensor,
    or its data, alive.
    """
    if not self.requires_grad:
        raise RuntimeError("retain_grad(): can't retain_grad on a tensor that has "
                           "requires_grad=False (as torch)")
    if self.grad_fn is not None:
        self.grad_fn._retained = weakref.ref(self)
    return self


def reversed_dims(self):
    """`t.T` on a tensor that is not 2-D: its dims reversed (the identity for 0-d and 1-d),
    with torch's deprecation warning."""
    warnings.warn("The use of `x.T` on tensors of dimension other than 2 to reverse their "
                  "shape is deprecated (as in torch); use x.permute(...) or x.transpose(...)",
                  UserWarning, stacklevel=4)
    return self.permute(tuple(range(self.ndim - 1, -1, -1)))


def _get_grad(self):
    return self._grad


def _set_grad(self, grad):
    """`t.grad = g`: a numpy array of t's shape and dtype, or None; RuntimeError otherwise
    (torch's "attempting to assign a gradient of size ..."), TypeError for a non-array."""
    if grad is not None:
        if isinstance(grad, np.generic):  # a 0-d result of numpy arithmetic
            grad = np.asarray(grad)
        if not isinstance(grad, np.ndarray):
            raise TypeError(f"t.grad = g: g must be a numpy array or None (the gradient's "
                            f"type here); got {type(grad).__name__}")
        if grad.shape != self.data.shape or grad.dtype != self.data.dtype:
            raise RuntimeError(f"t.grad = g: a gradient of shape {grad.shape} and dtype "
                               f"{grad.dtype} for a tensor of shape {self.data.shape} and "
                               f"dtype {self.data.dtype}; they must match (as torch)")
    self._grad = grad


Tensor._grad = None
Tensor.grad = property(_get_grad, _set_grad)


def zero_grad(self):
    """Forget the accumulated gradient: `.grad = None` (PyTorch has zero_grad on modules and
    optimizers only, where set_to_none=True does the same; on a tensor, t.grad = None)."""
    self.grad = None


def _version_box(self):
    """The tensor's [writes so far], made on first use (parity/versions.py)."""
    if self._version is None:
        self._version = [0]
    return self._version


for _method in (__repr__, numpy, item, detach, retain_grad, zero_grad, _version_box):
    setattr(Tensor, _method.__name__, _method)

# True for a tensor no recorded op made (PyTorch's name): backward stops there
Tensor.is_leaf = property(lambda self: self.grad_fn is None)
# A new tensor's state, as in tensor.py: class attributes, set on a tensor only when they change
Tensor.is_parameter = False  # True for `nn.Parameter`: pictures draw these as the model's weights
Tensor._version = None  # [writes so far], shared by views (parity/versions.py)
