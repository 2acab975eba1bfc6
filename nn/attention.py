"""Scaled dot-product and multi-head attention, from primitive ops so the graph shows each step.

Z = softmax(QKᵀ/√d_k + M) V   (Vaswani et al. 2017, "Attention Is All You Need", §3.2;
course notes 3.1–3.5). Masks follow the contract: a boolean mask is True where a key is
*blocked*; a float mask is *added* to the scaled scores (nn/masks.py builds and checks them).
Tiled attention, the same Z in O(T) memory, is nn/tiled_attention.py; the KV cache of 3.7 is
nn/kv_cache.py.
"""
import contextlib
import math
import numbers

import numpy as np

import microtensor.functional as F
from microtensor import Tensor

from . import masks
from .attention_checks import check_attention_inputs
from .layers import Linear
from .module import Module
from .tiled_attention import check_attention, tiled_attention


def scaled_dot_product_attention(q, k, v, attn_mask=None, is_causal=False, dropout_p=0.0,
                                 causal_alignment="top_left"):
    """Attention of queries over keys: returns (out, weights). A boolean attn_mask is True
    where a key is blocked (the course's and `masked_fill`'s sense), unlike
    torch.nn.functional.scaled_dot_product_attention, where True means may attend.

    Shapes: q [..., T_q, d_k], k [..., T_k, d_k], v [..., T_k, d_v]
    -> out [..., T_q, d_v], weights [..., T_q, T_k] (each row sums to 1 over the keys, or is
    all zeros where every key is blocked; the weights before attention dropout).
    attn_mask: boolean (True = blocked) or float (added to the scaled scores), broadcasting
    against [..., T_q, T_k] without growing it; a float attn_mask that requires grad (a
    learned bias) gets its gradient. is_causal blocks key j > query i + offset:
    causal_alignment="top_left" (offset 0, PyTorch's) or "bottom_right" (offset T_k − T_q:
    the last query sees every key, as after a KV cache). The two agree when T_q == T_k.
    A query whose keys are all blocked gets zero weights and a zero output, never NaN; with
    d_k = 0 every score is 0 and out is the mean of the unblocked values (as torch).
    Raises ValueError when the shapes do not fit, TypeError for an attn_mask of another
    dtype (integers, say) or integer q, k, v.

    Backward needs no code here: each primitive's runs in turn (notes 3.8): Z = AV gives
    ∂L/∂V = AᵀG and ∂L/∂A = GVᵀ; softmax gives ds = a ⊙ (da − Σ a ⊙ da); the scale
    multiplies by 1/√d_k; then QKᵀ sends the gradient back to Q and K.
    """
    _check_qkv(q, k, v)
    d_k, t_q, t_k = q.shape[-1], q.shape[-2], k.shape[-2]
    scores = q @ k.transpose(-2, -1)                       # [..., T_q, T_k]   QKᵀ
    _role(scores, "QKᵀ")
    # a constant factor: ∂S/∂(QKᵀ) = 1/√d_k, so backward keeps only that scalar.
    # d_k = 0: the scores are empty sums, 0, and stay 0 (softmax then gives the mean of V)
    s = scores * (1.0 / math.sqrt(d_k) if d_k else 1.0)    # [..., T_q, T_k]   S = QKᵀ/√d_k
    _role(s, "S")
    blocked = (masks.causal_mask(t_q, t_k, masks.causal_offset(t_q, t_k, causal_alignment))
               if is_causal else None)                     # [T_q, T_k], True = a future key
    if attn_mask is not None:
        mask = masks.attn_mask_array(attn_mask)
        masks.check_mask_fits(mask, s.shape, "attn_mask")
        if mask.dtype == np.bool_:
            blocked = mask if blocked is None else blocked | mask
        else:  # a learned bias (a Tensor that requires grad) is added on the graph
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


def _check_qkv(q, k, v):
    if min(q.ndim, k.ndim, v.ndim) < 2 or k.shape[-1] != q.shape[-1] \
            or k.shape[-2] != v.shape[-2]:
        raise ValueError(f"attention: q {q.shape}, k {k.shape}, v {v.shape} do not fit: need "
                         "q [..., T_q, d_k], k [..., T_k, d_k], v [..., T_k, d_v]")
    if any(t.dtype.kind != "f" for t in (q, k, v)):  # int scores would quietly be float64
        raise TypeError(f"attention: q, k, v must be floating-point; got "
                        f"{q.dtype}, {k.dtype}, {v.dtype}")


def _role(tensor, role):
    """Name the step that made `tensor` on its graph node (`grad_fn.role`): the pictures and
    the course tests find attention's QKᵀ, S, A and Z by it. Nothing to name without a graph."""
    if tensor.grad_fn is not None:
        tensor.grad_fn.role = role


