"""Layer normalization over the last dims: y = (x − μ)/√(σ² + ε) ⊙ w + b (Ba, Kiros & Hinton 2016;
notes 3.6).

σ² is the biased variance (divide by n), as PyTorch, computed in two passes
(mean first, then the mean of squared deviations) so that float32 rows with a large
common offset keep their precision, which the one-pass E[x²] − E[x]² loses. Each row is
first shifted by its first element (Chan, Golub & LeVeque 1983, "Algorithms for computing
the sample variance"), so that a constant row gives x − μ = 0 exactly, as PyTorch.
"""
import numpy as np

from ..autograd import Function


class LayerNorm(Function):
    """x [..., *S], weight [*S], bias [*S] -> y [..., *S], normalizing over the n_dims dims S.

    Backward, with x̂ = (x − μ)·r, r = 1/√(σ² + ε), and ĝ = g ⊙ w:

        ∂L/∂x = r · (ĝ − mean(ĝ) − x̂ ⊙ mean(ĝ ⊙ x̂))
        ∂L/∂w = Σ g ⊙ x̂        ∂L/∂b = Σ g       (sums over the leading dims)

    The two subtracted terms are there because μ and σ depend on every x of the row:
    moving one x shifts the mean (−mean(ĝ)) and rescales the spread (−x̂·mean(ĝx̂)).
    """

    op = "layer_norm"

    def __init__(self, n_dims, eps=1e-5):
        super().__init__()
        self.axes = tuple(range(-n_dims, 0))
        self.eps = eps

    def forward(self, x, weight, bias):
        shifted = x - x[(...,) + (slice(0, 1),) * len(self.axes)]  # x − (first of its row)
        xc = shifted - shifted.mean(axis=self.axes, keepdims=True)  # x − μ
        var = (xc * xc).mean(axis=self.axes, keepdims=True)
        rstd = 1 / np.sqrt(var + self.eps)
        xhat = xc * rstd
        self.save(xhat=xhat)  # ∂L/∂x and ∂L/∂w use x̂
        self.save(rstd=rstd, weight=weight, for_input=0)
        return xhat * weight + bias

    def backward(self, g):
        need_x, need_weight, _ = self.needs_input_grad
        xhat = self.saved["xhat"]
        gx = None
        if need_x:
            ghat = g * self.saved["weight"]
            gx = self.saved["rstd"] * (ghat - ghat.mean(axis=self.axes, keepdims=True)
                                       - xhat * (ghat * xhat).mean(axis=self.axes, keepdims=True))
        gw = g * xhat if need_weight else None  # the engine sums it over the leading dims
        return gx, gw, g
