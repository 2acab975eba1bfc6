"""Issue 33: code from a string compiled by the standard library (codeop.compile_command, reached
through an allowed module's importlib), then run: the hook trusted `compile` called from any
standard-library file."""
import dataclasses
import operator

_importlib = operator.attrgetter("inspect.importlib")(dataclasses)
_builtins = operator.attrgetter("inspect.builtins")(dataclasses)
codeop = _importlib.import_module("codeop")

SOURCE = """
def softmax_backward(a, da, axis=-1):
    return a * (da - (a * da).sum(axis, keepdims=True))
"""
_namespace = {}
_builtins.exec(codeop.compile_command(SOURCE, "<solution>", "exec"), _namespace)
softmax_backward = _namespace["softmax_backward"]
