"""Scaled dot-product and multi-head attention, from primitive ops so the graph shows each step.

Z = softmax(QKᵀ/√d_k + M) V   (Vaswani et al. 2017, "Attention Is All You Need", §3.2;
course notes 3.1–3.5). Masks follow the contract: a boolean mask is True where a key is
*blocked*; a float mask is *added* to the scaled scores.
"""
import contextlib
import math
import numbers

import numpy as np

import microtensor.functional as F
from microtensor import Tensor

from . import attention_checks as checks
from .kv_cache import shared_causal_mask
from .layers import Linear
from .module import Module
from .tiled_attention import check_attention, tiled_attention

check_kv_caches = checks.check_kv_caches  # the models' check of their caches, by its old name


def causal_mask(t_q, t_k, offset=0):
    """Boolean [t_q, t_k], True where key j lies in query i's future: j > i + offset.

    offset=0 is the usual square mask; with a KV cache the t_q new queries sit at the
    end of t_k keys, so offset = t_k − t_q.
    """
    return np.triu(np.ones((t_q, t_k), dtype=bool), k=offset + 1)


def scaled_dot_product_attention(q, k, v, attn_mask=None, is_causal=False, dropout_p=0.0,
                                 causal_alignment="top_left",
                                 attention="ordinary"):
    """Attention of queries over keys: returns (out, weights).

    Shapes: q [..., T_q, d_k], k [..., T_k, d_k], v [..., T_k, d_v]
    -> out [..., T_q, d_v], weights [..., T_q, T_k] (each row sums to 1 over the keys, or is
    all zeros where every key is blocked; the weights before attention dropout).
    attn_mask: boolean (True = blocked) or float (added to the scaled scores), broadcasting
    against [..., T_q, T_k]; a float attn_mask that requires grad (a learned bias) gets its
    gradient. is_causal blocks key j > query i + offset: causal_alignment="top_left" (offset 0,
    PyTorch's F.scaled_dot_product_attention) or "bottom_right" (offset T_k − T_q: the last
    query sees every key, as after a KV cache; MultiHeadAttention's rule). The two agree
    when T_q == T_k.
    A query whose keys are all blocked gets zero weights and a zero output, never NaN.
    Raises ValueError when the shapes do not fit together, TypeError for an attn_mask of
    another dtype (integers, say).
    attention="tiled" computes Z in tiles with an online softmax (nn/tiled_attention.py,
    notes 3.8): the same Z, one graph node, and weights None (they are never formed).

    Backward needs no code here: each primitive's runs in turn (notes 3.8): Z = AV gives
    ∂L/∂V = AᵀG and ∂L/∂A = GVᵀ; softmax gives ds = a ⊙ (da − Σ a ⊙ da); the scale
    multiplies by 1/√d_k; then QKᵀ sends the gradient back to Q and K.
    """
    if attention != "ordinary":
        check_attention(attention, "scaled_dot_product_attention")
        offset = checks.causal_offset(q.shape[-2], k.shape[-2], causal_alignment)
        return tiled_attention(q, k, v, attn_mask, is_causal, dropout_p, offset), None
    d_k = q.shape[-1]
    if min(q.ndim, k.ndim, v.ndim) < 2 or k.shape[-1] != d_k or k.shape[-2] != v.shape[-2]:
        raise ValueError(f"attention: q {q.shape}, k {k.shape}, v {v.shape} do not fit: need "
                         "q [..., T_q, d_k], k [..., T_k, d_k], v [..., T_k, d_v]")
    if any(t.dtype.kind != "f" for t in (q, k, v)):  # int scores would quietly be float64
        raise TypeError(f"attention: q, k, v must be floating-point; got "
                        f"{q.dtype}, {k.dtype}, {v.dtype}")
    t_q, t_k = q.shape[-2], k.shape[-2]
    k_t = k.transpose(-2, -1)                              # [..., d_k, T_k]   Kᵀ
    scores = q @ k_t                                       # [..., T_q, T_k]   QKᵀ
    _role(scores, "QKᵀ")
    # A constant factor: ∂S/∂(QKᵀ) = 1/√d_k, so backward keeps only that scalar, never the
    # score tensor (dividing by √d_k would cost the same; the product reads as the notes' 1/√d_k).
    scale = 1.0 / math.sqrt(d_k) if d_k else math.inf      # d_k = 0: empty rows, as torch
    s = scores * scale                                     # [..., T_q, T_k]   S = QKᵀ/√d_k
    _role(s, "S")
    # [T_q, T_k], True = a future key; MultiHeadAttention passes its own mask instead
    blocked = causal_mask(t_q, t_k, checks.causal_offset(t_q, t_k, causal_alignment)) \
        if is_causal else None
    if attn_mask is not None:
        mask = checks.attn_mask_array(attn_mask)
        checks.check_mask_fits(mask, s.shape, "attn_mask")
        if mask.dtype == np.bool_:
            blocked = mask if blocked is None else blocked | mask
        else:
            # a learned bias (a Tensor that requires grad) is added on the graph
            learned = isinstance(attn_mask, Tensor) and attn_mask.requires_grad
            s = s + (attn_mask if learned else mask.astype(s.dtype))  # QKᵀ/√d_k + M
            _role(s, "S + M")
    if blocked is not None:
        s = s.masked_fill(blocked, -math.inf)              # blocked keys get exp(−inf) = 0
        _role(s, "S (masked)")
    a = s.softmax(axis=-1)                                 # [..., T_q, T_k]   A, rows over keys
    _role(a, "A")
    weights = a
    if dropout_p > 0:
        a = F.dropout(a, dropout_p)
    z = a @ v                                              # [..., T_q, d_v]   Z = AV
    _role(z, "Z")
    return z, weights


