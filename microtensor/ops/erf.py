"""The error function erf and the normal density φ on numpy arrays, for the exact GELU (numpy has
no erf).

erf in float64: Python's math.erf on each element, exact to machine precision (float64 is
for gradient checks and comparisons with PyTorch; about 2x the time of the fit below).
erf in other dtypes, fast: the Chebyshev fit of erfc in Press et al., "Numerical Recipes"
(3rd ed.) §6.2.2, accurate to 1.2e-7 everywhere (float32's precision):
    erfc(z) ≈ t·exp(−z² + P(t)),   t = 1/(1 + z/2),   z = |x|,   P(t) = c₀ + c₁t + … + c₉t⁹
    erf(x) = sign(x)·(1 − erfc(|x|))
"""
import math

import numpy as np

ERFC_COEFFS = (-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807,
               -1.13520398, 1.48851587, -0.82215223, 0.17087277)  # c₀ … c₉
INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)
_exact_erf = np.frompyfunc(math.erf, 1, 1)  # the C library's erf, correct to about 1 ulp


def erf(x):
    """erf(x) elementwise, exact in float64, to 1.2e-7 otherwise; x any float array, result of
    the same shape and dtype.

    |x| is capped at 9 (erf is ±1 to float precision there) so that exp never produces
    subnormal floats, which are slow. The result is built in one temporary array,
    updated in place, because GELU calls this on every activation of a layer.
    """
    if x.dtype == np.float64:
        return np.asarray(_exact_erf(x), dtype=np.float64)  # a 0-d input gives a Python float
    if x.ndim == 0:  # numpy scalars cannot be updated in place, as below
        return erf(x.reshape(1)).reshape(())
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
    """φ(x) = exp(−x²/2)/√(2π), elementwise.

    Where exp(−x²/2) would fall below the dtype's smallest normal float (|x| > 13.2 in
    float32, 37.6 in float64) φ is set to 0 instead: subnormal floats are slow, and
    x·φ(x) at x = ±inf is then NaN, as PyTorch's GELU gradient there.
    """
    x2 = x * x
    cap = -2 * math.log(np.finfo(x.dtype).tiny)
    return INV_SQRT_2PI * np.exp(-0.5 * np.minimum(x2, cap)) * (x2 <= cap)
