"""The checks of gradient settings: `Tensor.backward(grad)`'s argument (the array the backward
pass starts from) and `requires_grad_`'s."""
import numpy as np


def loss_gradient(tensor, grad):
    """grad as an array of tensor's shape and dtype (1 for a one-element tensor if None).

    RuntimeError if tensor does not require grad; ValueError for no grad on a tensor of
    several elements, or a grad of another shape; TypeError for a grad of no real numbers.
    """
    if not tensor._requires_grad:
        raise RuntimeError(
            "backward() on a tensor that does not require grad: no input of the ops "
            "that made it had requires_grad=True (or it was made under no_grad())")
    if grad is None:
        if tensor.data.size != 1:
            raise ValueError(
                f"backward() without `grad` needs a scalar (one-element) tensor; got "
                f"shape {tensor.shape}: pass grad= an array of that shape")
        grad = np.ones_like(tensor.data)
    grad = np.asarray(grad)  # a Tensor gives its array (np.asarray shares it)
    if grad.dtype.kind not in "biuf":  # numpy's cast would fail with a message naming no one
        raise TypeError(f"backward(grad): grad must hold real numbers; got dtype {grad.dtype}")
    grad = grad.astype(tensor.dtype, copy=False)
    if grad.shape != tensor.shape:
        raise ValueError(f"backward(grad): grad has shape {grad.shape}; expected {tensor.shape}")
    return grad


def check_requires_grad(tensor, flag):
    """TypeError for requires_grad on a tensor that is not floating point; RuntimeError for
    turning it off on a tensor an op made (it would cut the graph without a word)."""
    if flag and not np.issubdtype(tensor.dtype, np.floating):
        raise TypeError(
            f"only floating-point tensors can require grad; got dtype {tensor.dtype}"
            + (f" for '{tensor.name}'" if tensor.name else "")
            + " (integer tensors hold ids, indices or targets)")
    if not flag and tensor.grad_fn is not None:
        raise RuntimeError("requires_grad can be changed on leaf tensors only (as torch); "
                           "for a copy off the graph use detach()")
