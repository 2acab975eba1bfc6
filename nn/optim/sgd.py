"""Stochastic gradient descent with momentum and L2 weight decay, PyTorch's update rule."""
from .optimizer import Optimizer, require_real


class SGD(Optimizer):
    """g ← ∇ + λ·p;   b ← μ·b + g (b = g at the first step);   p ← p − lr·b  (just g when μ = 0)."""

    def __init__(self, params, lr, momentum=0.0, weight_decay=0.0):
        require_real("SGD", lr=lr, momentum=momentum, weight_decay=weight_decay)
        if lr < 0 or momentum < 0 or weight_decay < 0:
            raise ValueError(f"SGD: lr, momentum and weight_decay must be >= 0; got "
                             f"{lr}, {momentum}, {weight_decay}")
        super().__init__(params, dict(lr=lr, momentum=momentum, weight_decay=weight_decay))

    def step(self):
        for group in self.param_groups:
            lr, mu, wd = group["lr"], group["momentum"], group["weight_decay"]
            for p in self._params_with_grad(group):
                g = p.grad + wd * p.data if wd else p.grad
                if mu:
                    state = self.state.setdefault(id(p), {})
                    if "momentum_buffer" in state:
                        state["momentum_buffer"] = mu * state["momentum_buffer"] + g
                    else:
                        state["momentum_buffer"] = g.copy()
                    g = state["momentum_buffer"]
                p.data -= lr * g
