"""Sampling the next token from a model's logits, and `generate`'s argument checks (notes 3.7:
temperature, top-k; the GPT and the 2017 model's greedy decoding use it).
"""
import math

import numpy as np

import microtensor

TEMPERATURE_MIN = float(np.finfo(np.float32).tiny)  # see check_generate


def sample_next(logits, temperature=1.0, top_k=None):
    """One token id per row of logits [B, V] (numpy) -> int64 [B], drawn from
    softmax(logits / temperature) over the top_k largest (top_k=1: argmax, greedy), with
    microtensor's package generator (see `manual_seed`).

    Raises ValueError for a row with a NaN or +inf logit, or no finite one (−inf blocks a
    token): its softmax is NaN, and sampling it would return token 0 every time (torch's
    multinomial raises too). A model whose weights diverged gives such logits.
    """
    bad = np.isnan(logits) | np.isposinf(logits) | ~np.isfinite(logits).any(axis=-1, keepdims=True)
    if bad.any():
        row, token = np.argwhere(bad)[0]
        raise ValueError(f"sample: the logits of row {row} are not finite (token {token}: "
                         f"{logits[row, token]}); no distribution to sample from (are the "
                         "model's weights finite? a diverged run gives NaN)")
    if top_k == 1:
        return logits.argmax(axis=-1).astype(np.int64)
    z = logits.astype(np.float64) / temperature             # [B, V]
    if top_k is not None and top_k < z.shape[-1]:
        kth = np.partition(z, -top_k, axis=-1)[:, -top_k, None]  # [B, 1]  k-th largest
        z = np.where(z < kth, -np.inf, z)
    p = np.exp(z - z.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)                      # [B, V]  softmax
    u = microtensor.random.generator().random((z.shape[0], 1))  # inverse-CDF sampling
    ids = (p.cumsum(axis=-1) <= u).sum(axis=-1)             # first i with cumsum[i] > u
    return np.minimum(ids, z.shape[-1] - 1).astype(np.int64)


def check_generate(idx, max_new_tokens, temperature, top_k):
    """GPT.generate's arguments checked, raising the errors its docstring lists: idx as int64."""
    idx = np.asarray(idx)
    if idx.dtype.kind not in "iu":  # a float id would be truncated silently
        raise TypeError(f"generate: idx must hold integer token ids; got dtype {idx.dtype}")
    if idx.ndim != 2 or idx.shape[1] == 0:
        raise ValueError(f"generate: idx must be [B, T] with T >= 1; got shape {idx.shape}")
    if not isinstance(max_new_tokens, (int, np.integer)) or max_new_tokens < 0:
        raise ValueError(f"generate: max_new_tokens must be an int >= 0; got {max_new_tokens!r}")
    # >= float32's smallest normal number, so float32 logits / temperature stay finite in
    # float64 (a subnormal such as 1e-310 overflows them to inf, and softmax to NaN: token 0)
    if not (math.isfinite(temperature) and temperature >= TEMPERATURE_MIN):
        raise ValueError(f"generate: temperature must be a finite number >= {TEMPERATURE_MIN:.4g} "
                         f"(float32's smallest normal); got {temperature} (use top_k=1 for "
                         "greedy decoding)")
    if top_k is not None and (not isinstance(top_k, (int, np.integer)) or isinstance(top_k, bool)
                              or top_k < 1):
        raise ValueError(f"generate: top_k must be an int >= 1 or None; got {top_k!r}")
    return idx.astype(np.int64)
