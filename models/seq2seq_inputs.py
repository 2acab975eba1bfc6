"""The 2017 model's input checks (models/seq2seq.py): token ids and the source's padding mask,
each ValueError naming the argument, what it got and what it expected.
"""
import numpy as np

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
