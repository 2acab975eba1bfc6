"""The KV cache for step-by-step decoding (notes 3.7), and the check of the caches a model is given.

A decoder that generates one token at a time attends, at each step, over the keys and values
of every position so far; those of the past positions do not change, so they are kept
(`KVCache`) instead of being projected again. Appending is a concatenation along the
positions. The speed work, `DoublingBuffers` (the append without copying the whole cache
each step), lives here too, off the reading path of `attention.py`.
"""
import numpy as np

import microtensor
from microtensor import Tensor, writing


class KVCache:
    """The keys and values of the positions already decoded, for one attention layer (notes 3.7).

    Generation appends one step's k, v [B, H, T_new, d] and attends over everything
    cached so far; nothing about the future is known in advance. For cross-attention it
    holds the encoder output's keys and values, projected once per source (Vaswani et al.
    2017 §3.2.3: every decoder step queries the same memory).
    """

    def __init__(self):
        self.k = self.v = None    # [B, H, T_past, d] each, or None before the first append
        self._buffers = None      # DoublingBuffers, once decoding runs without a graph

    def __len__(self):
        return 0 if self.k is None else self.k.shape[-2]

    def append(self, k, v):
        """Add the new positions; returns all keys and values [B, H, T_past + T_new, d]."""
        if self.k is None:
            self.k, self.v = k, v
        elif microtensor.is_grad_enabled() and any(
                t.requires_grad for t in (self.k, self.v, k, v)):
            # with a graph: cat records the append, so backward reaches the cached k and v
            self._buffers = None
            self.k = microtensor.cat([self.k, k], axis=-2)   # [B, H, T_past + T_new, d]
            self.v = microtensor.cat([self.v, v], axis=-2)
        else:
            # speed: without a graph, copy only the new positions (see DoublingBuffers)
            if self._buffers is None:
                self._buffers = DoublingBuffers(self.k, self.v)
            self.k, self.v = self._buffers.append(k, v)
        return self.k, self.v

    def keys_values(self, attn, source, cross):
        """An nn.MultiHeadAttention's K, V [B, H, T_k, d_k] through this cache: in
        self-attention, `source`'s projected and appended (returns every position's); in
        cross-attention (`cross`), the context's projected at the first call and reused after."""
        if cross and len(self):
            return self.k, self.v                           # projected once per source
        k = attn._split_heads(attn.k_proj(source))          # [B, H, T_new, d_k]
        v = attn._split_heads(attn.v_proj(source))
        return self.append(k, v)                            # [B, H, T_past + T_new, d_k]


class DoublingBuffers:
    """Speed: the cache's keys and values in buffers with room to spare, doubled when full.

    `append` copies only the new positions and returns views of the filled part, where
    concatenating would copy the whole cache at every step (O(T²) copies over T steps;
    doubling copies each position O(1) times on average). Used by KVCache.append alone.
    """

    def __init__(self, k, v):
        self.length = k.shape[-2]
        self.keys, self.values = (self._grown(c.data, 2 * self.length) for c in (k, v))

    @staticmethod
    def _grown(filled, capacity):
        """A new buffer Tensor [..., capacity, d] holding `filled` [..., T, d] at its start."""
        buffer = Tensor(np.empty(filled.shape[:-2] + (capacity, filled.shape[-1]), filled.dtype))
        with writing(buffer) as data:
            data[..., :filled.shape[-2], :] = filled
        return buffer

    def append(self, k, v):
        """Copy k, v [B, H, T_new, d] after the filled positions; views of all of them."""
        for name, array, buffer in (("keys", k, self.keys), ("values", v, self.values)):
            if array.shape[:-2] + array.shape[-1:] != buffer.shape[:-2] + buffer.shape[-1:]:
                cached = buffer.shape[:-2] + (self.length,) + buffer.shape[-1:]
                raise ValueError(f"KVCache.append: {name} of shape {array.shape} do not fit the "
                                 f"cached {cached}; expected [B, H, T_new, d], the same "
                                 "B, H and d")
        old, new = self.length, self.length + k.shape[-2]
        if self.keys.shape[-2] < new:
            self.keys = self._grown(self.keys.data[..., :old, :], 2 * new)
            self.values = self._grown(self.values.data[..., :old, :], 2 * new)
        # counted writes: a graph that saved an earlier view of the buffers refuses backward
        with writing(self.keys, self.values) as (keys, values):
            keys[..., old:new, :] = k.data
            values[..., old:new, :] = v.data
        self.length = new
        return self._filled(self.keys, new), self._filled(self.values, new)

    @staticmethod
    def _filled(buffer, length):
        """buffer[..., :length, :] as a view sharing the buffer's count of in-place writes
        (the count `writing` bumps in `append`), wrapped directly. Speed: the public
        `buffer[..., :length, :]` gives the same view and shared count through an op, 12 µs a
        call against 1.2 µs here, and decoding makes two per layer per token."""
        view = Tensor._make(buffer.data[..., :length, :])
        view._version = buffer._version_box()
        return view


def check_kv_caches(caches, n_layers, who, pairs=False):
    """The caches a caller passes to a model: a list with one nn.KVCache per layer (a pair
    (self, cross) per decoder layer if `pairs`), none shared between layers, the
    self-attention ones holding the same number of positions. TypeError or ValueError in
    one line naming `who` otherwise (a shared cache would mix two layers' keys)."""
    if not isinstance(caches, (list, tuple)):
        raise TypeError(f"{who}: caches must be a list with one entry per layer; got "
                        f"{type(caches).__name__}")
    if len(caches) != n_layers:
        raise ValueError(f"{who}: got {len(caches)} caches; expected one per layer, {n_layers}")
    flat = []
    for i, entry in enumerate(caches):
        if pairs and not (isinstance(entry, (list, tuple)) and len(entry) == 2):
            raise TypeError(f"{who}: cache {i} must be a (self-attention, cross-attention) "
                            f"pair of nn.KVCache; got {entry!r:.60}")
        for cache in (entry if pairs else (entry,)):
            if not isinstance(cache, KVCache):
                raise TypeError(f"{who}: cache {i} must be an nn.KVCache; got "
                                f"{type(cache).__name__}")
            if any(cache is seen for seen in flat):
                raise ValueError(f"{who}: cache {i} is an nn.KVCache already passed for "
                                 "another layer; each layer needs its own")
            flat.append(cache)
    lengths = {len(entry[0] if pairs else entry) for entry in caches}
    if len(lengths) > 1:
        raise ValueError(f"{who}: the caches hold different numbers of positions "
                         f"{sorted(lengths)}; they must come from the same decoding run")
