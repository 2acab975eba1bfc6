"""Stochastic gradient descent with momentum and L2 weight decay, PyTorch's update rule."""
import numpy as np

from microtensor import writing

from .optimizer import Optimizer
from .optimizer_checks import check_sgd


class SGD(Optimizer):
    """g ← ∇ + λ·p;   b ← μ·b + (1 − τ)·g (b = g at the first step);   p ← p − lr·b
    (just g when μ = 0; with nesterov, p ← p − lr·(g + μ·b)). τ is the dampening;
    maximize climbs the objective (∇ ← −∇). step(closure) calls closure() first and returns
    its loss.

    Arguments in torch's order and with its defaults, so that torch's calls mean the same
    here. Raises TypeError or ValueError naming an option out of range.
    """

    def __init__(self, params, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0,
                 nesterov=False, *, maximize=False):
        check_sgd(lr, momentum, dampening, weight_decay, nesterov)  # optimizer_checks.py
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=bool(nesterov),
                                      maximize=bool(maximize)))

    def step(self, closure=None):
        loss = None if closure is None else closure()
        for group in self.param_groups:
            lr, mu, wd = group["lr"], group["momentum"], group["weight_decay"]
            dampening, nesterov = group["dampening"], group["nesterov"]
            for p in self._params_with_grad(group):
                g = -p.grad if group["maximize"] else p.grad
                g = g + wd * p.data if wd else g
                if mu:
                    state = self.state[p]
                    buf = state.get("momentum_buffer")
                    if buf is None:  # an array of p's shape, 0-d too (never a Python float)
                        buf = state["momentum_buffer"] = np.array(g, dtype=p.dtype, copy=True)
                    else:  # in place, as torch's mul_/add_: the state keeps its array
                        buf *= mu
                        buf += (1 - dampening) * g
                    g = g + mu * buf if nesterov else buf
                with writing(p) as data:  # counts a version: a graph that saved p refuses
                    data -= lr * g
        return loss
