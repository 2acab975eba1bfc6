"""`a ** b` with a Tensor exponent: both sides differentiable (torch.pow(Tensor, Tensor)).

z = aᵇ;   ∂L/∂a = g ⊙ b·aᵇ⁻¹,   ∂L/∂b = g ⊙ aᵇ·ln a
As torch: ∂L/∂a is 0 where b = 0 (a⁰ = 1 is constant, even at a = 0), and ∂L/∂b is 0 where
a = 0 and b ≥ 0 (0ᵇ is 0 or 1 there, flat in b; ln 0 = −∞ would make 0·∞ = NaN).
"""
import numpy as np

from ..autograd import Function


class PowTensor(Function):
    """z = aᵇ, a and b broadcasting;   ∂L/∂a = g ⊙ b·aᵇ⁻¹,   ∂L/∂b = g ⊙ aᵇ·ln a"""

    op = "pow"

    def forward(self, a, b):
        with np.errstate(divide="ignore", invalid="ignore"):  # 0⁻¹ = inf, (−1)^½ = NaN
            z = a ** b
        self.save(a=a, b=b, z=z)
        return z

    def backward(self, g):
        a, b, z = self.saved["a"], self.saved["b"], self.saved["z"]
        need_a, need_b = self.needs_input_grad
        ga = gb = None
        with np.errstate(divide="ignore", invalid="ignore"):  # 0⁻¹ is inf, ln of a < 0 NaN
            if need_a:
                ga = np.where(b == 0, 0, g * b * a ** (b - 1))
            if need_b:
                gb = np.where((a == 0) & (b >= 0), 0, g * z * np.log(a))
        return ga, gb
