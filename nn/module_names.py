"""The names a module tree gives itself, beside the reading path's Module (nn/module.py): the
walk over the tree (`named_modules`, `named_children`, `named_parameters`), each module's
dotted path (`blocks.0.attn`), each parameter's full name (`blocks.0.attn.q_proj.weight`),
the printed tree and its size.

Names are fixed when the tree is built: assigning a sub-module gives it, and everything
below it, its path, and a parameter without a name its full name. Calling a module runs
`forward` inside a scope of that path, which every op records for the graph pictures
(viz/); calling never renames anything, so a graph recorded earlier keeps its names.
"""
from .module_parity import refuse_cycle


class ModuleNames:
    """Mixed into Module: the walk over the tree, `_path`, the naming of what is assigned,
    `__repr__`, `num_parameters`."""

    _path = ""  # dotted path from the root of the tree this module was built into

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
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def _named_members(self, registry, prefix, recurse, remove_duplicate):
        """(dotted name, value) for every non-None value of `registry` ("_parameters" or
        "_buffers") here and, with recurse, below: named_parameters' and named_buffers' walk."""
        modules = (self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
                   if recurse else [(prefix, self)])
        seen = set()
        for path, module in modules:
            for name, value in getattr(module, registry).items():
                if value is not None and value not in seen:
                    if remove_duplicate:
                        seen.add(value)
                    yield (f"{path}.{name}" if path else name), value

    def _name_new(self, name, value):
        """Name `value`, about to be registered as `self.name`: a module new to this tree (a
        shared one keeps the path where it was first assigned, as named_modules lists it)
        and all below it, or a parameter without a name (a tied weight keeps its first)."""
        if isinstance(value, ModuleNames):
            if not any(m is value for m in self.modules()):
                value._name_tree(self._child_path(name))
        elif getattr(value, "is_parameter", False) and value.name is None:
            value.name = self._child_path(name)

    def _child_path(self, name):
        return f"{self._path}.{name}" if self._path else name

    def _name_tree(self, path):
        """Give this module the dotted `path`, each sub-module its path below it, and each
        parameter its full name, as `named_parameters()` of this module lists them."""
        for sub_path, module in self.named_modules(prefix=path):
            object.__setattr__(module, "_path", sub_path)
        for name, param in self.named_parameters():
            param.name = f"{path}.{name}" if path else name

    def num_parameters(self):
        """Total number of learnable scalars (shared weights counted once)."""
        return sum(p.size for p in self.parameters())

    def extra_repr(self):
        return ""

    def __repr__(self):
        children = [f"  ({n}): " + repr(m).replace("\n", "\n  ")
                    for n, m in self._modules.items() if m is not None]  # each place, as torch
        head = f"{type(self).__name__}({self.extra_repr()}"
        return head + (")" if not children else "\n" + "\n".join(children) + "\n)")
