"""Attention computed in tiles with an online softmax, never forming the T_q×T_k matrix (notes 3.8).

Z = softmax(QKᵀ/√d_k + M) V, the same numbers as the ordinary attention of nn/attention.py,
but the scores are made one tile [B_r, B_c] at a time and thrown away: forward keeps a running
row maximum m and row sum l (Milakov & Gimelshein 2018, "Online normalizer calculation for
softmax") and saves only the output Z and each row's log-sum-exp L = m + log l; backward makes
each tile's scores again from Q, K and L (Dao et al. 2022, "FlashAttention", §3.1 and its
Algorithm 2 for masks and dropout, in the form of Dao 2023, "FlashAttention-2", Algorithms 1
and 2: the normalisation by l deferred to the end, L saved in place of m and l). Memory kept
for backward: O(T·d) per head instead of O(T²).

Online softmax, for one query row and the key tiles j = 1, 2, … in turn:

    m⁽ʲ⁾ = max(m⁽ʲ⁻¹⁾, rowmax S⁽ʲ⁾)                       the largest score so far
    P̃⁽ʲ⁾ = exp(S⁽ʲ⁾ − m⁽ʲ⁾)                               this tile's unnormalised weights
    l⁽ʲ⁾ = e^(m⁽ʲ⁻¹⁾ − m⁽ʲ⁾) l⁽ʲ⁻¹⁾ + rowsum P̃⁽ʲ⁾          the sum so far, rescaled to the new max
    O⁽ʲ⁾ = e^(m⁽ʲ⁻¹⁾ − m⁽ʲ⁾) O⁽ʲ⁻¹⁾ + P̃⁽ʲ⁾ V⁽ʲ⁾           the output so far, rescaled the same way
    Z = O⁽ᴺ⁾ / l⁽ᴺ⁾,   L = m⁽ᴺ⁾ + log l⁽ᴺ⁾

Backward, with A = exp(S − L) made again per tile and D = rowsum(dZ ⊙ Z) (= Σⱼ Aᵢⱼ dAᵢⱼ, the
softmax backward's row term, since Z = AV):

    dV = Aᵀ dZ     dA = dZ Vᵀ     dS = A ⊙ (dA − D)     dQ = dS K /√d_k     dK = dSᵀ Q /√d_k
"""
import math

import numpy as np

from ..autograd import Function
from .rows import row_dot, row_max, row_sum


