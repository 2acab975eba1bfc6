"""torch.nn.Module's attribute rules and the rest of its surface, beside the reading path's
Module (nn/module.py): which registry an assignment goes to, reading and deleting registered
names, `apply`, `zero_grad`, `requires_grad_`; Parameter(tensor) and train()'s check.

As torch's __setattr__/__getattr__/__delattr__: a name first set as a plain attribute is
registered when it becomes a Parameter or Module (at the end of its registry), a registered
name keeps its place when re-assigned, and only None (or the same kind) may replace it.
"""
from microtensor import Tensor


def share_storage(param, tensor, requires_grad):
    """Parameter(t), as torch's: the same array and version count as t, so writes show in
    both."""
    param.data, param._version = tensor.data, tensor._version_box()  # rebinds: a new leaf
    param.requires_grad_(requires_grad)


def check_train_mode(mode):
    """Module.train(mode): ValueError for a mode that is not a bool ("False" is truthy), as
    torch."""
    if not isinstance(mode, bool):
        raise ValueError(f"training mode is expected to be boolean; got {mode!r}")


def refuse_cycle(module, prefix):
    """named_modules(remove_duplicate=False) met a module that holds itself: a ValueError
    (torch recurses until RecursionError)."""
    raise ValueError(f"{type(module).__name__} at '{prefix}' holds itself (a cycle): its "
                     "modules cannot be listed with duplicates (nor its state_dict)")


def registry_for(module, name, value):
    """The registry (`_parameters`, `_buffers`, `_modules`) that `module.name = value` writes,
    or None for a plain attribute; removes `name` from the other places it was, as torch.

    Raises TypeError for a value that is neither None nor the registry's kind over a
    registered name (a plain Tensor over a parameter would silently leave parameters(), the
    optimizer and state_dict()), AttributeError for a Parameter or Module assigned before
    Module.__init__() ran (as torch).
    """
    own = module.__dict__
    is_parameter = isinstance(value, Tensor) and value.is_parameter  # nn.Parameter
    is_module = isinstance(value, ModuleParity)  # nn.Module, which mixes this class in
    params, buffers, modules = own.get("_parameters"), own.get("_buffers"), own.get("_modules")
    if (is_parameter or is_module) and params is None:
        raise AttributeError(f"cannot assign {type(value).__name__} '{name}' before "
                             "Module.__init__() call")
    if is_parameter:
        target = params
    elif params is not None and name in params:
        if value is not None:
            raise TypeError(f"cannot assign a {type(value).__name__} as parameter '{name}' "
                            "(nn.Parameter or None expected); to load values use "
                            "load_state_dict")
        return params
    elif is_module:
        target = modules
    elif modules is not None and name in modules:
        if value is not None:
            raise TypeError(f"cannot assign a {type(value).__name__} as child module '{name}' "
                            "(nn.Module or None expected)")
        return modules
    elif buffers is not None and name in buffers:
        if value is not None and not isinstance(value, Tensor):
            raise TypeError(f"cannot assign a {type(value).__name__} as buffer '{name}' "
                            "(Tensor or None expected)")
        return buffers
    else:
        return None
    for other in (own, params, buffers, modules):
        if other is not target:
            other.pop(name, None)
    return target


class ModuleParity:
    """Mixed into Module: reading and deleting a registered name, and the rest of torch's
    surface: `apply`, `zero_grad`, `requires_grad_`."""

    def __getattr__(self, name):  # only where Python's own lookup found nothing
        own = self.__dict__
        for registry in ("_parameters", "_buffers", "_modules"):
            if name in own.get(registry, ()):
                return own[registry][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        registries = [r for r in (self._parameters, self._buffers, self._modules) if name in r]
        for registry in registries:
            del registry[name]
        if name in self.__dict__ or not registries:  # Module.__setattr__ keeps a copy there
            object.__delattr__(self, name)

    def requires_grad_(self, requires_grad=True):
        """Set `requires_grad` of every parameter (False freezes them); returns self. TypeError
        for a flag that is not a bool ("False" is truthy), as torch."""
        if not isinstance(requires_grad, bool):
            raise TypeError(f"requires_grad_(): argument 'requires_grad' must be bool, not "
                            f"{type(requires_grad).__name__}")
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def apply(self, fn):
        """fn on every sub-module (children first, each once, as torch), then this one."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    def zero_grad(self, set_to_none=True):
        """Forget every parameter's gradient: None, or zeros with set_to_none=False (torch)."""
        for p in self.parameters():
            if set_to_none or p.grad is None:
                p.grad = None
            else:
                p.grad[...] = 0
