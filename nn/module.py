"""How layers hold weights and sub-layers: `Module`, `Parameter`, `ModuleList`, `Sequential`
(notes 3.1: the learned W_Q, W_K, W_V are a layer's parameters).

The API is PyTorch's nn.Module.

A module finds its parameters and sub-modules by looking at its own attributes, in the
order they were assigned. Names are fixed when the tree is built: assigning a sub-module
gives it, and everything below it, its dotted path (`blocks.0.attn`) and each parameter its
full name (`blocks.0.attn.q_proj.weight`), the names `named_parameters()` lists. Calling a
module runs `forward` inside a scope of that path, which every op records for the graph
pictures; calling never renames anything, so a graph recorded earlier keeps its names.
"""
from collections import OrderedDict

import numpy as np

from microtensor import Tensor, writing
from microtensor.scope import enter_scope, restore_scope


class Parameter(Tensor):
    """A Tensor that is a learnable weight: requires grad, and modules list it in `parameters()`."""

    is_parameter = True  # how microtensor's observers (viz) tell weights from inputs

    def __init__(self, data, requires_grad=True):
        super().__init__(data, requires_grad=requires_grad)


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
        for sub_path, module in self.named_modules(path):
            object.__setattr__(module, "_path", sub_path)
        for name, param in self.named_parameters():
            param.name = f"{path}.{name}" if path else name

    # ---- finding parameters and sub-modules -------------------------------------------
    def named_children(self):
        """(attribute name, module) for the direct sub-modules, in assignment order."""
        for name, value in vars(self).items():
            if isinstance(value, Module):
                yield name, value

    def named_modules(self, prefix="", memo=None):
        """(dotted path, module) for this module ("") and every module below it, each once
        (a module reachable twice, or holding itself, is listed at its first path, as torch)."""
        memo = set() if memo is None else memo
        if id(self) in memo:
            return
        memo.add(id(self))
        yield prefix, self
        for name, child in self.named_children():
            yield from child.named_modules(f"{prefix}.{name}" if prefix else name, memo)

    def modules(self):
        return (m for _, m in self.named_modules())

    def named_parameters(self):
        """(dotted name, Parameter) for every parameter, each shared one listed once."""
        seen = set()
        for path, module in self.named_modules():
            for name, value in vars(module).items():
                if isinstance(value, Parameter) and id(value) not in seen:
                    seen.add(id(value))
                    yield (f"{path}.{name}" if path else name), value

    def parameters(self):
        return [p for _, p in self.named_parameters()]

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
    def state_dict(self):
        """{parameter name: numpy array copy}, in `named_parameters()` order."""
        return OrderedDict((name, p.data.copy()) for name, p in self.named_parameters())

    def load_state_dict(self, state_dict, strict=True):
        """Copy arrays (or Tensors) into the parameters in place (optimizers keep their references).
        Each copy counts a version, as torch's: a graph built before refuses backward.

        Raises TypeError for a state_dict that is not a mapping or a value that is not
        floating-point (ints, strings, objects), KeyError for missing or unexpected names
        (when `strict`), and ValueError for a shape that differs, naming the parameter and
        both shapes.
        """
        if not hasattr(state_dict, "items"):
            raise TypeError(f"load_state_dict: expected a dict of name -> array; got "
                            f"{type(state_dict).__name__}")
        params = dict(self.named_parameters())
        missing = [n for n in params if n not in state_dict]
        unexpected = [n for n in state_dict if n not in params]
        if strict and (missing or unexpected):
            raise KeyError(f"load_state_dict: missing {missing}, unexpected {unexpected}")
        for name, array in state_dict.items():
            if name not in params:
                continue
            # a Tensor value too, as PyTorch's state dicts hold tensors (np.asarray of a
            # Tensor would build an object array and fail with a cryptic message)
            array = np.asarray(array.data if isinstance(array, Tensor) else array)
            if array.shape != params[name].shape:
                raise ValueError(f"load_state_dict: '{name}' has shape {array.shape} in the "
                                 f"state dict but {params[name].shape} in the model")
            if array.dtype.kind != "f":  # numpy would cast ints, strings or objects quietly
                raise TypeError(f"load_state_dict: '{name}' has dtype {array.dtype}; expected "
                                "floating-point values")
            # in place, as torch's copy_ under no_grad, and counted: a graph that saved the
            # old values refuses backward instead of using the new ones (writing.py)
            with writing(params[name]) as data:
                data[...] = array

    def extra_repr(self):
        return ""

    def __repr__(self):
        children = [f"  ({n}): " + repr(m).replace("\n", "\n  ") for n, m in self.named_children()]
        head = f"{type(self).__name__}({self.extra_repr()}"
        return head + (")" if not children else "\n" + "\n".join(children) + "\n)")


class ModuleList(Module):
    """A list of modules whose parameters are registered (`blocks.0...`, `blocks.1...`).

    Holds Modules only: anything else (a function such as F.relu, a Tensor) is a TypeError
    naming its position and type, as torch; a dropped function would change the model.
    """

    def __init__(self, modules=()):
        super().__init__()
        self.extend(modules)

    def _check(self, module, position):
        if not isinstance(module, Module):
            raise TypeError(f"{type(self).__name__}: entry {position} is a "
                            f"{type(module).__name__} ({module!r:.60}), not a Module; wrap a "
                            "function in a Module (nn.ReLU(), nn.GELU(), ...)")
        return module

    def _reset(self, modules):
        """Renumber: the entries become attributes "0", "1", ... again, in this order."""
        for key in [k for k in vars(self) if k.isdigit()]:
            delattr(self, key)
        for i, m in enumerate(modules):
            setattr(self, str(i), m)  # found by named_children, in assignment order

    def append(self, module):
        setattr(self, str(len(self)), self._check(module, len(self)))
        return self

    def extend(self, modules):
        for m in modules:
            self.append(m)
        return self

    def insert(self, index, module):
        entries = list(self)
        entries.insert(index, self._check(module, index))
        self._reset(entries)

    def __iter__(self):
        return (m for _, m in self.named_children())

    def __len__(self):
        return sum(1 for _ in self.named_children())

    def __getitem__(self, i):
        entries = list(self)
        return type(self)._from(entries[i]) if isinstance(i, slice) else entries[i]

    @classmethod
    def _from(cls, modules):
        """A list of the same modules that leaves their names as they are (a slice is a view
        of the model, as torch's: assigning would rename the parameters)."""
        new = cls.__new__(cls)
        Module.__init__(new)
        for i, m in enumerate(modules):
            object.__setattr__(new, str(i), m)
        return new

    def __setitem__(self, i, module):
        entries = list(self)
        entries[i] = self._check(module, i)
        self._reset(entries)

    def __delitem__(self, i):
        entries = list(self)
        del entries[i]
        self._reset(entries)


class Sequential(ModuleList):
    """Runs its modules one after another: `Sequential(a, b)(x) == b(a(x))`."""

    def __init__(self, *modules):
        super().__init__(modules)

    def forward(self, x):
        for m in self:
            x = m(x)
        return x
