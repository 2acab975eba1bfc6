"""Layer normalization over the last dims: y = (x − μ)/√(σ² + ε) ⊙ w + b (Ba, Kiros & Hinton 2016;
notes 3.6).

μ and σ² are the mean and the biased variance (divide by n, as PyTorch) of each row. How
they are computed so that float32 keeps its precision is apart, at the end of the file
(`_deviations_and_rstd`): the formula reads first.
"""
import math

import numpy as np

from ..autograd import Function
from ..parity.arguments import constant, floating_only, tensor
from ..parity.low_precision import computed_in_float32
from ..parity.summation import column_dot
from ..tensor import apply
from .rows import row_dot, row_sum


@computed_in_float32  # float16 as torch: in float32, rounded once
class LayerNorm(Function):
    """x [..., *S], weight [*S], bias [*S] -> y [..., *S], normalizing over the n_dims dims S.

    Backward, with x̂ = (x − μ)·r, r = 1/√(σ² + ε) (forward: y = x̂ ⊙ w + b), and ĝ = g ⊙ w:

        ∂L/∂x = r · (ĝ − mean(ĝ) − x̂ ⊙ mean(ĝ ⊙ x̂))
        ∂L/∂w = Σ g ⊙ x̂        ∂L/∂b = Σ g       (sums over the leading dims)

    The two subtracted terms are there because μ and σ depend on every x of the row:
    moving one x shifts the mean (−mean(ĝ)) and rescales the spread (−x̂·mean(ĝx̂)).
    """

    op = "layer_norm"

    def __init__(self, n_dims, eps=1e-5):
        super().__init__()
        self.n_dims, self.eps = n_dims, eps

    def _rows(self, a):
        """a [..., *S] viewed as [..., n]: the normalized dims as one, for the row reductions."""
        lead = a.ndim - self.n_dims  # n spelled out: -1 is ambiguous when a dim is 0
        return a if self.n_dims == 1 else a.reshape(a.shape[:lead] + (math.prod(a.shape[lead:]),))

    def _unrows(self, a, shape):
        return a if self.n_dims == 1 else a.reshape(shape)

    def forward(self, x, weight, bias):
        rows = self._rows(x)
        xhat, rstd = _deviations_and_rstd(rows, self.eps)  # x − μ and r = 1/√(σ² + ε)
        xhat *= rstd                               # x̂ = (x − μ)·r, in place
        weight, bias = (a.reshape(-1) for a in (weight, bias))  # [*S] -> [n]; a constant -> [1]
        self.save(xhat=xhat)  # ∂L/∂x and ∂L/∂w use x̂
        self.save(rstd=rstd, weight=weight, for_input=0)
        y = xhat * weight
        if bias.size > 1 or bias.any():  # bias=False passes the constant 0: skip a pass over y
            y += bias
        return self._unrows(y, x.shape)

    def backward(self, g):
        need_x, need_weight, _ = self.needs_input_grad
        xhat, g_rows = self.saved["xhat"], self._rows(g)
        n = xhat.shape[-1]
        gx = gw = None
        if need_x:
            ghat = g_rows * self.saved["weight"]
            mean_gxhat = row_dot(ghat, xhat) / n
            ghat -= row_sum(ghat) / n
            ghat -= xhat * mean_gxhat
            ghat *= self.saved["rstd"]
            gx = self._unrows(ghat, g.shape)
        if need_weight:  # Σ over the rows of g ⊙ x̂, in one pass without the product array
            m = math.prod(xhat.shape[:-1])
            gw = column_dot(g_rows.reshape(m, n), xhat.reshape(m, n))  # a cascade if m is long
            gw = gw.reshape(self.input_shapes[1])
        return gx, gw, g


# ---- numerics: μ and r without losing float32's precision, or overflowing ------------------

