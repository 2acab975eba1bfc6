"""The 2017 model's input checks (models/seq2seq.py): token ids, the source's padding mask,
positions, decoding caches and lengths, each error naming the argument, what it got and what it
expected.
"""
import numpy as np

import nn
from microtensor import Tensor


def ids_array(x, name):
    """x (array or Tensor) as int64 ids [B, T]; ValueError naming `name` otherwise."""
    ids = np.asarray(x.data if isinstance(x, Tensor) else x)
    if ids.ndim != 2 or not np.issubdtype(ids.dtype, np.integer):
        raise ValueError(f"Seq2SeqTransformer: {name} must be integer ids [B, T]; "
                         f"got {ids.dtype} of shape {ids.shape}")
    return ids.astype(np.int64)


def source_and_padding(src, src_padding_mask, pad_id):
    """(src as int64 ids [B, T_src], bool [B, T_src] True at padding: the mask given, or
    where src equals pad_id); ValueError for ids or a mask of the wrong kind or shape."""
    src = ids_array(src, "src")
    if src_padding_mask is None:
        return src, src == pad_id
    mask = src_padding_mask
    mask = np.asarray(mask.data if isinstance(mask, Tensor) else mask)
    if mask.dtype != np.bool_ or mask.shape != src.shape:
        raise ValueError(f"src_padding_mask must be boolean {src.shape} (True at padding); "
                         f"got {mask.dtype} {mask.shape}")
    return src, mask


def check_max_len(end, max_len):
    """ValueError unless positions 0 .. end - 1 fit the position table of max_len rows."""
    if end > max_len:
        raise ValueError(f"Seq2SeqTransformer: {end} positions exceed max_len {max_len}")


def decode_start(caches, n_layers):
    """The position of decode's first token: how many the caches hold (0 without caches), after
    nn.check_kv_caches (one (self-attention, cross-attention) pair per decoder layer)."""
    if caches is not None:
        nn.check_kv_caches(caches, n_layers, "Seq2Seq.decode: caches", pairs=True)
    return len(caches[0][0]) if caches else 0


def check_max_new_tokens(n, max_len):
    """ValueError unless generate's max_new_tokens `n` is an int in [1, max_len]."""
    if not (isinstance(n, (int, np.integer)) and 1 <= n <= max_len):
        raise ValueError(f"generate: max_new_tokens must be an int in [1, max_len="
                         f"{max_len}]; got {n!r}")
