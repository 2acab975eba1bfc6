"""The error function erf and the normal density φ on numpy arrays, for the exact GELU (numpy has
no erf).

erf: the Chebyshev fit of erfc in Press et al., "Numerical Recipes" (3rd ed.) §6.2.2,
accurate to 1.2e-7 everywhere:
    erfc(z) ≈ t·exp(−z² + P(t)),   t = 1/(1 + z/2),   z = |x|,   P(t) = c₀ + c₁t + … + c₉t⁹
    erf(x) = sign(x)·(1 − erfc(|x|))
"""
import math

import numpy as np

ERFC_COEFFS = (-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807,
               -1.13520398, 1.48851587, -0.82215223, 0.17087277)  # c₀ … c₉
INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)


def erf(x):
    """erf(x) elementwise, to 1.2e-7; x any float array, result of the same shape and dtype.

    |x| is capped at 9 (erf is ±1 to float precision there) so that exp never produces
    subnormal floats, which are slow. The result is built in one temporary array,
    updated in place, because GELU calls this on every activation of a layer.
    """
    z = np.minimum(np.abs(x), 9)
    t = 1 / (1 + 0.5 * z)
    p = t * ERFC_COEFFS[9]  # Horner's rule: P(t) = c₀ + t(c₁ + t(c₂ + … + t·c₉))
    for c in ERFC_COEFFS[8:0:-1]:
        p += c
        p *= t
    p += ERFC_COEFFS[0]
    p -= z * z
    np.exp(p, out=p)
    p *= t  # erfc(|x|)
    np.subtract(1, p, out=p)
    return np.copysign(p, x, out=p)


def normal_pdf(x):
    """φ(x) = exp(−x²/2)/√(2π) elementwise; x² capped at 160 so that exp stays out of subnormal
    floats."""
    return INV_SQRT_2PI * np.exp(-0.5 * np.minimum(x * x, 160))
