"""Layer normalization over the last dim: y = (x − μ)/√(σ² + ε) ⊙ w + b (Ba, Kiros & Hinton 2016;
notes 3.6).

μ and σ² are each row's mean and biased variance (divide by n, as PyTorch). Applied by
F.layer_norm (parity/surface/layer_norm.py: torch's other forms), which nn.LayerNorm calls.
"""
import math

from ..autograd import Function
from ..parity.low_precision import computed_in_float32
from ..parity.summation import column_dot
from ..parity.variance import standardize
from .rows import row_dot, row_sum


@computed_in_float32  # float16 as torch: computed in float32, rounded once
class LayerNorm(Function):
    """x [..., n], weight [n], bias [n] -> y [..., n], each row of n normalized on its own.

    Backward, with x̂ = (x − μ)·r, r = 1/√(σ² + ε) (forward: y = x̂ ⊙ w + b), and ĝ = g ⊙ w:

        ∂L/∂x = r · (ĝ − mean(ĝ) − x̂ ⊙ mean(ĝ ⊙ x̂))
        ∂L/∂w = Σ g ⊙ x̂        ∂L/∂b = Σ g       (sums over the leading dims)

    Why: μ and r depend on every x of the row. One row of n, step by step, using
    σ² = Σᵢ(xᵢ − μ)²/n, r = (σ² + ε)^(−½), Σᵢ(xᵢ − μ) = 0 and xᵢ − μ = x̂ᵢ/r:

        ∂(xᵢ − μ)/∂xⱼ = δᵢⱼ − 1/n                                        (∂μ/∂xⱼ = 1/n)
        ∂σ²/∂xⱼ = (2/n)·Σᵢ(xᵢ − μ)(δᵢⱼ − 1/n) = 2(xⱼ − μ)/n
        ∂r/∂xⱼ  = −½r³·∂σ²/∂xⱼ = −r³(xⱼ − μ)/n = −r²x̂ⱼ/n
        ∂x̂ᵢ/∂xⱼ = r(δᵢⱼ − 1/n) + (xᵢ − μ)·∂r/∂xⱼ                         (product rule)
                = r(δᵢⱼ − 1/n) + (x̂ᵢ/r)(−r²x̂ⱼ/n) = r(δᵢⱼ − 1/n − x̂ᵢx̂ⱼ/n)
        ∂L/∂xⱼ  = Σᵢ ĝᵢ ∂x̂ᵢ/∂xⱼ = r(ĝⱼ − Σᵢĝᵢ/n − x̂ⱼ·Σᵢĝᵢx̂ᵢ/n): the first line above
    """

    op = "layer_norm"

    def __init__(self, eps=1e-5):
        self.eps = eps

    def forward(self, x, weight, bias):
        # per row: μ = mean(x), σ² = mean((x − μ)²), r = 1/√(σ² + ε) and x̂ = (x − μ)·r,
        # computed as torch does, so that float32 keeps its precision (parity/variance.py)
        xhat, rstd = standardize(x, self.eps)  # x̂ [..., n], r [..., 1]
        self.save(xhat=xhat, rstd=rstd, weight=weight)
        y = xhat * weight
        y += bias  # b; without one (bias=False) the constant 0 (parity/surface/layer_norm.py)
        return y

    def backward(self, g):
        need_x, need_w, _ = self.needs_input_grad
        xhat, rstd, weight = self.saved["xhat"], self.saved["rstd"], self.saved["weight"]
        n, gx, gw = xhat.shape[-1], None, None
        if need_x:
            gx = g * weight  # ĝ
            # mean(ĝ ⊙ x̂) along the last axis [..., 1] (ops/rows.py), taken before gx changes
            mean_gxhat = row_dot(gx, xhat) / n
            gx -= row_sum(gx) / n  # ĝ − mean(ĝ)
            gx -= xhat * mean_gxhat
            gx *= rstd
        if need_w:  # Σ over the rows of g ⊙ x̂, in one pass (in blocks if long, as torch)
            rows = math.prod(xhat.shape[:-1])
            gw = column_dot(g.reshape(rows, n), xhat.reshape(rows, n))
        return gx, gw, g  # ∂L/∂b = g: backward() sums it to b's shape [n] (unbroadcast)
