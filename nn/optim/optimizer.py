"""The `Optimizer` base class (PyTorch's torch.optim API): parameter groups, per-parameter
state, `add_param_group`, `zero_grad`, `state_dict` and `load_state_dict`.
"""
from collections import defaultdict

import numpy as np

from microtensor import Tensor

from .optimizer_checks import check_param_group


class Optimizer:
    """Holds `param_groups` (list of dicts with 'params' and hyper-parameters) and `state`
    ({parameter: its buffers}, a defaultdict(dict) as torch's: `opt.state[p]["exp_avg"]`).

    `params` is an iterable of Parameters, or of dicts `{"params": [...], "lr": ...}` whose
    keys override the defaults for that group (e.g. weight decay only on 2-D weights).
    Raises TypeError for a single Tensor (pass a list) or an entry that is not a floating-
    point Tensor, ValueError for an empty parameter list, a group without "params", a
    parameter given twice, an unknown hyper-parameter or one that is not a finite number.
    """

    def __init__(self, params, defaults):
        if isinstance(params, Tensor):  # iterating it would yield its rows, not parameters
            raise TypeError(f"{type(self).__name__}: params must be an iterable of Parameters "
                            "or of group dicts; got a single Tensor (wrap it in a list)")
        params = list(params)
        if not params:
            raise ValueError(f"{type(self).__name__}: got an empty parameter list")
        self.defaults = defaults
        self.param_groups = []
        self.state = defaultdict(dict)  # parameter (hashed by identity) -> its buffers
        for group in params if isinstance(params[0], dict) else [{"params": params}]:
            self.add_param_group(group)

    def add_param_group(self, param_group):
        """Add a group {"params": [...], option: value} to optimize too (torch's: a layer
        unfrozen during fine-tuning); options it leaves out take the defaults. Raises as
        the constructor does, and ValueError for a parameter another group holds."""
        self.param_groups.append(check_param_group(self, param_group))

    def zero_grad(self, set_to_none=True):
        """Forget every parameter's gradient before the next backward(): None, or zeros with
        set_to_none=False (torch's argument)."""
        for group in self.param_groups:
            for p in group["params"]:
                if set_to_none or p.grad is None:
                    p.grad = None
                else:
                    p.grad[...] = 0

    def _required_state(self, group):
        """The buffers each parameter's saved state must hold (SGD: none needed)."""
        return ()

    def _new_state(self, p, group):
        """p's state at its first step: a zero array of p's shape for each buffer that
        `_required_state` names after "step", then "step" = 0."""
        for key in self._required_state(group)[1:]:
            self.state[p][key] = np.zeros_like(p.data)
        self.state[p]["step"] = 0
        return self.state[p]

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
        state = {index[id(p)]: {name: value.copy() if isinstance(value, np.ndarray) else value
                                for name, value in buffers.items()}
                 for p, buffers in self.state.items() if id(p) in index and buffers}
        return {"state": dict(sorted(state.items())), "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Restore a `state_dict()` snapshot into this optimizer (built over the same parameters).

        The hyper-parameters of each group are taken from the snapshot (as PyTorch does; an
        option the snapshot lacks, as one saved before it existed, keeps this optimizer's) and
        every buffer is copied into this optimizer's parameters' dtype. Raises ValueError
        when the number of groups, a group's size, a parameter index or a buffer's shape
        does not match, naming it.
        """
        name = type(self).__name__
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(f"{name}.load_state_dict: the state dict has {len(saved_groups)} "
                             f"parameter groups, this optimizer {len(self.param_groups)}")
        params, owners, groups = [], [], []  # owners[i]: the group of params[i]
        for i, (saved, group) in enumerate(zip(saved_groups, self.param_groups)):
            if len(saved["params"]) != len(group["params"]):
                raise ValueError(f"{name}.load_state_dict: parameter group {i} has "
                                 f"{len(saved['params'])} parameters in the state dict, "
                                 f"{len(group['params'])} here")
            params += group["params"]
            owners += [i] * len(group["params"])
            # JSON turns tuples (betas) into lists
            groups.append({key: tuple(value) if isinstance(group.get(key), tuple) else value
                           for key, value in saved.items() if key != "params"})
        state = defaultdict(dict)
        for index, buffers in state_dict["state"].items():
            index = int(index)
            if not 0 <= index < len(params):
                raise ValueError(f"{name}.load_state_dict: state for parameter {index}, but "
                                 f"there are {len(params)} parameters")
            p = params[index]
            owner = owners[index]
            required = self._required_state({**self.param_groups[owner], **groups[owner]})
            missing = [key for key in required if key not in buffers]
            if missing:
                raise ValueError(f"{name}.load_state_dict: the state of parameter {index} lacks "
                                 f"{', '.join(map(repr, missing))}; expected "
                                 f"{', '.join(map(repr, required))}")
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
                state[p][key] = value
        for group, saved in zip(self.param_groups, groups):
            group.update(saved)
        self.state = state

    def _params_with_grad(self, group):
        return (p for p in group["params"] if p.grad is not None)
