"""The `Optimizer` base class (PyTorch's torch.optim API).

It holds parameter groups and per-parameter state, and gives `zero_grad` and `state_dict`.
"""
import numbers

import numpy as np

from microtensor import Tensor


class Optimizer:
    """Holds `param_groups` (list of dicts with 'params' and hyper-parameters) and `state`.

    `params` is an iterable of Parameters, or of dicts `{"params": [...], "lr": ...}` whose
    keys override the defaults for that group (e.g. weight decay only on 2-D weights).
    Raises TypeError for a single Tensor (pass a list) or an entry that is not a floating-
    point Tensor, ValueError for an empty parameter list, a group without "params", a
    parameter given twice, an unknown hyper-parameter or one that is not a finite number.
    """

    state_keys = ()  # the buffers each parameter's state must hold once saved (SGD: none needed)

    def __init__(self, params, defaults):
        name = type(self).__name__
        if isinstance(params, Tensor):  # iterating it would yield its rows, not parameters
            raise TypeError(f"{name}: params must be an iterable of Parameters or of group "
                            "dicts; got a single Tensor (wrap it in a list)")
        params = list(params)
        if not params:
            raise ValueError(f"{name}: got an empty parameter list")
        groups = params if isinstance(params[0], dict) else [{"params": params}]
        self.defaults = defaults
        self.param_groups = []
        seen = set()
        for group in groups:
            unknown = set(group) - set(defaults) - {"params"}
            if unknown:
                raise ValueError(f"{name}: unknown option(s) {sorted(unknown)} "
                                 f"in a parameter group; known: {sorted(defaults)}")
            if "params" not in group:
                raise ValueError(f"{name}: a parameter group needs a 'params' entry; got keys "
                                 f"{sorted(group)}")
            for key, value in {**defaults, **group}.items():
                if key != "params" and not np.isfinite(value).all():
                    raise ValueError(f"{name}: {key} must be a finite number; got {value!r}")
            members = group["params"]
            # one Tensor as a group's params is that one parameter, as torch (iterating it
            # would give its rows: copies the step would update instead of the parameter)
            members = [members] if isinstance(members, Tensor) else list(members)
            for p in members:
                if not isinstance(p, Tensor) or not np.issubdtype(p.dtype, np.floating):
                    raise TypeError(f"{name}: parameters must be floating-point Tensors; got "
                                    f"{type(p).__name__}" + (f" of dtype {p.dtype}"
                                                             if isinstance(p, Tensor) else ""))
                if not p.is_leaf:  # an op's output: updating it changes nothing the model uses
                    raise ValueError(f"{name}: can't optimize a non-leaf Tensor (made by "
                                     f"'{p.grad_fn.op}'); pass the parameters themselves")
                if id(p) in seen:  # it would be updated twice per step
                    raise ValueError(f"{name}: a parameter of shape {p.shape} appears twice")
                seen.add(id(p))
            self.param_groups.append({**defaults, **group, "params": members})
        self.state = {}  # id(param) -> that parameter's buffers

    def zero_grad(self, set_to_none=True):
        """Forget every parameter's gradient before the next backward(): None, or zeros with
        set_to_none=False (torch's argument)."""
        for group in self.param_groups:
            for p in group["params"]:
                if set_to_none or p.grad is None:
                    p.grad = None
                else:
                    p.grad[...] = 0

    def state_dict(self):
        """A snapshot of the optimizer, in PyTorch's layout:

            {"state": {index: {"step": int, "exp_avg": array, ...}},
             "param_groups": [{"lr": ..., "betas": ..., "params": [index, ...]}, ...]}

        Parameters are numbered 0, 1, ... in the order of the groups (they are objects, so a
        saved file names them by position). Only parameters that have state appear in
        "state". The arrays are copies, so the snapshot stays as it was when training goes
        on (PyTorch returns references instead).
        """
        index, groups = {}, []
        for group in self.param_groups:
            saved = {key: value for key, value in group.items() if key != "params"}
            saved["params"] = [index.setdefault(id(p), len(index)) for p in group["params"]]
            groups.append(saved)
        state = {index[key]: {name: value.copy() if isinstance(value, np.ndarray) else value
                              for name, value in buffers.items()}
                 for key, buffers in self.state.items() if key in index}
        return {"state": dict(sorted(state.items())), "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Restore a `state_dict()` snapshot into this optimizer (built over the same parameters).

        The hyper-parameters of each group are taken from the snapshot (as PyTorch does) and
        every buffer is copied into this optimizer's parameters' dtype. Raises ValueError
        when the number of groups, a group's size, a parameter index or a buffer's shape
        does not match, naming it.
        """
        name = type(self).__name__
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(f"{name}.load_state_dict: the state dict has {len(saved_groups)} "
                             f"parameter groups, this optimizer {len(self.param_groups)}")
        params = []
        for i, (saved, group) in enumerate(zip(saved_groups, self.param_groups)):
            if len(saved["params"]) != len(group["params"]):
                raise ValueError(f"{name}.load_state_dict: parameter group {i} has "
                                 f"{len(saved['params'])} parameters in the state dict, "
                                 f"{len(group['params'])} here")
            params += group["params"]
        state = {}
        for index, buffers in state_dict["state"].items():
            index = int(index)
            if not 0 <= index < len(params):
                raise ValueError(f"{name}.load_state_dict: state for parameter {index}, but "
                                 f"there are {len(params)} parameters")
            p = params[index]
            missing = [key for key in self.state_keys if key not in buffers]
            if missing:
                raise ValueError(f"{name}.load_state_dict: the state of parameter {index} lacks "
                                 f"{', '.join(map(repr, missing))}; expected "
                                 f"{', '.join(map(repr, self.state_keys))}")
            state[id(p)] = {}
            for key, value in buffers.items():
                if key == "step":  # a count, kept a Python int (a file may hold a 0-d array)
                    value = int(np.asarray(value).item())
                else:  # a buffer: an array of p's shape and dtype, 0-d too, never a float
                    # (a float would make `m *= beta1` rebind a local and freeze the state)
                    value = np.asarray(value.data if isinstance(value, Tensor) else value)
                    if value.shape != p.shape:
                        raise ValueError(f"{name}.load_state_dict: '{key}' of parameter "
                                         f"{index} has shape {value.shape}, the parameter "
                                         f"{p.shape}")
                    value = value.astype(p.dtype, copy=True)
                state[id(p)][key] = value
        for saved, group in zip(saved_groups, self.param_groups):
            for key, value in saved.items():
                if key != "params":  # JSON turns tuples (betas) into lists
                    group[key] = tuple(value) if isinstance(group.get(key), tuple) else value
        self.state = state

    def _params_with_grad(self, group):
        return (p for p in group["params"] if p.grad is not None)


def require_real(name, **options):
    """TypeError naming the first option that is not a real number (lr="x", say), before the
    optimizer compares it with 0 and Python's "'<' not supported" says nothing of which."""
    for key, value in options.items():
        if not isinstance(value, numbers.Real):
            raise TypeError(f"{name}: {key} must be a real number; got {value!r}")
