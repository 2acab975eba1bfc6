"""How layers hold weights and sub-layers: `Parameter` and `Module` (notes 3.1: the learned
W_Q, W_K, W_V are a layer's parameters), PyTorch's nn.Module API. Mixed in from beside this
file: walking and naming the tree (module_names.py), saving and loading (state_dict.py),
torch's other rules and methods (module_parity.py).
"""
from microtensor import Tensor
from microtensor.scope import enter_scope, restore_scope

from .module_names import ModuleNames
from .module_parity import ModuleParity, check_train_mode, registry_for, share_storage
from .state_dict import ModuleStateDict


class Parameter(Tensor):
    """A learnable weight: a Tensor that requires grad, which modules list in `parameters()`."""

    is_parameter = True  # how Module's __setattr__ and the pictures tell weights from tensors

    def __init__(self, data, requires_grad=True):
        if isinstance(data, Tensor):  # torch's Parameter(t) shares t's storage: module_parity.py
            share_storage(self, data, requires_grad)
        else:
            super().__init__(data, requires_grad=requires_grad)


class Module(ModuleParity, ModuleStateDict, ModuleNames):
    """Base class of every layer. Subclasses call `super().__init__()`, then assign their
    parameters and sub-layers, and define `forward`, which calling the module runs. From
    module_names.py: `modules()` walks `_modules` depth first from self, each module once;
    `named_parameters()` gives each one's parameters with dotted names ("blocks.0.attn..."),
    each Parameter once (even one that two modules share), at its first name; so, plainly,
    parameters() is every m._parameters.values() for m in modules(), without repeats. `_path`
    and the scope only name things for the pictures: pass them."""

    def __init__(self):
        for registry in ("_parameters", "_buffers", "_modules"):
            # name -> value, in registration order: the dicts __setattr__ (below) fills, so
            # set with object's own __setattr__, past ours
            object.__setattr__(self, registry, {})
        self.training = True

    def __call__(self, *args, **kwargs):
        """Run forward inside this module's scope: each op it records keeps the module's
        dotted path (`_path`, e.g. blocks.0.attn: module_names.py), for the pictures."""
        outer = enter_scope(self._path, type(self).__name__)
        try:
            return self.forward(*args, **kwargs)
        finally:
            restore_scope(outer)

    def __setattr__(self, name, value):
        """`self.w = Parameter(...)` registers w in `_parameters` (self._parameters["w"]),
        `self.fc = Linear(...)` fc in `_modules` (self._modules["fc"]), in the order assigned
        (torch's rules for a registered name: module_parity.py); anything else is a plain
        attribute."""
        # _parameters for a Parameter, _modules for a Module, None for a plain attribute
        registry = registry_for(self, name, value)
        if registry is not None:
            self._name_new(name, value)  # its dotted name, for the pictures (module_names.py)
            registry[name] = value
        object.__setattr__(self, name, value)  # also plain: reading self.w needs no __getattr__

    def parameters(self, recurse=True):
        """Every registered parameter here and below, as a list, a tied weight once
        (named_parameters, module_names.py, walks the tree for them)."""
        return [p for _, p in self.named_parameters(recurse=recurse)]

    def train(self, mode=True):
        """Set `training = mode` here and below (True: dropout on); returns self."""
        check_train_mode(mode)  # a bool: "False" is truthy (ValueError, as torch)
        for m in self.modules():
            m.training = mode
        return self

    def eval(self):
        return self.train(False)
