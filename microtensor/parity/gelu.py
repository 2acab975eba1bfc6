"""The exact GELU x·Φ(x) and its slope Φ(x) + x·φ(x) as numpy arrays, rounded as torch's: in
float64 from Python's erf, to machine precision (erf.py); in other dtypes (float32, float16) by
the few-pass formula of gelu_float32.py in float32, whose error stays within torch's."""
import math

import numpy as np

from .erf import erf, normal_pdf
from .gelu_float32 import gelu_float32

_SQRT_2 = math.sqrt(2.0)


def gelu_and_slope(x, with_slope):
    """(x·Φ(x), Φ(x) + x·φ(x) or None): the slope is made here, where Φ is at hand, so that
    backward keeps one array, not x and Φ."""
    if x.dtype != np.float64:
        z, slope = gelu_float32(x.astype(np.float32, copy=False), with_slope=with_slope)
        z = z.astype(x.dtype, copy=False)
        return z, None if slope is None else slope.astype(x.dtype, copy=False)
    cdf = erf(x * (1 / _SQRT_2))
    cdf += 1
    cdf *= 0.5  # Φ(x) = ½(1 + erf(x/√2))
    return x * cdf, (cdf + x * normal_pdf(x) if with_slope else None)
