"""Check `backward()` against central finite differences, (f(x+ε) − f(x−ε)) / 2ε, element by
element.

Central, not one-sided (f(x+ε) − f(x))/ε: its error shrinks as ε², not ε. In float64,
ε = 1e-6 keeps both that error (~ε² = 1e-12) and rounding (~1e-16·|f|/ε = 1e-10·|f|) far
below the default atol = 1e-5; float32's rounding (~1e-7·|f|/ε) would not be.
"""
import numpy as np

from .grad_mode import no_grad
from .tensor import Tensor


class GradcheckError(AssertionError):
    """Raised when an analytic gradient disagrees with the numerical one."""


def gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3):
    """Compare autograd and finite-difference gradients of `fn(*inputs)` for every input that
    requires grad.

    Args:
        fn: callable returning a one-element Tensor.
        inputs: a Tensor (one input, as torch) or a sequence of Tensors (float64 where they
            require grad) and other arguments; a non-leaf input is checked as torch does, the
            gradient of fn with respect to that tensor's value.
        eps, atol, rtol: step size and tolerance: |analytic − numeric| ≤ atol + rtol·|numeric|.
    Tensors that `fn` uses without taking them as inputs (a module's weights) are not
    checked, and their `.grad` gains this one backward's gradient; the inputs' `.grad` is
    put back as it was (a non-leaf input reaches fn as a detached leaf sharing its data).
    Each element of an input is nudged in place, under `no_grad()`.

    Returns:
        True when every element agrees.
    Raises:
        ValueError: no input requires grad: nothing would be checked (as torch).
        TypeError: an input requiring grad is not float64 (float32 is too coarse for ε).
        GradcheckError: names the input, the element and both values.
    """
    inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    checked = [i for i, t in enumerate(inputs) if getattr(t, "requires_grad", False)]
    if not checked:  # True would pass a test that checked nothing (a weight inside fn is not)
        raise ValueError(f"gradcheck: none of the {len(inputs)} inputs requires grad, so there "
                         "is nothing to check; make the ones to check with requires_grad=True")
    for i in checked:
        if inputs[i].dtype != np.float64:
            raise TypeError(f"gradcheck: input {i} is {inputs[i].dtype}; use float64 "
                            "(e.g. Tensor(x, dtype='float64', requires_grad=True))")
    names = {i: inputs[i].name or f"input {i}" for i in checked}
    for i in checked:  # a leaf of its own: a non-leaf's .grad would stay None (torch's too)
        if inputs[i].grad_fn is not None:
            inputs[i] = inputs[i].detach().requires_grad_()
    saved_grads = [inputs[i].grad for i in checked]
    for i in checked:
        inputs[i].grad = None
    out = fn(*inputs)
    if out.data.size != 1:
        raise ValueError(f"gradcheck: fn must return a one-element tensor; got shape {out.shape}")
    out.backward()
    analytic = [inputs[i].grad if inputs[i].grad is not None else np.zeros_like(inputs[i].data)
                for i in checked]
    for i, g in zip(checked, saved_grads):
        inputs[i].grad = g

    for i, expected in zip(checked, analytic):
        x = inputs[i].data
        for idx in np.ndindex(x.shape):
            original = x[idx]
            with no_grad():
                x[idx] = original + eps
                # .item(), not float(): numpy 2 refuses float() of a [1]-shaped array
                f_plus = fn(*inputs).item()
                x[idx] = original - eps
                f_minus = fn(*inputs).item()
            x[idx] = original
            numeric = (f_plus - f_minus) / (2 * eps)
            if not abs(expected[idx] - numeric) <= atol + rtol * abs(numeric):
                raise GradcheckError(
                    f"gradcheck: {names[i]}, element {idx}: backward() gives "
                    f"{expected[idx]:.8g}, finite differences give {numeric:.8g}")
    return True
