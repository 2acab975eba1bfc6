"""The 2017 encoder-decoder Transformer: an encoder reads the whole source, a decoder writes the
target one token at a time while attending to the encoder output (notes 3.6: decoder-only is
not the whole Transformer; 3.7: teacher forcing, then step-by-step decoding with a KV cache).

    memory = encoder(E_src[src]·√D + PE)        [B, T_src, D]  self-attention over all, FFN
                                                (pre-norm: each stack ends with a LayerNorm)
    x = decoder(E_tgt[tgt_in]·√D + PE, memory)  [B, T_tgt, D]  causal self-, cross-attention, FFN
    logits = x · E_tgtᵀ                         [B, T_tgt, V]  tied (out_proj if tie_output=False)

References: Vaswani et al. 2017, "Attention Is All You Need": §3.1 (the two stacks), §3.4
(embeddings × √d_model, output projection shared with the target embedding), §3.5 (sinusoidal
positions), §5.4 (dropout, label smoothing); Rush et al., "The Annotated Transformer" (Harvard
NLP), the same model in PyTorch. The layers are nn/transformer.py's.
"""
import math

import numpy as np

import microtensor
import microtensor.functional as F
import nn
from microtensor import Tensor

from . import seq2seq_inputs as inputs
from .config import Seq2SeqConfig
from .sampling import sample_next
from .weight_init import init_xavier_uniform

__all__ = ["Seq2SeqTransformer", "Seq2SeqConfig", "sinusoidal_positions"]


