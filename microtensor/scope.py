"""Which `nn.Module` is running: a stack of (module path, class name) that every new graph node
records.

`nn.Module.__call__` opens a scope around `forward`, so each node knows the layer that made
it ("blocks.0.attn"); the pictures group nodes by it and the profiler sums FLOPs by it.
The engine only reads this stack; it never needs to know what a module is.

    outer = enter_scope("blocks.0.attn", "MultiHeadAttention")
    try:
        ...                      # every node made here records the scope
    finally:
        restore_scope(outer)
"""
# ((path, class name), ...) of the module calls we are inside, innermost last. A tuple, and
# replaced rather than changed: each node keeps the tuple current when it was made.
_stack = ()


def enter_scope(path, kind=""):
    """Tag every graph node made from now on with the module `path` of class `kind`, inside
    the scopes already open; returns those (the scope to restore when the call ends).

    Two plain functions rather than a context manager: Module.__call__ pairs them in a
    try/finally, the one place that opens a scope.
    """
    global _stack
    outer = _stack
    _stack = outer + ((path, kind),)
    return outer


def restore_scope(outer):
    """Go back to the scope `outer` that `enter_scope` returned (on return or on an error)."""
    global _stack
    _stack = outer


def current_scope():
    """((path, class name), ...) of the modules being called, outermost first; () outside any."""
    return _stack
