"""Tensors made small enough to ship in an HTML page: exact statistics of the whole tensor, and a
heatmap of one slice of it (one batch row, a few heads) quantized to one byte per element.

A heatmap needs ~250 shades, not 24 bits of mantissa: each value becomes a code
0..250 on a linear scale from the slice's finite minimum to its maximum, and 251, 252,
253 mark NaN, −inf and +inf (attention's masked scores). The page reads a value back
as lo + code·(hi − lo)/250, to within half a step.
"""
import base64

import numpy as np

LEVELS = 250  # codes 0..250 hold values; the three codes after them hold NaN, −inf, +inf
NAN, NEG_INF, POS_INF = LEVELS + 1, LEVELS + 2, LEVELS + 3
MAX_GROUPS, MAX_ROWS, MAX_COLS = 4, 128, 512  # heads (or slices), rows and columns kept


def stats(array):
    """{min, max, mean, norm, nan, inf, count} of the whole array, over its finite entries (the
    counts of NaN and ±inf say what was left out); norm is ‖a‖₂, as trace's gradient norms."""
    a = np.asarray(array, dtype=np.float64)
    finite = np.isfinite(a)
    flat = a.ravel() if finite.all() else a[finite]
    some = flat.size > 0
    return {"min": float(flat.min()) if some else None, "max": float(flat.max()) if some else None,
            "mean": float(flat.mean()) if some else None,
            "norm": float(np.sqrt(np.dot(flat, flat))),
            "nan": int(np.isnan(a).sum()), "inf": int(np.isinf(a).sum()), "count": int(a.size)}


def view(array, batch_size=None):
    """(slice [groups, rows, cols], index text such as "[0, :4, :, :]"): what a heatmap shows.

    A tensor of 3 or more dims keeps batch row 0 (and the first entry of any axis before its
    last three); a 2-D [B·k, C] whose rows are the batch's flattened positions keeps its first
    k rows (row 0's positions). Then at most MAX_GROUPS groups (heads), MAX_ROWS rows and
    MAX_COLS columns are kept.
    """
    a, taken = np.asarray(array), []
    flattened = a.ndim == 2  # only a tensor that is 2-D itself can hold the batch's rows
    if a.ndim >= 3:
        a, taken = a[0], ["0"]
    while a.ndim > 3:
        a, taken = a[0], taken + ["0"]
    kept = [":"] * a.ndim
    if flattened and batch_size and a.shape[0] > batch_size and a.shape[0] % batch_size == 0:
        rows = a.shape[0] // batch_size
        a, kept[0] = a[:rows], f":{rows}"
    for axis, cut in enumerate((MAX_GROUPS, MAX_ROWS, MAX_COLS)[3 - a.ndim:]):
        if a.shape[axis] > cut:
            a, kept[axis] = np.take(a, np.arange(cut), axis=axis), f":{cut}"
    return a.reshape((1,) * (3 - a.ndim) + a.shape), "[" + ", ".join(taken + kept) + "]"


def heatmap(array, batch_size=None):
    """{shape, index, lo, hi, codes}: the slice `view` keeps, as base64 bytes (see module doc)."""
    a, index = view(array, batch_size)
    a = a.astype(np.float64)
    finite = np.isfinite(a)
    lo = float(a[finite].min()) if finite.any() else 0.0
    hi = float(a[finite].max()) if finite.any() else 0.0
    span = hi - lo if hi > lo else 1.0
    codes = np.zeros(a.shape, dtype=np.uint8)
    codes[finite] = np.rint((a[finite] - lo) / span * LEVELS).astype(np.uint8)
    codes[np.isnan(a)] = NAN
    codes[np.isneginf(a)] = NEG_INF
    codes[np.isposinf(a)] = POS_INF
    return {"shape": list(a.shape), "index": index, "lo": lo, "hi": hi,
            "codes": base64.b64encode(codes.tobytes()).decode("ascii")}


def decode(entry):
    """The values a heatmap entry stands for (NaN, ±inf restored), as the page reads them."""
    codes = np.frombuffer(base64.b64decode(entry["codes"]), dtype=np.uint8).reshape(entry["shape"])
    values = entry["lo"] + codes.astype(np.float64) * (entry["hi"] - entry["lo"]) / LEVELS
    values[codes == NAN] = np.nan
    values[codes == NEG_INF] = -np.inf
    values[codes == POS_INF] = np.inf
    return values


def summary(array, batch_size=None):
    """What the page shows of one tensor: its statistics and its heatmap."""
    return {"stats": stats(array), "heat": heatmap(array, batch_size)}