def _deviations_and_rstd(rows, eps):
    """(x − μ, r = 1/√(σ² + ε)) of each row of rows [..., n], in arrays of their own.

    Two passes (the mean first, then the mean of squared deviations), so that float32 rows
    with a large common offset keep their precision, which the one-pass E[x²] − E[x]² loses.
    Each row is first shifted by its first element (Chan, Golub & LeVeque 1983, "Algorithms
    for computing the sample variance"), so that a constant row gives x − μ = 0 exactly, as
    PyTorch. Rows whose Σ(x − μ)² overflows are rescued by `_rescale_overflowed_rows`.
    """
    n = rows.shape[-1]
    dev = rows - rows[..., :1]                 # x − (first of its row), in an array of our own
    dev -= row_sum(dev) / n                    # x − μ, in place
    rstd = 1 / np.sqrt(row_dot(dev, dev) / n + eps)
    _rescale_overflowed_rows(dev, rstd, n, eps)
    return dev, rstd


def _rescale_overflowed_rows(dev, rstd, n, eps):
    """Where Σ(x − μ)² overflowed (deviations near 1e19 in float32) although each deviation
    is finite, recompute r with the row scaled by s = max|x − μ|:
    r = 1/(s·√(Σ(d/s)²/n + ε/s²)). Without this r would be 0 and the row a wrong 0."""
    if rstd.all():  # the usual case, no r is 0: one test over the rows' r, not over x
        return
    bad = (rstd[..., 0] == 0) & np.isfinite(dev).all(axis=-1)
    rows = dev[bad]
    s = np.abs(rows).max(axis=-1, keepdims=True)
    scaled = rows / s
    rstd[bad] = 1 / (s * np.sqrt(row_dot(scaled, scaled) / n + eps / (s * s)))


# ---- the functional form ----------------------------------------------------------------------

def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalize x over its last dims `normalized_shape` (int or tuple), then scale and shift:
    y = (x − mean)/√(var + eps) ⊙ weight + bias, var the biased variance (notes 3.6).

    Shapes: x [..., *normalized_shape]; weight and bias [*normalized_shape] or None.
    Raises ValueError if x's trailing dims are not `normalized_shape`.
    """
    x = floating_only(tensor(x, "x"), "layer_norm")
    shape = normalized_shape_tuple(normalized_shape, "layer_norm")
    if x.ndim < len(shape) or x.shape[x.ndim - len(shape):] != shape:
        raise ValueError(f"layer_norm: normalized_shape {shape} does not match the last dims "
                         f"of x, shape {x.shape}")
    # a missing weight is the constant 1 and a missing bias the constant 0 (scalars broadcast)
    weight = tensor(weight, "weight") if weight is not None else constant(1, x.dtype)
    bias = tensor(bias, "bias") if bias is not None else constant(0, x.dtype)
    for name, given in (("weight", weight), ("bias", bias)):
        if given.ndim and given.shape != shape:  # as torch: no broadcasting of either
            raise ValueError(f"layer_norm: {name} has shape {given.shape}; expected "
                             f"normalized_shape {shape}")
    return apply(LayerNorm(len(shape), eps), x, weight, bias)


def normalized_shape_tuple(normalized_shape, who):
    """normalized_shape (an int or a sequence of ints) as a tuple; ValueError naming `who`
    for an empty one, a negative size or one that is not an int (2.5, True); a size 0 is
    allowed, as torch (an empty row)."""
    if type(normalized_shape) is tuple and normalized_shape and all(
            type(n) is int and n >= 0 for n in normalized_shape):
        return normalized_shape  # already what is asked for (nn.LayerNorm's, checked once)
    shape = (normalized_shape,) if isinstance(normalized_shape, (int, np.integer)) \
        else normalized_shape
    try:
        shape = tuple(shape)
    except TypeError:
        shape = None
    if not shape or not all(isinstance(n, (int, np.integer)) and not isinstance(n, bool)
                            and n >= 0 for n in shape):
        raise ValueError(f"{who}: normalized_shape must be an int >= 0 or a non-empty tuple "
                         f"of them; got {normalized_shape!r}")
    return tuple(int(n) for n in shape)
