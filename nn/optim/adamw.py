"""AdamW: Adam (Kingma & Ba 2015) with decoupled weight decay (Loshchilov & Hutter 2019),
PyTorch's update rule. m and v, running averages of the gradient and its square, step each
weight by about lr whatever the gradient's scale (m/√v); decay shrinks the weight directly,
p ← p − lr·λ·p, not through the gradient (which Adam would rescale): the "W" in AdamW.
"""
import math

import numpy as np

from microtensor import writing

from .optimizer import Optimizer
from .optimizer_checks import check_adamw


class AdamW(Optimizer):
    """One step, at step count t, for each parameter p with gradient g:

        p ← p − lr·λ·p
        m ← β₁m + (1 − β₁)g            v ← β₂v + (1 − β₂)g²
        p ← p − lr · (m / (1 − β₁ᵗ)) / (√(v / (1 − β₂ᵗ)) + ε)

    m and v start at 0, so their weights on past gradients sum to 1 − βᵗ, not 1: ÷(1 − βᵗ)
    fixes that (for a constant g, m̂ = g exactly). torch's options: amsgrad divides by the
    largest v so far; maximize climbs (g ← −g). Errors: optimizer_checks.py.
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False):
        check_adamw(lr, betas, eps, weight_decay)  # torch's ranges: optimizer_checks.py
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, amsgrad=bool(amsgrad),
                                      weight_decay=weight_decay, maximize=bool(maximize)))

    def step(self, closure=None):
        loss = None if closure is None else closure()
        for group in self.param_groups:
            lr, (beta1, beta2), eps, wd = (group[k] for k in ("lr", "betas", "eps", "weight_decay"))
            for p in self._params_with_grad(group):
                g = -p.grad if group["maximize"] else p.grad
                # p's state: {} before its first step, then step and the zero-started m, v
                s = self.state[p] or self._new_state(p, group)  # (optimizer.py)
                m, v, t = s["exp_avg"], s["exp_avg_sq"], s["step"] + 1
                s["step"] = t
                with writing(p) as data:  # p's array; an in-place write its version counter sees
                    data *= 1 - lr * wd                                 # p ← p − lr·λ·p
                    m *= beta1
                    m += (1 - beta1) * g                                # m ← β₁m + (1 − β₁)g
                    v *= beta2
                    v += (1 - beta2) * g * g                            # v ← β₂v + (1 − β₂)g²
                    if group["amsgrad"]:
                        v = np.maximum(s["max_exp_avg_sq"], v, out=s["max_exp_avg_sq"])
                    denom = np.sqrt(v) / math.sqrt(1 - beta2 ** t) + eps  # √(v/(1 − β₂ᵗ)) + ε
                    data -= lr / (1 - beta1 ** t) * m / denom           # p ← p − lr·m̂/denom
        return loss

    def _required_state(self, group):  # the buffers Optimizer._new_state makes at step 1
        return ("step", "exp_avg", "exp_avg_sq") + (("max_exp_avg_sq",) if group["amsgrad"] else ())
