"""Which `nn.Module` is running: a stack of (module path, class name) that every new graph node
records.

`nn.Module.__call__` opens a scope around `forward`, so each node knows the layer that made
it ("blocks.0.attn"); the pictures group nodes by it and the profiler sums FLOPs by it.
The engine only reads this stack; it never needs to know what a module is.
"""
# ((path, class name), ...) of the module calls we are inside, innermost last. A tuple, and
# replaced rather than changed: each node keeps the tuple current when it was made.
_stack = ()


class module_scope:
    """Tag every graph node made inside with the module `path` ("blocks.0.attn") of class `kind`.

    A class rather than a @contextmanager generator: every module call opens one, and the
    generator's setup costs about a microsecond more per call (~50 module calls per GPT forward).
    """

    def __init__(self, path, kind=""):
        self.entry = (path, kind)

    def __enter__(self):
        global _stack
        self.outer = _stack
        _stack = self.outer + (self.entry,)

    def __exit__(self, *exc_info):
        global _stack
        _stack = self.outer


def current_scope():
    """((path, class name), ...) of the modules being called, outermost first; () outside any."""
    return _stack
