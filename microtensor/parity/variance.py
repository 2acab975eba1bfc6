"""The mean and variance of each row as torch computes them for layer norm: without losing
float32's precision, and without overflowing.

Two passes (the mean first, then the mean of squared deviations), so that float32 rows with a
large common offset keep their precision, which the one-pass E[x²] − E[x]² loses. Each row is
first shifted by its first element (Chan, Golub & LeVeque 1983, "Algorithms for computing the
sample variance"), so that a constant row gives x − μ = 0 exactly, as PyTorch. Rows whose
Σ(x − μ)² overflows (deviations near 1e19 in float32) are recomputed with the row scaled.
"""
import numpy as np

from ..ops.rows import row_dot, row_sum


def standardize(rows, eps):
    """(x̂ = (x − μ)·r, r = 1/√(σ² + ε)) of each row of rows [..., n], in arrays of their own."""
    n = rows.shape[-1]
    dev = rows - rows[..., :1]                 # x − (first of its row), in an array of our own
    dev -= row_sum(dev) / n                    # x − μ, in place
    rstd = 1 / np.sqrt(row_dot(dev, dev) / n + eps)
    _rescale_overflowed_rows(dev, rstd, n, eps)
    dev *= rstd                                # x̂, in place
    return dev, rstd


def _rescale_overflowed_rows(dev, rstd, n, eps):
    """Where Σ(x − μ)² overflowed although each deviation is finite, recompute r with the row
    scaled by s = max|x − μ|: r = 1/(s·√(Σ(d/s)²/n + ε/s²)). Without this r would be 0 and the
    row a wrong 0."""
    if rstd.all():  # the usual case, no r is 0: one test over the rows' r, not over x
        return
    bad = (rstd[..., 0] == 0) & np.isfinite(dev).all(axis=-1)
    rows = dev[bad]
    s = np.abs(rows).max(axis=-1, keepdims=True)
    scaled = rows / s
    rstd[bad] = 1 / (s * np.sqrt(row_dot(scaled, scaled) / n + eps / (s * s)))
