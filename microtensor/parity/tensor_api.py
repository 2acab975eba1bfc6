"""The rest of torch.Tensor's everyday surface, which no gradient needs: how a tensor prints,
`numpy()`, `item()`, `retain_grad()`, `zero_grad()` and the version counter's box."""
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


def retain_grad(self):
    """Keep `.grad` on this intermediate tensor after backward() (a leaf keeps it anyway).

    Its node holds only a weak reference to it: retaining a gradient never keeps the tensor,
    or its data, alive.
    """
    if self.grad_fn is not None:
        self.grad_fn._retained = weakref.ref(self)
    return self


def zero_grad(self):
    """Forget the accumulated gradient: `.grad = None` (PyTorch has zero_grad on modules and
    optimizers only, where set_to_none=True does the same; on a tensor, t.grad = None)."""
    self.grad = None


def _version_box(self):
    """The tensor's [writes so far], made on first use (parity/versions.py)."""
    if self._version is None:
        self._version = [0]
    return self._version


for _method in (__repr__, numpy, item, retain_grad, zero_grad, _version_box):
    setattr(Tensor, _method.__name__, _method)
