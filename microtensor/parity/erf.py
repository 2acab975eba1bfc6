"""The error function erf and the normal density φ on float64 numpy arrays, for the exact GELU
(numpy has no erf).

erf: Python's math.erf on each element, exact to machine precision. float64 is for gradient
checks and comparisons with PyTorch; float32 GELU takes the faster few-pass formula of
gelu_float32.py instead.
"""
import math

import numpy as np

INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)
_exact_erf = np.frompyfunc(math.erf, 1, 1)  # the C library's erf, correct to about 1 ulp


def erf(x):
    """erf(x) elementwise for a float64 array x, exact; a float64 array of the same shape."""
    return np.asarray(_exact_erf(x), dtype=np.float64)  # a 0-d input gives a Python float


def normal_pdf(x):
    """φ(x) = exp(−x²/2)/√(2π), elementwise.

    Where exp(−x²/2) would fall below the dtype's smallest normal float (|x| > 13.2 in
    float32, 37.6 in float64) φ is set to 0 instead: subnormal floats are slow, and
    x·φ(x) at x = ±inf is then NaN, as PyTorch's GELU gradient there.
    """
    x2 = x * x
    cap = -2 * math.log(np.finfo(x.dtype).tiny)
    return INV_SQRT_2PI * np.exp(-0.5 * np.minimum(x2, cap)) * (x2 <= cap)
