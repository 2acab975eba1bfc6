"""How layers hold weights and sub-layers: `Module`, `Parameter` (notes 3.1: the learned W_Q,
W_K, W_V are a layer's parameters); the containers `ModuleList`, `Sequential` are in containers.py.

The API is PyTorch's nn.Module.

A module finds its parameters and sub-modules by looking at its own attributes, in the
order they were assigned. Names are fixed when the tree is built: assigning a sub-module
gives it, and everything below it, its dotted path (`blocks.0.attn`) and each parameter its
full name (`blocks.0.attn.q_proj.weight`), the names `named_parameters()` lists. Calling a
module runs `forward` inside a scope of that path, which every op records for the graph
pictures; calling never renames anything, so a graph recorded earlier keeps its names.
"""
from collections import OrderedDict, namedtuple

import numpy as np

from microtensor import Tensor, writing
from microtensor.scope import enter_scope, restore_scope


class Parameter(Tensor):
    """A Tensor that is a learnable weight: requires grad, and modules list it in `parameters()`."""

    is_parameter = True  # how microtensor's observers (viz) tell weights from inputs

    def __init__(self, data, requires_grad=True):
        super().__init__(data, requires_grad=requires_grad)


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What `load_state_dict` returns, as torch's: (missing_keys, unexpected_keys), two lists."""

    __slots__ = ()

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


class StateDictKeyError(KeyError, RuntimeError):
    """load_state_dict(strict=True) with missing or unexpected names: a KeyError, and the
    RuntimeError torch raises there, so either `except` catches it."""

    def __str__(self):
        return str(self.args[0])


class StateDictShapeError(ValueError, RuntimeError):
    """load_state_dict with an array of another shape: a ValueError, and the RuntimeError
    torch raises there ("size mismatch"), so either `except` catches it."""


