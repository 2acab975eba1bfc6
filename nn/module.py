"""How layers hold weights and sub-layers: `Parameter` and `Module` (notes 3.1: the learned
W_Q, W_K, W_V are a layer's parameters). The API is PyTorch's nn.Module.

A module keeps two ordered registries, as torch's: `_parameters` (its own weights) and
`_modules` (its sub-layers). `self.w = Parameter(...)` and `self.fc = Linear(...)` put them
there under the attribute's name, in the order assigned; `named_parameters()` walks the tree.
Off the reading path, mixed in below: saving and loading (state_dict.py, with the third
registry, `_buffers`), the dotted names the pictures show (module_names.py), and torch's
rules for re-assigning a registered name (module_parity.py).
"""
from microtensor import Tensor
from microtensor.scope import enter_scope, restore_scope

from .module_names import ModuleNames
from .module_parity import ModuleParity, refuse_cycle, registry_for
from .state_dict import ModuleStateDict


class Parameter(Tensor):
    """A learnable weight: a Tensor that requires grad and that modules list in `parameters()`.
    `Parameter(t)` shares t's storage, as torch's; from an array it copies, as `Tensor`."""

    is_parameter = True  # how microtensor's observers (viz) tell weights from inputs

    def __init__(self, data, requires_grad=True):
        if isinstance(data, Tensor):  # the same array and version count: writes show in both
            self.data, self._version = data.data, data._version_box()  # rebinds: a new leaf
            self.requires_grad_(requires_grad)
        else:
            super().__init__(data, requires_grad=requires_grad)


class Module(ModuleParity, ModuleStateDict, ModuleNames):
    """Base class of every layer. Subclasses call `super().__init__()`, then assign their
    parameters and sub-layers, and define `forward`, which calling the module runs."""

    def __init__(self):
        for registry in ("_parameters", "_buffers", "_modules"):
            object.__setattr__(self, registry, {})  # name -> value, in registration order
        self.training = True

    def __call__(self, *args, **kwargs):
        """Run forward inside this module's scope, so every op it records knows its path."""
        outer = enter_scope(self._path, type(self).__name__)
        try:
            return self.forward(*args, **kwargs)
        finally:
            restore_scope(outer)

    def __setattr__(self, name, value):
        """A Parameter goes to `_parameters`, a Module to `_modules` (at the end, or in its
        old place when the name is registered), anything else is a plain attribute."""
        registry = registry_for(self, name, value)  # torch's rules: module_parity.py
        if registry is not None:
            self._name_new(name, value)  # the pictures' dotted names: module_names.py
            registry[name] = value
        # an attribute too (torch's are only in the registries): reading self.w is then
        # Python's own lookup, not a __getattr__ call (5% of generation's time)
        object.__setattr__(self, name, value)

    def named_children(self):
        """(name, module) for the direct sub-modules, in registration order, each once."""
        seen = set()
        for name, module in self._modules.items():
            if module is not None and module not in seen:
                seen.add(module)
                yield name, module

    def children(self):
        return (m for _, m in self.named_children())

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """(dotted path, module) for this module and all below it, depth first, as torch's:
        one reachable twice is listed at its first path (at each: remove_duplicate=False)."""
        memo = set() if memo is None else memo
        if self in memo:  # seen: skip it, or (with duplicates) a cycle, module_parity.py
            return None if remove_duplicate else refuse_cycle(self, prefix)
        memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is not None:
                yield from module.named_modules(memo, f"{prefix}.{name}" if prefix else name,
                                                remove_duplicate)
        if not remove_duplicate:
            memo.discard(self)  # memo holds the path from the root: only a cycle repeats

    def modules(self):
        return (m for _, m in self.named_modules())

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """(dotted name, Parameter) for every parameter, a shared one (tied weight) once at
        its first name (under each: remove_duplicate=False); recurse=False: only this one's."""
        modules = (self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
                   if recurse else [(prefix, self)])
        seen = set()
        for path, module in modules:
            for name, p in module._parameters.items():
                if p is not None and p not in seen:
                    if remove_duplicate:
                        seen.add(p)
                    yield (f"{path}.{name}" if path else name), p

    def parameters(self, recurse=True):
        """The parameters, each once, as a list (torch gives a generator: docs/conformance.md)."""
        return [p for _, p in self.named_parameters(recurse=recurse)]

    def train(self, mode=True):
        """Set `training = mode` here and below (True: dropout on); returns self.
        ValueError for a mode that is not a bool ("False" is truthy), as torch."""
        if not isinstance(mode, bool):
            raise ValueError(f"training mode is expected to be boolean; got {mode!r}")
        for m in self.modules():
            m.training = mode
        return self

    def eval(self):
        return self.train(False)
