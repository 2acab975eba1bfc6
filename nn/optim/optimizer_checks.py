"""The optimizers' argument checks, torch's rules with one-line errors, kept off the reading
path (nn/optim/adamw.py, sgd.py): options that are real numbers in range, parameter groups.
"""
import numbers

import numpy as np

from microtensor import Tensor


def require_real(name, **options):
    """TypeError naming the first option that is not a real number (lr="x", say), before the
    optimizer compares it with 0 and Python's "'<' not supported" says nothing of which."""
    for key, value in options.items():
        if not isinstance(value, numbers.Real):
            raise TypeError(f"{name}: {key} must be a real number; got {value!r}")


def check_adamw(lr, betas, eps, weight_decay):
    """TypeError or ValueError naming AdamW's option out of torch's range."""
    if not isinstance(betas, (tuple, list)) or len(betas) != 2:
        raise TypeError(f"AdamW: betas must be a pair (beta1, beta2); got {betas!r}")
    require_real("AdamW", lr=lr, beta1=betas[0], beta2=betas[1], eps=eps,
                 weight_decay=weight_decay)
    if lr < 0 or eps < 0 or weight_decay < 0 or not all(0 <= b < 1 for b in betas):
        raise ValueError(f"AdamW: need lr, eps, weight_decay >= 0 and betas in [0, 1); got "
                         f"lr={lr}, betas={betas}, eps={eps}, weight_decay={weight_decay}")


def check_sgd(lr, momentum, dampening, weight_decay, nesterov):
    """TypeError or ValueError naming SGD's option out of torch's range."""
    require_real("SGD", lr=lr, momentum=momentum, dampening=dampening,
                 weight_decay=weight_decay)
    if lr < 0 or momentum < 0 or weight_decay < 0:
        raise ValueError(f"SGD: lr, momentum and weight_decay must be >= 0; got "
                         f"{lr}, {momentum}, {weight_decay}")
    if nesterov and (momentum <= 0 or dampening != 0):
        raise ValueError("SGD: nesterov needs a momentum > 0 and zero dampening (as torch)")


def check_param_group(optimizer, group):
    """The group as the optimizer keeps it: the defaults filled in, its params a list of
    floating-point leaf Tensors that no other group holds. TypeError or ValueError naming
    what is wrong (see Optimizer)."""
    name, defaults = type(optimizer).__name__, optimizer.defaults
    if not isinstance(group, dict):
        raise TypeError(f"{name}: a parameter group must be a dict; got {type(group).__name__}")
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
    # one Tensor as a group's params is that one parameter, as torch (iterating it would
    # give its rows: copies the step would update instead of the parameter)
    members = [members] if isinstance(members, Tensor) else list(members)
    seen = {id(p) for g in optimizer.param_groups for p in g["params"]}
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
    return {**defaults, **group, "params": members}
