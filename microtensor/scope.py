"""Which `nn.Module` is running: a stack of (module path, class name) that every new graph node
records.

`nn.Module.__call__` opens a scope around `forward`, so each node knows the layer that made
it ("blocks.0.attn"); the pictures group nodes by it and the profiler sums FLOPs by it.
The engine only reads this stack; it never needs to know what a module is.
"""
import contextlib

# ((path, class name), ...) of the module calls we are inside, innermost last. A tuple, and
# replaced rather than changed: each node keeps the tuple current when it was made.
_stack = ()


@contextlib.contextmanager
def module_scope(path, kind=""):
    """Tag every graph node made inside with the module `path` ("blocks.0.attn") of class `kind`."""
    global _stack
    outer = _stack
    _stack = outer + ((path, kind),)
    try:
        yield
    finally:
        _stack = outer


def current_scope():
    """((path, class name), ...) of the modules being called, outermost first; () outside any."""
    return _stack
