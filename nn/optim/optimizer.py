"""The `Optimizer` base class: parameter groups, per-parameter state and `zero_grad` (PyTorch's torch.optim API)."""


class Optimizer:
    """Holds `param_groups` (list of dicts with 'params' and hyper-parameters) and `state`.

    `params` is an iterable of Parameters, or of dicts `{"params": [...], "lr": ...}` whose
    keys override the defaults for that group (e.g. weight decay only on 2-D weights).
    Raises ValueError for an empty parameter list or an unknown hyper-parameter.
    """

    def __init__(self, params, defaults):
        params = list(params)
        if not params:
            raise ValueError(f"{type(self).__name__}: got an empty parameter list")
        groups = params if isinstance(params[0], dict) else [{"params": params}]
        self.defaults = defaults
        self.param_groups = []
        for group in groups:
            unknown = set(group) - set(defaults) - {"params"}
            if unknown:
                raise ValueError(f"{type(self).__name__}: unknown option(s) {sorted(unknown)} "
                                 f"in a parameter group; known: {sorted(defaults)}")
            self.param_groups.append({**defaults, **group, "params": list(group["params"])})
        self.state = {}  # id(param) -> that parameter's buffers

    def zero_grad(self):
        """Forget every parameter's gradient before the next backward()."""
        for group in self.param_groups:
            for p in group["params"]:
                p.grad = None

    def _params_with_grad(self, group):
        return (p for p in group["params"] if p.grad is not None)