def sinusoidal_positions(max_len, d_model):
    """The fixed position table PE [max_len, d_model] float32 of §3.5:

    PE[pos, 2i] = sin(pos / 10000^(2i/d_model)),  PE[pos, 2i+1] = cos(pos / 10000^(2i/d_model)),
    each pair of columns a clock of its own wavelength, PE[pos + k] a fixed rotation of PE[pos].
    """
    pos = np.arange(max_len)[:, None]                               # [max_len, 1]
    rate = 10000.0 ** (-np.arange(0, d_model, 2) / d_model)         # [ceil(D/2)]
    angles = pos * rate                                             # [max_len, ceil(D/2)]
    pe = np.zeros((max_len, d_model))
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles[:, :d_model // 2])
    return pe.astype(np.float32)


class Seq2SeqTransformer(nn.Module):
    """src [B, T_src], tgt_in [B, T_tgt] int -> logits [B, T_tgt, tgt_vocab_size]."""

    kind, config_class = "seq2seq", Seq2SeqConfig  # its name and config in a checkpoint

    def __init__(self, config):
        super().__init__()
        self.config = c = config
        self.src_embed = nn.Embedding(c.src_vocab_size, c.d_model)
        self.tgt_embed = nn.Embedding(c.tgt_vocab_size, c.d_model)
        self.positions = sinusoidal_positions(c.max_len, c.d_model)  # [max_len, D], fixed
        self.drop = nn.Dropout(c.dropout)
        layer = dict(d_model=c.d_model, nhead=c.n_heads, dim_feedforward=c.d_ff, dropout=c.dropout,
                     activation=c.activation, norm_first=c.norm_first, batch_first=True)
        self.encoder = nn.ModuleList(nn.TransformerEncoderLayer(**layer)
                                     for _ in range(c.n_encoder_layers))
        self.decoder = nn.ModuleList(nn.TransformerDecoderLayer(**layer)
                                     for _ in range(c.n_decoder_layers))
        if c.norm_first:  # pre-norm: nothing else normalises the last layer's output
            self.encoder_norm = nn.LayerNorm(c.d_model)
            self.decoder_norm = nn.LayerNorm(c.d_model)
        if not c.tie_output:  # else the output projection is tgt_embed's weight, transposed
            self.out_proj = nn.Linear(c.d_model, c.tgt_vocab_size)
        nn.use_attention(self, c.attention)
        init_xavier_uniform(self)  # Glorot U(±√(6/(fan_in + fan_out))) (weight_init.py)

    def _embed(self, embedding, ids, start=0):
        """Token embeddings × √d_model plus the sinusoid of each position (§3.4, §3.5)."""
        end = start + ids.shape[1]
        inputs.check_max_len(end, self.config.max_len)
        x = embedding(ids) * math.sqrt(self.config.d_model)       # [B, T, D]
        pe = Tensor(self.positions[start:end], name="positions (sinusoidal)")  # [T, D]
        return self.drop(x + pe)                                    # [B, T, D] + [T, D]

    def encode(self, src, src_padding_mask=None):
        """The encoder output, `memory` [B, T_src, D], for src [B, T_src] int;
        src_padding_mask bool [B, T_src], True at padding (None: where src == pad_id)."""
        src, pad = inputs.source_and_padding(src, src_padding_mask, self.config.pad_id)
        x = self._embed(self.src_embed, src)                        # [B, T_src, D]
        for layer in self.encoder:
            x = layer(x, src_key_padding_mask=pad)                  # [B, T_src, D]
        return self.encoder_norm(x) if self.config.norm_first else x

    def decode(self, tgt_in, memory, src_padding_mask, tgt_padding_mask=None, caches=None):
        """Logits [B, T_tgt, tgt_vocab_size] for the target tokens tgt_in [B, T_tgt] given memory;
        caches: one (self-attention, cross-attention) pair of nn.KVCache per decoder layer
        (decoding): tgt_in then holds only the new tokens, at positions start onwards."""
        start = inputs.decode_start(caches, len(self.decoder))      # positions already cached
        x = self._embed(self.tgt_embed, tgt_in, start)              # [B, T_tgt, D]
        caches = caches or [(None, None)] * len(self.decoder)
        for layer, (self_cache, cross_cache) in zip(self.decoder, caches):
            x = layer(x, memory, tgt_key_padding_mask=tgt_padding_mask,
                      memory_key_padding_mask=src_padding_mask, tgt_is_causal=True,
                      self_attn_cache=self_cache, cross_attn_cache=cross_cache)  # [B, T, D]
        if self.config.norm_first:
            x = self.decoder_norm(x)
        return x @ self.tgt_embed.weight.T if self.config.tie_output else self.out_proj(x)

    def forward(self, src, tgt_in, targets=None, src_padding_mask=None, tgt_padding_mask=None,
                label_smoothing=0.0):
        """Teacher forcing (3.7): (logits [B, T_tgt, V] float32, the loss given targets, or None).

        src int [B, T_src]; tgt_in int [B, T_tgt], the target shifted right (bos_id, y_1, ...);
        targets [B, T_tgt] (y_1, ..., eos_id), pad_id left out of the loss. Padding masks bool,
        True at padding (src's None: src == pad_id; tgt's None: the causal mask alone).
        label_smoothing ε (§5.4): targets (1 − ε)·onehot + ε/V. ValueError: seq2seq_inputs.py.
        """
        src, pad = inputs.source_and_padding(src, src_padding_mask, self.config.pad_id)
        memory = self.encode(src, pad)                              # [B, T_src, D]
        tgt_in = inputs.ids_array(tgt_in, "tgt_in")
        logits = self.decode(tgt_in, memory, pad, tgt_padding_mask)  # [B, T_tgt, V]
        if targets is None:
            return logits, None
        targets = inputs.ids_array(targets, "targets")
        targets = np.where(targets == self.config.pad_id, -100, targets)  # ignore_index
        return logits, F.cross_entropy(logits, targets, label_smoothing=label_smoothing)

    def generate(self, src, max_new_tokens, src_padding_mask=None, use_cache=True):
        """Greedy translation from bos_id to eos_id -> int64 [B, ≤ max_new_tokens] (bos_id left
        out; after a row's eos_id, pad_id). The encoder runs once; use_cache: each step decodes
        the newest token against each layer's KV caches (3.7), else the whole prefix again.
        Under no_grad, in the current mode. ValueError: bad input (seq2seq_inputs), NaN logits."""
        c = self.config
        inputs.check_max_new_tokens(max_new_tokens, c.max_len)
        src, pad = inputs.source_and_padding(src, src_padding_mask, c.pad_id)
        out = np.full((len(src), 1), c.bos_id, dtype=np.int64)     # [B, 1]
        done = np.zeros(len(src), dtype=bool)
        with microtensor.no_grad():
            memory = self.encode(src, pad)                          # [B, T_src, D]
            caches = [(nn.KVCache(), nn.KVCache()) for _ in self.decoder] if use_cache else None
            for _ in range(max_new_tokens):
                step_in = out[:, -1:] if use_cache else out         # [B, 1] or [B, t]
                logits = self.decode(step_in, memory, pad, caches=caches)
                next_id = sample_next(logits.data[:, -1, :], top_k=1)  # [B]  greedy: argmax
                next_id = np.where(done, c.pad_id, next_id)
                out = np.concatenate([out, next_id[:, None]], axis=1)  # [B, t + 1]
                done |= next_id == c.eos_id
                if done.all():
                    break
        return out[:, 1:]

