"""A decoder-only GPT language model (notes 3.6 and 3.7; Radford et al. 2019, GPT-2).

    x = wte[idx] + wpe[0..T-1]          [B, T, D]  token + position embeddings
    x = block(x), n_layer times         [B, T, D]  attention + FFN sub-layers (nn/block.py)
    logits = LayerNorm(x) · wteᵀ        [B, T, V]  the LM head, tied to the token embedding

References: Vaswani et al. 2017; Karpathy, nanoGPT `model.py` (the same architecture and
initialisation, written from scratch). GPTConfig: models/config.py; sampling: models/sampling.py.
"""
import numpy as np

import microtensor
import microtensor.functional as F
import nn
from microtensor import Tensor

from .config import GPTConfig
from .gpt_inputs import check_forward
from .sampling import TEMPERATURE_MIN, check_generate, sample_next
from .weight_init import init_gpt2_weights

__all__ = ["GPT", "GPTConfig", "TEMPERATURE_MIN", "sample_next", "init_gpt2_weights"]


class GPT(nn.Module):
    """idx [B, T] int -> logits [B, T, vocab_size]: next-token scores at every position. The
    head reuses wte (Press & Wolf 2017): backward adds the gradients of both uses. The config
    keeps nanoGPT's names (n_embd = D, n_head = H)."""

    kind, config_class = "gpt", GPTConfig  # its name and config in a checkpoint

    def __init__(self, config):
        super().__init__()
        self.config = c = config
        self.wte = nn.Embedding(c.vocab_size, c.n_embd)             # tokens [V, D]
        self.wpe = nn.Embedding(c.block_size, c.n_embd)             # positions [block_size, D]
        self.drop = nn.Dropout(c.dropout)
        # GPTConfig's defaults (models/config.py): pre-norm, GELU, biases, dropout 0
        self.blocks = nn.ModuleList(
            nn.TransformerBlock(c.n_embd, c.n_head, 4 * c.n_embd, dropout=c.dropout,
                                norm_first=c.norm_first, activation=c.activation, bias=c.bias)
            for _ in range(c.n_layer))
        self.ln_f = nn.LayerNorm(c.n_embd, bias=c.bias)
        nn.use_attention(self, c.attention)  # "ordinary" or "tiled" attention: same values (3.8)
        init_gpt2_weights(self, c.n_layer)  # GPT-2's N(0, 0.02), residual ones ÷√(2·n_layer)

    def forward(self, idx, targets=None, kv_caches=None, last_only=False):
        """(logits [B, T, V] float32, the mean cross-entropy against targets [B, T], or None).

        Teacher forcing (3.7): for the text ABCD, idx = [A, B, C] and targets = [B, C, D].
        kv_caches: one nn.KVCache per block (generation); idx holds only the new tokens, at
        positions start = len(cache) onwards. last_only: logits [B, 1, V] of the last position
        alone (generate's uncached slide step). ValueError: bad input (gpt_inputs.py).
        """
        idx, start = check_forward(self, idx, kv_caches, last_only)  # start: positions cached
        caches = kv_caches or [None] * len(self.blocks)
        positions = np.arange(start, start + idx.shape[1])          # [T]  after the cached ones
        x = self.drop(self.wte(idx) + self.wpe(positions))          # [B, T, D]
        for i, (block, cache) in enumerate(zip(self.blocks, caches)):
            # last_only in the last block alone: each earlier block's rows are the next one's K, V
            x = block(x, kv_cache=cache, last_only=last_only and i == len(caches) - 1)
        logits = self.ln_f(x) @ self.wte.weight.T                   # [B, T, V]  tied LM head
        loss = None if targets is None else F.cross_entropy(logits, targets)
        return logits, loss

    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None, use_cache=True):
        """idx [B, T] int -> [B, T + max_new_tokens] (a Tensor for a Tensor idx): each new token
        sampled from the last position's logits (sampling.py; 3.7), under no_grad in the current
        mode (model.eval() first). use_cache=False: every step runs the last block_size tokens
        again. Errors: check_generate.

        E.g. block_size 4, a prompt of 2, 3 new tokens: step 1 prefills both (K, V of positions
        0, 1 cached); steps 2 and 3 decode the newest token alone, at positions 2 and 3. A 4th
        step would have 5 tokens: no position 4 exists, so it slides (the last 4, no cache)."""
        was_tensor = isinstance(idx, Tensor)
        idx = check_generate(idx.data if was_tensor else idx, max_new_tokens, temperature, top_k)
        block_size, caches = self.config.block_size, None
        with microtensor.no_grad():
            for _ in range(max_new_tokens):
                # fits: the newest token's position, idx.shape[1] − 1, is < block_size
                fits = use_cache and idx.shape[1] <= block_size
                if fits and caches is None:                 # prefill: the prompt, once
                    caches = [nn.KVCache() for _ in self.blocks]
                    logits, _ = self(idx, kv_caches=caches)
                elif fits:                                  # decode: the newest token alone
                    logits, _ = self(idx[:, -1:], kv_caches=caches)
                else:                                       # slide: the last block_size again
                    caches = None
                    logits, _ = self(idx[:, -block_size:], last_only=True)
                next_id = sample_next(logits.data[:, -1, :], temperature, top_k)  # [B]
                idx = np.concatenate([idx, next_id[:, None]], axis=1)
        return Tensor(idx) if was_tensor else idx

    def num_parameters(self, non_embedding=False):
        """Number of learnable scalars (the tied wte counted once); non_embedding leaves out wpe."""
        return super().num_parameters() - (self.wpe.weight.size if non_embedding else 0)

