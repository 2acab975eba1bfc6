"""AdamW: Adam with decoupled weight decay (Loshchilov & Hutter 2019), PyTorch's update rule.

Decay shrinks the weight directly, p ← p − lr·λ·p, instead of being added to the gradient
(which Adam would rescale): the "W" in AdamW, and it is multiplied by the learning rate.
"""
import math

import numpy as np

from microtensor import writing

from .optimizer import Optimizer, require_real


class AdamW(Optimizer):
    """One step, at step count t:

        p ← p − lr·λ·p
        m ← β₁m + (1 − β₁)g            v ← β₂v + (1 − β₂)g²
        p ← p − lr · (m / (1 − β₁ᵗ)) / (√(v / (1 − β₂ᵗ)) + ε)
    """

    state_keys = ("step", "exp_avg", "exp_avg_sq")  # what each parameter's saved state holds

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
        if not isinstance(betas, (tuple, list)) or len(betas) != 2:
            raise TypeError(f"AdamW: betas must be a pair (beta1, beta2); got {betas!r}")
        require_real("AdamW", lr=lr, beta1=betas[0], beta2=betas[1], eps=eps,
                     weight_decay=weight_decay)
        if lr < 0 or eps < 0 or weight_decay < 0 or not all(0 <= b < 1 for b in betas):
            raise ValueError(f"AdamW: need lr, eps, weight_decay >= 0 and betas in [0, 1); got "
                             f"lr={lr}, betas={betas}, eps={eps}, weight_decay={weight_decay}")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay))
        self._buffers = {}  # (dtype, slot) -> scratch array for `step` (not state: nothing to save)

    def step(self):
        for group in self.param_groups:
            lr, (beta1, beta2) = group["lr"], group["betas"]
            eps, wd = group["eps"], group["weight_decay"]
            for p in self._params_with_grad(group):
                state = self.state.get(id(p))
                if state is None:
                    state = self.state[id(p)] = {
                        "step": 0, "exp_avg": np.zeros_like(p.data),
                        "exp_avg_sq": np.zeros_like(p.data)}
                state["step"] += 1
                t, m, v, g = state["step"], state["exp_avg"], state["exp_avg_sq"], p.grad
                if wd:
                    with writing(p) as data:  # each write counts a version (writing.py)
                        data *= 1 - lr * wd
                # the formulas above, with PyTorch's order where float32 can overflow:
                # (1 − β₂)·g before ·g, so g = 2e19 gives v = 4e35, as torch, not g² = inf;
                # each term written into scratch arrays, not fresh temporaries
                tmp, tmp2 = self._scratch(p.data, 0), self._scratch(p.data, 1)
                m *= beta1
                m += np.multiply(g, 1 - beta1, out=tmp)         # m ← β₁m + (1 − β₁)g
                v *= beta2
                np.multiply(g, 1 - beta2, out=tmp)
                tmp *= g
                v += tmp                                        # v ← β₂v + (1 − β₂)g·g
                np.sqrt(v, out=tmp)
                tmp /= math.sqrt(1 - beta2 ** t)
                tmp += eps                                      # denom = √v / √(1 − β₂ᵗ) + ε
                np.multiply(m, -lr / (1 - beta1 ** t), out=tmp2)
                tmp2 /= tmp
                with writing(p) as data:
                    data += tmp2

    def _scratch(self, like, slot):
        """An uninitialised array shaped and typed as `like`: a view of one buffer per dtype
        and slot, grown to the largest parameter, so the step allocates nothing after the first."""
        key = (like.dtype, slot)
        buffer = self._buffers.get(key)
        if buffer is None or buffer.size < like.size:
            buffer = self._buffers[key] = np.empty(like.size, like.dtype)
        return buffer[:like.size].reshape(like.shape)

