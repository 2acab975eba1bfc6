"""The engine's pieces the graders plug a student's function into, found by what they are
(the engine's op classes by class name, its functions by name among the modules that hold
them), never by a module path: the engine's files may move and merge, its op names stay."""
import contextlib
import sys

import microtensor
from microtensor import Tensor


def _function_base():
    """The engine's op base class: the root, below `object`, of a graph node's class."""
    node = (Tensor([1.0], requires_grad=True) * 2.0).grad_fn
    return next(cls for cls in type(node).__mro__ if cls.__name__ == "Function")


def op(name):
    """The engine's op class named `name` (a subclass of its Function, at any depth);
    LookupError naming it when the engine has none."""
    todo, seen = [_function_base()], set()
    while todo:
        cls = todo.pop()
        if cls.__name__ == name and cls.__module__.split(".")[0] == "microtensor":
            return cls
        for sub in type.__subclasses__(cls):
            if sub not in seen:
                seen.add(sub)
                todo.append(sub)
    raise LookupError(f"the engine has no op class named {name!r}")


def _holders(name):
    """The engine's modules whose global `name` is the engine's function of that name."""
    holders = [module for key, module in list(sys.modules.items())
               if module is not None and key.split(".")[0] == "microtensor"
               and callable(vars(module).get(name))]
    if not holders:
        raise LookupError(f"the engine has no function named {name!r}")
    return holders


@contextlib.contextmanager
def plugged_function(name, value):
    """The engine's function `name` (e.g. unbroadcast) replaced by `value` in every engine
    module that holds it while the block runs."""
    assert microtensor  # the engine is imported: its modules are in sys.modules
    saved = [(module, vars(module)[name]) for module in _holders(name)]
    for module, _ in saved:
        setattr(module, name, value)
    try:
        yield
    finally:
        for module, original in saved:
            setattr(module, name, original)


def engine_function(name):
    """The engine's function `name`, wherever it is defined."""
    for module in _holders(name):
        fn = vars(module)[name]
        if getattr(fn, "__module__", None) == module.__name__:
            return fn
    return vars(_holders(name)[0])[name]
