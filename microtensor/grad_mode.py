"""Grad mode: whether ops record a graph, and `no_grad()` to turn recording off (as
`torch.no_grad`). `apply` (tensor.py) reads `enabled` before it records an op.
"""
from .parity.grad_mode import GradModeDecorator

enabled = True  # False inside no_grad()


def is_grad_enabled():
    """True unless we are inside `no_grad()`."""
    return enabled


class no_grad(GradModeDecorator):
    """Ops inside record no graph, as `torch.no_grad`: `with no_grad():` (nests), or a
    decorator, `@no_grad()` or `@no_grad` (parity/grad_mode.py)."""

    def __init__(self, func=None):
        self._previous = []  # a stack: one instance may be entered again while inside

    def __enter__(self):
        global enabled
        self._previous.append(enabled)
        enabled = False

    def __exit__(self, *exc_info):
        global enabled
        enabled = self._previous.pop()