class MultiHeadAttention(Module):
    """H attention heads, each with its own slice of the Q/K/V projections, mixed by out_proj (3.5).

    Sub-layers q_proj, k_proj, v_proj, out_proj: Linear(D, D) each, so 4D² weights
    (+4D biases) whatever H is; each head has width d = D / H.
    attention: "ordinary" (this file) or "tiled" (nn/tiled_attention.py): the same values,
    O(T²) or O(T) memory. keep_attention: False by default, so a forward keeps nothing but its
    graph; set it (or use `nn.keep_attention(model)`) to have `last_attention` hold the weights
    [B, H, T_q, T_k] of the last call, a read-only detached Tensor, for a picture or a check
    (None with attention="tiled", which never forms them).
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
        check_attention(attention, "MultiHeadAttention")
        self.d_model, self.n_heads, self.head_dim = d_model, n_heads, d_model // n_heads
        self.dropout, self.attention = dropout, attention
        self.q_proj = Linear(d_model, d_model, bias)
        self.k_proj = Linear(d_model, d_model, bias)
        self.v_proj = Linear(d_model, d_model, bias)
        self.out_proj = Linear(d_model, d_model, bias)
        self.keep_attention = keep_attention
        self.last_attention = None

    def forward(self, x, context=None, attn_mask=None, key_padding_mask=None, is_causal=False,
                kv_cache=None, causal_alignment=None):
        """x [B, T_q, D]; context [B, T_k, D] for cross-attention (default: x itself).

        attn_mask: bool or float, broadcasting against [B, H, T_q, T_k] (e.g. [T_q, T_k]);
        key_padding_mask: bool [B, T_k], True at padding keys; is_causal: block future keys,
        aligned bottom-right by default (the last query sees every key: cached decoding) or
        as causal_alignment says ("top_left" is torch's function's); for T_q != T_k without
        a KV cache it must be given. kv_cache: an nn.KVCache. In self-attention each call
        appends its keys and values; in cross-attention the first call fills it with the
        context's and later calls reuse them without projecting the context again.
        Returns [B, T_q, D]. Raises ValueError for x or context of the wrong shape, masks
        that do not fit, or is_causal with T_q != T_k and no alignment; TypeError for a
        kv_cache that is not an nn.KVCache.
        """
        check_attention_inputs(self.d_model, x, context, kv_cache)
        b, t_q, _ = x.shape
        source = x if context is None else context
        q = self._split_heads(self.q_proj(x))               # [B, H, T_q, d]
        if context is not None and kv_cache is not None and len(kv_cache):
            k, v = kv_cache.k, kv_cache.v                   # [B, H, T_k, d]  projected once
        else:
            k = self._split_heads(self.k_proj(source))      # [B, H, T_k, d]
            v = self._split_heads(self.v_proj(source))      # [B, H, T_k, d]
            if kv_cache is not None:
                k, v = kv_cache.append(k, v)                # [B, H, T_past + T_q, d]
        scores = (b, self.n_heads, t_q, k.shape[2])         # [B, H, T_q, T_k]
        offset = masks.module_causal_offset(t_q, k.shape[2], is_causal, causal_alignment,
                                            kv_cache is not None)   # None: not causal
        dropout_p = self.dropout if self.training else 0.0
        if self.attention == "tiled":  # causal as a rule, not a mask: tiles past it are skipped
            mask = masks.attention_mask(scores, attn_mask, key_padding_mask)
            z = tiled_attention(q, k, v, mask, offset is not None, dropout_p, offset or 0)
            self.last_attention = None
        else:
            mask = masks.attention_mask(scores, attn_mask, key_padding_mask, offset)
            z, weights = scaled_dot_product_attention(q, k, v, mask, dropout_p=dropout_p)
            self._keep(weights)
        return self._merge_heads(z, b, t_q)                 # [B, T_q, D]

    def _split_heads(self, x):
        """x [B, T, D] -> [B, H, T, d], D = H·d (notes 3.5): head h's W_Q is
        q_proj.weight[:, h·d:(h+1)·d], its d columns (likewise K, V)."""
        b, t, _ = x.shape
        x = x.reshape(b, t, self.n_heads, self.head_dim)   # [B, T, H, d]
        return x.transpose(1, 2)                            # [B, H, T, d]

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

    def _keep(self, weights):
        """`last_attention` = the weights [B, H, T_q, T_k], only when asked (keep_attention).
        Read-only: it shares its array with what softmax and A·V saved for backward, so a
        write (tidying a picture) would change the gradients without a word."""
        if self.keep_attention:
            kept = weights.data.view()
            kept.flags.writeable = False
            self.last_attention = Tensor._make(kept)

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


def use_attention(module, attention):
    """Make every nn.MultiHeadAttention inside `module` compute with `attention` ("ordinary" or
    "tiled"); the models call it with their config's choice. Returns `module`."""
    check_attention(attention, "use_attention")
    for m in module.modules():
        if isinstance(m, MultiHeadAttention):
            m.attention = attention
    return module
