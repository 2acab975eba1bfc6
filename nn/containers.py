"""The containers of modules: `ModuleList` and `Sequential`, with torch's names for their
entries (a `Sequential` slice keeps its names, a `ModuleList` slice numbers them from 0).

The API is PyTorch's (torch.nn.ModuleList, torch.nn.Sequential); the differences kept, where
torch's would lose or misnumber an entry, are in docs/conformance.md.
"""
from collections import OrderedDict

import numpy as np

from .module import Module


class ModuleList(Module):
    """A list of modules whose parameters are registered (`blocks.0...`, `blocks.1...`).

    Holds Modules only: anything else (a function such as F.relu, a Tensor) is a TypeError
    naming its position and type, as torch; a dropped function would change the model.
    Its entries are named "0", "1", ... in order, as torch's: a slice, a deletion or an
    insertion numbers them again from 0.
    """

    def __init__(self, modules=None):
        super().__init__()
        self.extend(() if modules is None else modules)  # None: empty, as torch

    def _check(self, module, position):
        if not isinstance(module, Module):
            raise TypeError(f"{type(self).__name__}: entry {position} is a "
                            f"{type(module).__name__} ({module!r:.60}), not a Module; wrap a "
                            "function in a Module (nn.ReLU(), nn.GELU(), ...)")
        return module

    def _reset(self, modules):
        """Renumber: the entries become attributes "0", "1", ... again, in this order."""
        for key in list(self._modules):
            delattr(self, key)
        for i, m in enumerate(modules):
            setattr(self, str(i), m)  # registered in _modules, in assignment order

    def append(self, module):
        setattr(self, str(len(self)), self._check(module, len(self)))
        return self

    def extend(self, modules):
        for m in modules:
            self.append(m)
        return self

    def _insert_at(self, index):
        """index as a position in [0, len]: IndexError outside it (torch's ModuleList.insert
        fails with a KeyError for a negative index and, past the end, makes an entry whose
        name is not its position)."""
        n = len(self)
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
            raise TypeError(f"{type(self).__name__}.insert: index must be an int; got "
                            f"{type(index).__name__}")
        if not 0 <= index <= n:
            raise IndexError(f"{type(self).__name__}.insert: index {index} is outside [0, {n}]")
        return int(index)

    def insert(self, index, module):
        entries = list(self)
        entries.insert(self._insert_at(index), self._check(module, index))
        self._reset(entries)

    def pop(self, key):
        """Remove the entry (or slice) at `key` and return it, as torch."""
        value = self[key]
        del self[key]
        return value

    def __iter__(self):
        # every entry, a module held twice at each place (named_children lists it once)
        return (m for m in self._modules.values() if m is not None)

    def __len__(self):
        return sum(1 for _ in self)

    def __getitem__(self, i):
        if isinstance(i, slice):  # torch's ModuleList numbers a slice's entries from 0
            return type(self)._from(enumerate(list(self)[i]))
        return list(self)[i]

    @classmethod
    def _from(cls, items):
        """A container of the same modules under the names (key, module) of `items` that
        leaves their parameters' names as they are (a slice is a view of the model, as
        torch's: assigning would rename the parameters)."""
        new = cls.__new__(cls)
        Module.__init__(new)
        for key, m in items:
            new._modules[str(key)] = m  # not setattr: that would name them anew
            object.__setattr__(new, str(key), m)  # and an attribute, as Module.__setattr__
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
    """Runs its modules one after another: `Sequential(a, b)(x) == b(a(x))`.

    Built from modules (named "0", "1", ...) or from one OrderedDict {name: module}, as
    torch's. As torch's, a slice keeps its entries' names (`seq[1:]` holds "1", "2", ...:
    its state_dict keys are the model's), assigning an entry keeps its name, and deleting
    one names the rest "0", "1", ... again. append names the new entry str(len): where that
    name is taken (after a slice) it is a ValueError (torch's replaces the entry there).
    """

    def __init__(self, *modules):
        Module.__init__(self)
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            for key, module in modules[0].items():
                self._add(key, module)
        else:
            self.extend(modules)

    def _add(self, key, module):
        if not isinstance(key, str):
            raise TypeError(f"Sequential: a module name must be a str; got "
                            f"{type(key).__name__}")
        if not key or "." in key or (key not in self._modules
                                     and hasattr(self, key)):
            raise KeyError(f"Sequential: {key!r} cannot name a module (empty, holding '.', or "
                           "an attribute of the module)")
        setattr(self, key, self._check(module, key))

    def __getitem__(self, i):
        if isinstance(i, slice):  # torch's Sequential keeps the names in a slice
            return type(self)._from(list(self._modules.items())[i])
        return list(self)[i]

    def __setitem__(self, i, module):
        if isinstance(i, slice):
            raise TypeError("Sequential: assign one entry at a time (an int index)")
        key = list(self._modules)[i]  # IndexError out of range, as a list
        setattr(self, key, self._check(module, i))  # the entry keeps its name (torch)

    def append(self, module):
        key = str(len(self))
        if key in self._modules:
            raise ValueError(f"Sequential.append: this Sequential (a slice?) already has an "
                             f"entry named {key!r}, the name append gives; build a new one: "
                             "Sequential(*seq, module)")
        setattr(self, key, self._check(module, key))
        return self

    def insert(self, index, module):
        """Insert at `index` in [-len, len] (as torch's; IndexError outside); returns self.
        ValueError where the names are not "0", "1", ... (a slice), which torch's would break."""
        n = len(self)
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
            raise TypeError(f"Sequential.insert: index must be an int; got "
                            f"{type(index).__name__}")
        if not -n <= index <= n:
            raise IndexError(f"Sequential.insert: index {index} is outside [-{n}, {n}]")
        if list(self._modules) != [str(i) for i in range(n)]:
            raise ValueError("Sequential.insert: the entries are not named 0, 1, ... (a "
                             "slice?); build a new one: Sequential(*seq)")
        entries = list(self)
        entries.insert(int(index) + n if index < 0 else int(index), self._check(module, index))
        self._reset(entries)
        return self

    def forward(self, x):
        for m in self:
            x = m(x)
        return x