class Module:
    """Base class of every layer. Subclasses call `super().__init__()` and define `forward`."""

    _path = ""  # dotted path from the root of the tree this module was built into

    def __init__(self):
        self.training = True

    def forward(self, *args, **kwargs):
        raise TypeError(f"{type(self).__name__} has no forward(): every Module subclass "
                        "defines what calling it computes")

    def __call__(self, *args, **kwargs):
        """Run forward inside this module's scope, so every op it records knows its path."""
        outer = enter_scope(self._path, type(self).__name__)
        try:
            return self.forward(*args, **kwargs)
        finally:
            restore_scope(outer)

    def __setattr__(self, name, value):
        """Assigning a sub-module names it and everything below it; assigning a parameter
        that has no name yet names it. Both happen once, while the tree is built.
        TypeError for anything but a Parameter or None over a parameter (as torch): a plain
        Tensor would silently leave parameters(), the optimizer and state_dict()."""
        if isinstance(vars(self).get(name), Parameter) and not (
                value is None or isinstance(value, Parameter)):
            raise TypeError(f"cannot assign a {type(value).__name__} as parameter '{name}' "
                            "(nn.Parameter or None expected); to load values use "
                            "load_state_dict")
        # a module this tree already holds keeps its first path, as named_modules lists it
        # (a shared module, like a shared parameter, is named where it was first assigned)
        known = isinstance(value, Module) and any(m is value for m in self.modules())
        object.__setattr__(self, name, value)
        if isinstance(value, Module) and not known:
            value._name_tree(self._child_path(name))
        elif isinstance(value, Parameter) and value.name is None:
            value.name = self._child_path(name)  # a shared parameter (tied weight) keeps its first

    def _child_path(self, name):
        return f"{self._path}.{name}" if self._path else name

    def _name_tree(self, path):
        """Give this module the dotted `path`, each sub-module its path below it, and each
        parameter its full name, as `named_parameters()` of this module lists them."""
        for sub_path, module in self.named_modules(prefix=path):
            object.__setattr__(module, "_path", sub_path)
        for name, param in self.named_parameters():
            param.name = f"{path}.{name}" if path else name

    # ---- finding parameters and sub-modules -------------------------------------------
    def named_children(self):
        """(attribute name, module) for the direct sub-modules, in assignment order."""
        for name, value in vars(self).items():
            if isinstance(value, Module):
                yield name, value

    def children(self):
        return (m for _, m in self.named_children())

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """(dotted path, module) for this module (`prefix`) and every module below it, in
        torch's order and signature. A module reachable twice is listed at its first path
        (as torch), or at every path with remove_duplicate=False. A module that holds itself
        is listed once; with remove_duplicate=False it is a ValueError (torch recurses forever)."""
        yield from self._named_modules(set() if memo is None else memo, prefix, remove_duplicate,
                                       ())

    def _named_modules(self, memo, prefix, remove_duplicate, ancestors):
        if remove_duplicate:
            if self in memo:  # the modules themselves, as torch's memo (a Module hashes by id)
                return
            memo.add(self)
        elif any(a is self for a in ancestors):
            raise ValueError(f"{type(self).__name__} at '{prefix}' holds itself (a cycle): its "
                             "modules cannot be listed with duplicates (nor its state_dict)")
        yield prefix, self
        for name, child in self.named_children():
            yield from child._named_modules(memo, f"{prefix}.{name}" if prefix else name,
                                            remove_duplicate, ancestors + (self,))

    def modules(self):
        return (m for _, m in self.named_modules())

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """(dotted name, Parameter) for every parameter, as torch's: a shared one (tied weight)
        listed once at its first name, or under every name with remove_duplicate=False;
        recurse=False: this module's own parameters only; prefix: put before each name."""
        modules = (self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
                   if recurse else [(prefix, self)])
        seen = set()
        for path, module in modules:
            for name, value in vars(module).items():
                if isinstance(value, Parameter):
                    if remove_duplicate:
                        if id(value) in seen:
                            continue
                        seen.add(id(value))
                    yield (f"{path}.{name}" if path else name), value

    def parameters(self, recurse=True):
        """The parameters, each once, as a list (torch gives a generator: docs/conformance.md)."""
        return [p for _, p in self.named_parameters(recurse=recurse)]

    def apply(self, fn):
        """fn on every sub-module (children first, as torch), then on this one; returns self."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    def num_parameters(self):
        """Total number of learnable scalars (shared weights counted once)."""
        return sum(p.size for p in self.parameters())

    def zero_grad(self, set_to_none=True):
        """Forget every parameter's gradient: None, or zeros with set_to_none=False (torch)."""
        for p in self.parameters():
            if set_to_none or p.grad is None:
                p.grad = None
            else:
                p.grad[...] = 0

    def train(self, mode=True):
        """Set `training = mode` here and in every sub-module (True: dropout on); returns self.
        Raises ValueError for a mode that is not a bool ("False" is truthy), as torch."""
        if not isinstance(mode, bool):
            raise ValueError(f"training mode is expected to be boolean; got {mode!r}")
        for m in self.modules():
            m.training = mode
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        """Set `requires_grad` of every parameter (False freezes them); returns self. TypeError
        for a flag that is not a bool ("False" is truthy), as torch."""
        if not isinstance(requires_grad, bool):
            raise TypeError(f"requires_grad_(): argument 'requires_grad' must be bool, not "
                            f"{type(requires_grad).__name__}")
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    # ---- saving and loading -----------------------------------------------------------
    def state_dict(self, *, destination=None, prefix="", keep_vars=False):
        """{name: array} of every parameter, in torch's order and with torch's names: a tied
        parameter under each of its names (the same array under both), a shared module under
        each path. Each array is a read-only view of the parameter's values: it shares their
        storage as torch's detached tensors do (an optimizer step shows in it; copy it to keep
        a snapshot), and writing into it is refused instead of bypassing the version counts
        (use load_state_dict). keep_vars=True: the Parameters themselves. destination: a
        mapping to fill and return. ValueError for a module that holds itself."""
        out = OrderedDict() if destination is None else destination
        for name, p in self.named_parameters(remove_duplicate=False):
            name = prefix + name  # torch's prefix: "blocks.0." with its dot
            if keep_vars:
                out[name] = p
            else:
                view = p.data.view()
                view.flags.writeable = False
                out[name] = view
        return out

    def load_state_dict(self, state_dict, strict=True):
        """Copy arrays (or Tensors) into the parameters in place (optimizers keep their references).
        Each copy counts a version, as torch's: a graph built before refuses backward.
        The names are `state_dict()`'s: a tied parameter is read under each of its names, in
        that order (the last one wins, as torch). Returns torch's
        `_IncompatibleKeys(missing_keys, unexpected_keys)` (two empty lists when all match).

        Raises TypeError for a state_dict that is not a mapping or a value that is not
        floating-point (ints, strings, objects), StateDictKeyError (a KeyError and a
        RuntimeError) for missing or unexpected names (when `strict`), and StateDictShapeError
        (a ValueError and a RuntimeError) for a shape that differs, naming the parameter and
        both shapes; all before copying anything (torch copies what fits, then raises).
        """
        if not hasattr(state_dict, "items"):
            raise TypeError(f"load_state_dict: expected a dict of name -> array; got "
                            f"{type(state_dict).__name__}")
        entries = list(self.named_parameters(remove_duplicate=False))
        names = {name for name, _ in entries}
        missing = [n for n, _ in entries if n not in state_dict]
        unexpected = [n for n in state_dict if n not in names]
        if strict and (missing or unexpected):
            raise StateDictKeyError(f"load_state_dict: missing {missing}, unexpected "
                                    f"{unexpected}")
        arrays = []
        for name, param in entries:
            if name not in state_dict:
                continue
            array = state_dict[name]
            # a Tensor value too, as PyTorch's state dicts hold tensors (np.asarray of a
            # Tensor would build an object array and fail with a cryptic message)
            array = np.asarray(array.data if isinstance(array, Tensor) else array)
            if array.shape != param.shape:
                raise StateDictShapeError(f"load_state_dict: '{name}' has shape {array.shape} "
                                          f"in the state dict but {param.shape} in the model")
            if array.dtype.kind != "f":  # numpy would cast ints, strings or objects quietly
                raise TypeError(f"load_state_dict: '{name}' has dtype {array.dtype}; expected "
                                "floating-point values")
            arrays.append((param, array))
        for param, array in arrays:
            # in place, as torch's copy_ under no_grad, and counted: a graph that saved the
            # old values refuses backward instead of using the new ones (writing.py)
            with writing(param) as data:
                data[...] = array
        return _IncompatibleKeys(missing, unexpected)

    def extra_repr(self):
        return ""

    def __repr__(self):
        children = [f"  ({n}): " + repr(m).replace("\n", "\n  ") for n, m in self.named_children()]
        head = f"{type(self).__name__}({self.extra_repr()}"
        return head + (")" if not children else "\n" + "\n".join(children) + "\n)")