class TiledAttention(Function):
    """q [..., T_q, d_k], k [..., T_k, d_k], v [..., T_k, d_v] -> Z [..., T_q, d_v], in tiles.

    mask: None, boolean (True = blocked) or floating (added to the scaled scores), a numpy
    array broadcasting against [..., T_q, T_k]. causal_offset: None, or an int c blocking key
    j for query i when j > i + c (0: PyTorch's top-left alignment; T_k − T_q: the last query
    sees the last key, as after a KV cache); key tiles wholly in a row tile's future are never
    computed. A row with every key blocked gives a zero output (L = +∞ there, so that
    backward's exp(S − L) is 0). dropout_p: attention dropout on the weights, each tile's keep
    mask drawn from a seed of this call and drawn again in backward (Dao et al. 2022,
    Algorithm 2, which keeps the generator's state the same way). tile_q, tile_k: the paper's
    B_r and B_c, rows of queries and keys per tile.
    """

    op = "tiled_attention"

    def __init__(self, mask=None, causal_offset=None, dropout_p=0.0, seed=None, tile_q=64,
                 tile_k=64):
        super().__init__()
        self.mask, self.causal_offset = mask, causal_offset
        self.dropout_p, self.seed = dropout_p, seed
        self.tile_q, self.tile_k = tile_q, tile_k

    def _key_tiles(self, i0, i1, t_k):
        """Start and end of each key tile that row tile [i0, i1) sees: causal skips the tiles
        whose first key lies after the last query's last visible key."""
        last = t_k if self.causal_offset is None else min(t_k, i1 + self.causal_offset)
        for j0 in range(0, max(last, 0), self.tile_k):
            yield j0, min(j0 + self.tile_k, t_k)

    def _scores(self, q_i, k_j, i0, j0):
        """S = Q_i K_jᵀ/√d_k of one tile, masked: blocked keys −∞, a float mask added."""
        s = q_i @ np.swapaxes(k_j, -1, -2)                  # [..., B_r, B_c]   Q_i K_jᵀ
        s *= _scale(q_i.shape[-1])                           # [..., B_r, B_c]   S, as ordinary
        i1, j1 = i0 + s.shape[-2], j0 + s.shape[-1]
        if self.mask is not None:
            m = self.mask[..., i0:i1, j0:j1]                # [..., B_r, B_c]   (a broadcast view)
            if m.dtype == np.bool_:
                np.copyto(s, -np.inf, where=m)
            else:
                s += m                                      # the course's S + M
        if self.causal_offset is not None and j1 - 1 > i0 + self.causal_offset:  # crosses it
            future = np.arange(j0, j1) > np.arange(i0, i1)[:, None] + self.causal_offset
            np.copyto(s, -np.inf, where=future)             # [B_r, B_c] broadcast over [...]
        return s

    def _keep(self, shape, i0, j0):
        """The dropout factor of one tile: 0 where dropped, 1/(1−p) where kept, from a generator
        seeded by (call, tile) so that backward draws the same mask; None without dropout."""
        if self.dropout_p == 0:
            return None
        rng = np.random.default_rng([self.seed, i0, j0])
        return (rng.random(shape) >= self.dropout_p) / np.float32(1 - self.dropout_p)

    def _prepare(self, q, k, v):
        """q, k, v with their batch dims broadcast (views), and the mask as a view over
        [..., T_q, T_k]: tiles are then plain slices of all four."""
        t_q, t_k = q.shape[-2], k.shape[-2]
        batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2],
                                    () if self.mask is None else self.mask.shape[:-2])
        if self.mask is not None:
            if self.mask.dtype != np.bool_:  # cast before broadcasting: a view stays a view
                self.mask = self.mask.astype(q.dtype, copy=False)
            self.mask = np.broadcast_to(self.mask, batch + (t_q, t_k))
        return (np.broadcast_to(q, batch + q.shape[-2:]), np.broadcast_to(k, batch + k.shape[-2:]),
                np.broadcast_to(v, batch + v.shape[-2:]))

    def forward(self, q, k, v):
        q, k, v = self._prepare(q, k, v)
        t_q, t_k = q.shape[-2], k.shape[-2]
        z = np.empty(q.shape[:-1] + v.shape[-1:], q.dtype)        # [..., T_q, d_v]  Z
        lse = np.empty(q.shape[:-1] + (1,), q.dtype)               # [..., T_q, 1]    L
        for i0 in range(0, t_q, self.tile_q):                      # row tiles of queries
            i1 = min(i0 + self.tile_q, t_q)
            q_i = q[..., i0:i1, :]                                 # [..., B_r, d_k]
            m_i = np.full(q_i.shape[:-1] + (1,), -np.inf, q.dtype) # [..., B_r, 1]    running max
            l_i = np.zeros_like(m_i)                               # [..., B_r, 1]    running sum
            o_i = np.zeros(q_i.shape[:-1] + v.shape[-1:], q.dtype) # [..., B_r, d_v]  running O
            for j0, j1 in self._key_tiles(i0, i1, t_k):            # column tiles of keys
                s = self._scores(q_i, k[..., j0:j1, :], i0, j0)    # [..., B_r, B_c]  S⁽ʲ⁾
                m_new = np.maximum(m_i, row_max(s))                # m⁽ʲ⁾ = max(m⁽ʲ⁻¹⁾, rowmax S⁽ʲ⁾)
                shift = np.where(np.isneginf(m_new), 0, m_new)     # no key yet: −∞ − (−∞) is NaN
                p = np.exp(s - shift, out=s)                       # [..., B_r, B_c]  P̃⁽ʲ⁾
                alpha = np.exp(m_i - shift)                        # [..., B_r, 1]  e^(m⁽ʲ⁻¹⁾−m⁽ʲ⁾)
                l_i = alpha * l_i + row_sum(p)                     # l⁽ʲ⁾
                keep = self._keep(p.shape, i0, j0)
                if keep is not None:
                    p *= keep                                      # dropout on the weights only
                o_i = alpha * o_i + p @ v[..., j0:j1, :]           # [..., B_r, d_v]  O⁽ʲ⁾
                m_i = m_new
            empty = l_i == 0                                       # every key blocked
            l_i[empty] = 1                                         # so that Z = O/1 = 0 there
            z[..., i0:i1, :] = o_i / l_i                           # Z = O⁽ᴺ⁾ / l⁽ᴺ⁾
            lse[..., i0:i1, :] = np.where(empty, np.inf, m_i + np.log(l_i))  # L = m + log l
        self.save(q=q, k=k, v=v, z=z, lse=lse)
        return z

    def backward(self, dz):
        q, k, v, z, lse = (self.saved[name] for name in ("q", "k", "v", "z", "lse"))
        t_q, t_k = q.shape[-2], k.shape[-2]
        scale = _scale(q.shape[-1])
        d = row_dot(dz, z)                                         # [..., T_q, 1]  D = Σ dZ⊙Z
        dq, dk, dv = (np.zeros(x.shape, x.dtype) for x in (q, k, v))
        for i0 in range(0, t_q, self.tile_q):
            i1 = min(i0 + self.tile_q, t_q)
            q_i, dz_i = q[..., i0:i1, :], dz[..., i0:i1, :]        # [..., B_r, d_k | d_v]
            for j0, j1 in self._key_tiles(i0, i1, t_k):
                k_j, v_j = k[..., j0:j1, :], v[..., j0:j1, :]      # [..., B_c, d_k | d_v]
                s = self._scores(q_i, k_j, i0, j0)                 # [..., B_r, B_c]  S, again
                a = np.exp(s - lse[..., i0:i1, :], out=s)          # [..., B_r, B_c]  A = exp(S − L)
                da = dz_i @ np.swapaxes(v_j, -1, -2)               # [..., B_r, B_c]  dA = dZ Vᵀ
                keep = self._keep(a.shape, i0, j0)
                a_kept = a if keep is None else a * keep           # the weights Z was made of
                dv[..., j0:j1, :] += np.swapaxes(a_kept, -1, -2) @ dz_i   # dV = Aᵀ dZ
                if keep is not None:
                    da *= keep                                     # back through the dropout
                ds = a * (da - d[..., i0:i1, :])                   # [..., B_r, B_c]  dS = A⊙(dA−D)
                dq[..., i0:i1, :] += (ds @ k_j) * scale            # dQ = dS K /√d_k
                dk[..., j0:j1, :] += (np.swapaxes(ds, -1, -2) @ q_i) * scale  # dK = dSᵀ Q /√d_k
        need_q, need_k, need_v = self.needs_input_grad
        return dq if need_q else None, dk if need_k else None, dv if need_v else None


def _scale(d_k):
    """1/√d_k; with d_k = 0 every score is an empty sum, 0, and any finite scale keeps it 0:
    softmax then weighs the unblocked keys equally (the mean of V, as torch)."""
    return 1.0 / math.sqrt(d_k) if d_k else 1.0
