"""Saving and loading a module's values, beside the reading path's Module (nn/module.py):
buffers (tensors a module keeps and saves but does not learn), `state_dict`,
`load_state_dict`, and the errors and report that loading gives. The API is PyTorch's.
"""
from collections import OrderedDict, namedtuple

import numpy as np

from microtensor import Tensor, writing


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


class ModuleStateDict:
    """Mixed into Module: buffers, `state_dict` and `load_state_dict`, in torch's order."""

    def register_buffer(self, name, tensor, persistent=True):
        """Keep `tensor` (a Tensor or None) as `self.name`, saved in state_dict unless not
        `persistent`, never in parameters() (torch's). TypeError for another value, KeyError
        for a name that is empty, holds '.', or is an attribute already."""
        if not isinstance(name, str) or not name or "." in name:
            raise KeyError(f"register_buffer: the name must be a non-empty str without '.'; "
                           f"got {name!r}")
        if name not in self._buffers and hasattr(self, name):
            raise KeyError(f"register_buffer: attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"register_buffer: cannot assign a {type(tensor).__name__} as "
                            f"buffer '{name}' (Tensor or None expected)")
        self._buffers[name] = tensor
        object.__setattr__(self, name, tensor)  # read as a plain attribute (nn/module.py)
        non_persistent = self.__dict__.setdefault("_non_persistent_buffers", set())
        (non_persistent.discard if persistent else non_persistent.add)(name)

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        """(dotted name, Tensor) for every buffer, as named_parameters lists parameters."""
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        return [b for _, b in self.named_buffers(recurse=recurse)]

    def _saved(self):
        """(name, tensor) this module itself saves: its parameters, then persistent buffers."""
        skip = self.__dict__.get("_non_persistent_buffers", ())
        yield from ((n, p) for n, p in self._parameters.items() if p is not None)
        yield from ((n, b) for n, b in self._buffers.items() if b is not None and n not in skip)

    def state_dict(self, *, destination=None, prefix="", keep_vars=False):
        """{name: array} of every parameter and persistent buffer, in torch's order (each
        module's parameters, its buffers, then its children's) and with torch's names: a tied
        parameter under each of its names (the same array under both), a shared module under
        each path. Each array is a read-only view of the values: it shares their storage as
        torch's detached tensors do (an optimizer step shows in it; copy it to keep a
        snapshot), and writing into it is refused instead of bypassing the version counts
        (use load_state_dict). keep_vars=True: the Tensors themselves. destination: a mapping
        to fill and return. ValueError for a module that holds itself."""
        out = OrderedDict() if destination is None else destination
        for path, module in self.named_modules(remove_duplicate=False):
            for name, t in module._saved():
                key = prefix + (f"{path}.{name}" if path else name)  # prefix: "blocks.0."
                if keep_vars:
                    out[key] = t
                else:
                    view = t.data.view()
                    view.flags.writeable = False
                    out[key] = view
        return out

    def load_state_dict(self, state_dict, strict=True):
        """Copy arrays (or Tensors) into the parameters and buffers in place (optimizers keep
        their references), cast to their dtypes as torch's copy_. Each copy counts a version,
        as torch's: a graph built before refuses backward. The names are `state_dict()`'s: a
        tied parameter is read under each of its names, in that order (the last one wins, as
        torch). Returns torch's `_IncompatibleKeys(missing_keys, unexpected_keys)`, both in
        torch's order (module by module, as state_dict lists them).

        Raises TypeError for a state_dict that is not a mapping or a value that is not real
        numbers (complex, strings, objects), StateDictKeyError (a KeyError and a RuntimeError)
        for missing or unexpected names (when `strict`), and StateDictShapeError (a ValueError
        and a RuntimeError) for a shape that differs, naming the tensor and both shapes; all
        before copying anything (torch copies what fits, then raises).
        """
        if not hasattr(state_dict, "items"):
            raise TypeError(f"load_state_dict: expected a dict of name -> array; got "
                            f"{type(state_dict).__name__}")
        missing, unexpected, arrays = [], [], []
        for path, module in self.named_modules(remove_duplicate=False):
            prefix = f"{path}." if path else ""
            local = dict(module._saved())
            for name, t in local.items():
                if prefix + name not in state_dict:
                    missing.append(prefix + name)
                else:
                    arrays.append((t, prefix + name, state_dict[prefix + name]))
            for key in state_dict:  # as torch's _load_from_state_dict: this module's leftovers
                if key.startswith(prefix):
                    head, *rest = key[len(prefix):].split(".", 1)
                    if head not in (module._modules if rest else local):
                        unexpected.append(key)
        if strict and (missing or unexpected):
            raise StateDictKeyError(f"load_state_dict: missing {missing}, unexpected "
                                    f"{unexpected}")
        checked = [(t, _checked(name, value, t.shape)) for t, name, value in arrays]
        for t, array in checked:
            # in place, as torch's copy_ under no_grad, and counted: a graph that saved the
            # old values refuses backward instead of using the new ones (writing.py)
            with writing(t) as data:
                data[...] = array
        return _IncompatibleKeys(missing, unexpected)


def _checked(name, value, shape):
    """value as an array of `shape` with real numbers: StateDictShapeError or TypeError."""
    # a Tensor value too, as PyTorch's state dicts hold tensors (np.asarray of a Tensor
    # would build an object array and fail with a cryptic message)
    array = np.asarray(value.data if isinstance(value, Tensor) else value)
    if array.shape != shape:
        raise StateDictShapeError(f"load_state_dict: '{name}' has shape {array.shape} in the "
                                  f"state dict but {shape} in the model")
    if array.dtype.kind not in "biuf":  # numpy would cast strings or drop an imaginary part
        raise TypeError(f"load_state_dict: '{name}' has dtype {array.dtype}; expected real "
                        "numbers (floating-point, integer or bool values)")
    return array
