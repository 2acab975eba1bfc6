"""Keeping attention's weights A [B, H, T_q, T_k] for a picture or a check, only when asked
(notes 3.4's heat maps; `microtensor attention` draws them).

    with nn.keep_attention(model):
        model(idx)
    weights = model.blocks[0].attn.last_attention       # [B, H, T, T]
"""
import contextlib

from microtensor import Tensor


def attention_layers(module):
    """Every nn.MultiHeadAttention in `module`, itself included (known by its `last_attention`:
    this file is imported by nn/attention.py, never the other way)."""
    return [m for m in module.modules() if "last_attention" in vars(m)]


def keep_weights(mha, weights):
    """`mha.last_attention` = the weights [B, H, T_q, T_k] when mha.keep_attention is set.
    Read-only: it shares its array with what softmax and A·V saved for backward, so a write
    (tidying a picture) would change the gradients without a word."""
    if mha.keep_attention:
        kept = weights.data.view()
        kept.flags.writeable = False
        mha.last_attention = Tensor._make(kept)


@contextlib.contextmanager
def keep_attention(module):
    """Within the block, every MultiHeadAttention in `module` (itself included) keeps the
    weights [B, H, T_q, T_k] of its last call as `last_attention`; afterwards they keep
    them no longer (what they hold stays, for reading)."""
    layers = attention_layers(module)
    before = [m.keep_attention for m in layers]
    for m in layers:
        m.keep_attention = True
    try:
        yield module
    finally:
        for m, kept in zip(layers, before):
            m.keep_attention = kept