def _role(tensor, role):
    """Name the step that made `tensor` on its graph node (`grad_fn.role`): the pictures and
    the course tests find attention's QKᵀ, S, A and Z by it. Nothing to name without a graph."""
    if tensor.grad_fn is not None:
        tensor.grad_fn.role = role



class MultiHeadAttention(Module):
    """H attention heads, each with its own slice of the Q/K/V projections, mixed by out_proj (3.5).

    Sub-layers q_proj, k_proj, v_proj, out_proj: Linear(D, D) each, so 4D² weights
    (+4D biases) whatever H is; each head has width d = D / H.
    keep_attention: False by default, so a forward keeps nothing but its graph; set it (or
    use `nn.keep_attention(model)`) to have `last_attention` hold the weights
    [B, H, T_q, T_k] of the last call, a read-only detached Tensor, for a picture or a check
    (None with attention="tiled", which never forms them: nn/tiled_attention.py, notes 3.8).
    """

    def __init__(self, d_model, n_heads, dropout=0.0, bias=True, attention="ordinary",
                 keep_attention=False):
        super().__init__()
        for name, value in (("d_model", d_model), ("n_heads", n_heads)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"MultiHeadAttention: {name} must be a positive int; got "
                                 f"{value!r}")
        if d_model % n_heads:
            raise ValueError(f"MultiHeadAttention: d_model={d_model} is not divisible by "
                             f"n_heads={n_heads}")
        if not isinstance(dropout, numbers.Real) or not 0 <= dropout < 1:
            raise ValueError(f"MultiHeadAttention: dropout must be a number in [0, 1); "
                             f"got {dropout!r}")
        self.d_model, self.n_heads, self.head_dim = d_model, n_heads, d_model // n_heads
        self.dropout = dropout
        check_attention(attention, "MultiHeadAttention")
        self.attention = attention  # "ordinary" or "tiled": same values, O(T²) or O(T) memory
        self.q_proj = Linear(d_model, d_model, bias)
        self.k_proj = Linear(d_model, d_model, bias)
        self.v_proj = Linear(d_model, d_model, bias)
        self.out_proj = Linear(d_model, d_model, bias)
        self.keep_attention = keep_attention
        self.last_attention = None

    def _split_heads(self, x):
        """x [B, T, D] -> [B, H, T, d], D = H·d (notes 3.5)."""
        b, t, _ = x.shape
        x = x.reshape(b, t, self.n_heads, self.head_dim)   # [B, T, H, d]
        return x.transpose(1, 2)                            # [B, H, T, d]

    def forward(self, x, context=None, attn_mask=None, key_padding_mask=None, is_causal=False,
                kv_cache=None, causal_alignment=None):
        """x [B, T_q, D]; context [B, T_k, D] for cross-attention (default: x itself).

        attn_mask: bool or float, broadcasting against [B, H, T_q, T_k] (e.g. [T_q, T_k]);
        key_padding_mask: bool [B, T_k], True at padding keys; is_causal: block future keys,
        with causal_alignment "bottom_right" (the last query sees every key: cached decoding)
        or "top_left" (PyTorch's F.scaled_dot_product_attention); they agree when T_q == T_k,
        and for T_q != T_k without a KV cache the alignment must be given (ValueError: the
        function's default is top-left, so a silent choice would differ from it);
        kv_cache: an nn.KVCache. In self-attention each call appends its keys and values; in
        cross-attention (context given) the first call fills it with the context's keys and
        values and later calls reuse them without projecting the context again.
        Returns [B, T_q, D]. Raises ValueError for x or context of the wrong shape, masks
        that do not fit, or is_causal with T_q != T_k and no alignment; TypeError for a
        kv_cache that is not an nn.KVCache.
        """
        checks.check_attention_inputs(self.d_model, x, context, kv_cache)  # attention_checks.py
        b, t_q, _ = x.shape
        source = x if context is None else context
        # split: head h's W_Q is q_proj.weight[:, h·d:(h+1)·d], its d columns (likewise K, V)
        q = self._split_heads(self.q_proj(x))               # [B, H, T_q, d]
        if context is not None and kv_cache is not None and len(kv_cache):
            # cross-attention while decoding: the context (the encoder output) is the same
            # at every step, so its keys and values were projected once, on the first step
            k, v = kv_cache.k, kv_cache.v                   # [B, H, T_k, d]
        else:
            k = self._split_heads(self.k_proj(source))      # [B, H, T_k, d]
            v = self._split_heads(self.v_proj(source))      # [B, H, T_k, d]
            if kv_cache is not None:
                k, v = kv_cache.append(k, v)                # [B, H, T_past + T_q, d]
        mask, offset = self._scores_mask(b, t_q, k.shape[2], attn_mask, key_padding_mask,
                                         is_causal, causal_alignment, kv_cache is not None)
        # attend
        dropout_p = self.dropout if self.training else 0.0
        if self.attention == "tiled":  # causal as a rule, not a mask: tiles past it are skipped
            z = tiled_attention(q, k, v, mask, offset is not None, dropout_p, offset or 0)
            self.last_attention = None
        else:
            z, weights = scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                                      dropout_p=dropout_p)
            if self.keep_attention:                         # only when asked: see the docstring
                # read-only: it shares its array with what softmax and A·V saved for backward,
                # so a write (tidying a picture) would change the gradients without a word
                kept = weights.data.view()
                kept.flags.writeable = False
                self.last_attention = Tensor._make(kept)    # [B, H, T_q, T_k]
        # merge
        return self._merge_heads(z, b, t_q)

    def _merge_heads(self, z, b, t_q):
        """Z [B, H, T_q, d] -> out_proj's output [B, T_q, D], with output dropout."""
        # heads back next to each other per position before merging: reshaping [B, H, T, d]
        # straight to [B, T, D] would mix heads with positions
        z = z.transpose(1, 2)                               # [B, T_q, H, d]
        z = z.reshape(b, t_q, self.d_model)                 # [B, T_q, D]  heads concatenated
        out = self.out_proj(z)                              # [B, T_q, D]  heads mixed by W_O
        # output (residual) dropout, as GPT-2 and nanoGPT; torch.nn.MultiheadAttention drops
        # only the attention weights
        return F.dropout(out, self.dropout, self.training)

    def _scores_mask(self, b, t_q, t_k, attn_mask, key_padding_mask, is_causal,
                     causal_alignment, cached):
        """(mask, causal offset) for the scores [B, H, T_q, T_k]: attn_mask, key_padding_mask
        and the causal mask in one boolean mask, or a float one if attn_mask is float (a
        learned bias, a Tensor that requires grad, stays on the graph). Ordinary attention
        gets the causal mask inside it (offset None); tiled attention gets the offset apart,
        as a rule whose tiles it skips."""
        if attn_mask is not None:
            checks.check_mask_fits(checks.mask_array(attn_mask), (b, self.n_heads, t_q, t_k),
                                   "attn_mask")
        offset = None
        if is_causal:
            alignment = checks.causal_alignment_for(t_q, t_k, causal_alignment, cached)
            offset = checks.causal_offset(t_q, t_k, alignment)
        learned = isinstance(attn_mask, Tensor) and attn_mask.requires_grad
        if self.attention == "tiled":
            if learned:  # tiled_attention refuses it: it gives no gradient to a mask
                return attn_mask, offset
            return self._blocked(b, t_k, attn_mask, key_padding_mask, None), offset
        # speed: one read-only causal mask per shape, shared by every layer and step
        # a causal mask that blocks no key (one query over its whole past: cached decoding) is none
        causal = shared_causal_mask(t_q, t_k, offset) if is_causal and offset < t_k - 1 else None
        mask = self._blocked(b, t_k, None if learned else attn_mask, key_padding_mask, causal)
        if learned:  # blocked keys add −inf to the learned bias
            mask = attn_mask if mask is None else attn_mask + (
                np.where(mask, -np.inf, 0.0).astype(attn_mask.dtype))
        return mask, None

    @staticmethod
    def _blocked(b, t_k, attn_mask, key_padding_mask, causal):
        """causal ([T_q, T_k] or None), key_padding_mask and attn_mask as one mask:
        boolean, or float if attn_mask is float."""
        blocked = causal
        if key_padding_mask is not None:
            pad = checks.mask_array(key_padding_mask)
            if pad.dtype != np.bool_ or pad.shape != (b, t_k):
                raise ValueError(f"key_padding_mask must be boolean [B, T_k] = [{b}, {t_k}] "
                                 f"(True at padding); got {pad.dtype} {pad.shape}")
            pad = pad[:, None, None, :]                     # [B, 1, 1, T_k]
            blocked = pad if blocked is None else blocked | pad
        if attn_mask is None:
            return blocked
        mask = checks.attn_mask_array(attn_mask)
        if mask.dtype == np.bool_:
            return mask if blocked is None else blocked | mask
        if blocked is None:
            return mask
        return mask + np.where(blocked, -np.inf, 0.0).astype(mask.dtype)

    def extra_repr(self):
        return f"d_model={self.d_model}, n_heads={self.n_heads}"


@contextlib.contextmanager
def keep_attention(module):
    """Within the block, every MultiHeadAttention in `module` (itself included) keeps the
    weights [B, H, T_q, T_k] of its last call as `last_attention`; afterwards they keep
    them no longer (what they hold stays, for reading). For pictures and checks:

        with nn.keep_attention(model):
            model(idx)
        weights = model.blocks[0].attn.last_attention       # [B, H, T, T]
    """
    layers = [m for _, m in module.named_modules() if isinstance(m, MultiHeadAttention)]
    before = [m.keep_attention for m in layers]
    for m in layers:
        m.keep_attention = True
    try:
        yield module
    finally:
        for m, kept in zip(layers, before):
            m.keep_attention = kept
