"""Stochastic gradient descent with momentum and L2 weight decay, PyTorch's update rule."""
import numpy as np

from microtensor import writing

from .optimizer import Optimizer, require_real


class SGD(Optimizer):
    """g ← ∇ + λ·p;   b ← μ·b + (1 − τ)·g (b = g at the first step);   p ← p − lr·b
    (just g when μ = 0; with nesterov, p ← p − lr·(g + μ·b)). τ is the dampening.

    Arguments in torch's order, so that torch's positional calls mean the same here.
    """

    def __init__(self, params, lr, momentum=0.0, dampening=0.0, weight_decay=0.0,
                 nesterov=False):
        require_real("SGD", lr=lr, momentum=momentum, dampening=dampening,
                     weight_decay=weight_decay)
        if lr < 0 or momentum < 0 or weight_decay < 0:
            raise ValueError(f"SGD: lr, momentum and weight_decay must be >= 0; got "
                             f"{lr}, {momentum}, {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("SGD: nesterov needs a momentum > 0 and zero dampening (as torch)")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=bool(nesterov)))

    def step(self):
        for group in self.param_groups:
            lr, mu, wd = group["lr"], group["momentum"], group["weight_decay"]
            dampening, nesterov = group["dampening"], group["nesterov"]
            for p in self._params_with_grad(group):
                g = p.grad + wd * p.data if wd else p.grad
                if mu:
                    state = self.state.setdefault(id(p), {})
                    buf = state.get("momentum_buffer")
                    if buf is None:  # an array of p's shape, 0-d too (never a Python float)
                        buf = state["momentum_buffer"] = np.array(g, dtype=p.dtype, copy=True)
                    else:  # in place, as torch's mul_/add_: the state keeps its array
                        buf *= mu
                        buf += (1 - dampening) * g
                    g = g + mu * buf if nesterov else buf
                with writing(p) as data:  # counts a version: a graph that saved p refuses
                    data -= lr * g
