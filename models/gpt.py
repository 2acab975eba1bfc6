"""A decoder-only GPT language model (notes 3.6 and 3.7; Radford et al. 2019).

    x = wte[idx] + wpe[0..T-1]          [B, T, D]  token + position embeddings
    x = block(x), n_layer times         [B, T, D]  attention + FFN sub-layers (nn/block.py)
    logits = LayerNorm(x) · wteᵀ        [B, T, V]  the LM head, tied to the token embedding

Training is teacher forcing: one causal forward scores every position at once. Generation is
step by step: the known prompt runs in one forward (prefill), then each new token waits for
the one before (decode), with a KV cache reusing the keys and values already computed.

References: Radford et al. 2019, "Language Models are Unsupervised Multitask Learners"
(GPT-2); Vaswani et al. 2017, "Attention Is All You Need"; Karpathy, nanoGPT `model.py`
(the same architecture and initialisation, written here from scratch on microtensor).
"""
import math
from dataclasses import dataclass

import numpy as np

import microtensor
import microtensor.functional as F
import nn
from microtensor import Tensor, writing

from .config import Config
from .last_position import last_position_logits


@dataclass
class GPTConfig(Config):
    """The shape of a GPT; the MLP is 4 * n_embd wide. ValueError for a size < 1, n_embd not
    divisible by n_head, dropout outside [0, 1), an unknown activation or attention, a non-bool.

    bias: biases in every Linear and LayerNorm (False is nanoGPT's slightly better, faster choice).
    norm_first: pre-norm blocks (GPT-2) if True, the 2017 post-norm if False.
    activation: "gelu" (GPT-2) or "relu" (the 2017 Transformer).
    attention: "ordinary" (primitive ops, keeps the T×T weights) or "tiled" (O(T) memory,
        nn/tiled_attention.py; notes 3.8): the same values and gradients.
    """

    vocab_size: int
    block_size: int
    n_layer: int
    n_head: int
    n_embd: int
    dropout: float = 0.0
    bias: bool = True
    norm_first: bool = True
    activation: str = "gelu"
    attention: str = "ordinary"

    def __post_init__(self):
        self.require_positive("vocab_size", "block_size", "n_layer", "n_head", "n_embd")
        nn.check_attention(self.attention, "GPTConfig")
        self.require_heads_divide("n_embd", "n_head")
        self.require_dropout_and_activation()
        self.require_bools()

    def num_elements(self):
        """The parameter count of GPT(self): embeddings, n_layer blocks of 12·D² weights
        (+ 13·D biases and LayerNorm shifts, or 2·D LayerNorm scales without them), ln_f."""
        d, bias = self.n_embd, self.bias
        block = 12 * d * d + (13 * d if bias else 2 * d)
        final_norm = 2 * d if bias else d
        return (self.vocab_size + self.block_size) * d + self.n_layer * block + final_norm


class GPT(nn.Module):
    """idx [B, T] int -> logits [B, T, vocab_size]: next-token scores at every position.

    Sub-modules: wte (token embedding [V, D]), wpe (position embedding [block_size, D]),
    drop, blocks (n_layer TransformerBlocks), ln_f (final LayerNorm). The tied head reads
    tokens in and scores them out with one [V, D] matrix (Press & Wolf 2017); backward adds
    the gradients of both uses. Names: the config keeps nanoGPT's (n_embd, n_head, n_layer,
    idx), the layers PyTorch's (q_proj/k_proj/v_proj/out_proj; nanoGPT fuses `c_attn` and
    calls out_proj `c_proj`).
    """

    kind, config_class = "gpt", GPTConfig  # its name and config in a checkpoint

    def __init__(self, config):
        super().__init__()
        self.config = c = config
        self.wte = nn.Embedding(c.vocab_size, c.n_embd)
        self.wpe = nn.Embedding(c.block_size, c.n_embd)
        self.drop = nn.Dropout(c.dropout)
        self.blocks = nn.ModuleList(
            nn.TransformerBlock(c.n_embd, c.n_head, 4 * c.n_embd, dropout=c.dropout,
                                norm_first=c.norm_first, activation=c.activation, bias=c.bias)
            for _ in range(c.n_layer))
        self.ln_f = nn.LayerNorm(c.n_embd, bias=c.bias)
        nn.use_attention(self, c.attention)
        init_gpt2_weights(self, c.n_layer)

    def forward(self, idx, targets=None, kv_caches=None):
        """Logits for every position, and the mean cross-entropy against `targets` if given.

        Teacher forcing (notes 3.7): for the text ABCD, idx = [A, B, C] and targets =
        [B, C, D]; the causal mask lets position t see tokens 0..t alone, so one forward
        trains every position on its true history.

        Args:
            idx: int token ids [B, T] (numpy array or Tensor), T <= block_size.
            targets: int ids [B, T], the next token at each position, or None.
            kv_caches: one nn.KVCache per block, for generation: idx then holds only the
                new tokens, at positions start = len(cache) onwards.
        Returns:
            (logits [B, T, vocab_size] float32 Tensor, loss scalar Tensor or None).
        Raises:
            ValueError: idx is not 2-D, or the positions run past block_size; TypeError or
                ValueError: kv_caches that are not one nn.KVCache per block.
        """
        idx = np.asarray(idx.data if isinstance(idx, Tensor) else idx)
        if idx.ndim != 2:
            raise ValueError(f"GPT: idx must be [B, T] token ids; got shape {idx.shape}")
        if kv_caches is not None:
            nn.check_kv_caches(kv_caches, len(self.blocks), "GPT: kv_caches")
        start = len(kv_caches[0]) if kv_caches else 0
        end, block_size = start + idx.shape[1], self.config.block_size
        if end > block_size:
            raise ValueError(f"GPT: sequence length {end} exceeds block_size {block_size}; "
                             f"crop idx to its last {block_size} tokens")
        x = self.wte(idx) + self.wpe(np.arange(start, end))  # [B, T, D]  tokens + positions
        x = self.drop(x)
        for block, cache in zip(self.blocks, kv_caches or [None] * len(self.blocks)):
            x = block(x, kv_cache=cache)                    # [B, T, D]
        x = self.ln_f(x)                                    # [B, T, D]
        logits = x @ self.wte.weight.T                      # [B, T, V]  tied LM head
        loss = None if targets is None else F.cross_entropy(logits, targets)
        return logits, loss

    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None, use_cache=True):
        """Extend each row of idx [B, T] by max_new_tokens sampled tokens: [B, T + max_new_tokens].

        Each step samples from the last position's logits (`sample_next`). With use_cache
        the prompt runs once (prefill), filling one KVCache per block, then each step runs
        the newest token alone against the cached keys and values (decode). Past block_size
        the window slides: every position shifts, the cached keys go stale, and each step
        recomputes the last block_size tokens, as use_cache=False does at every step.

        Runs under no_grad in the current train/eval mode (call model.eval() first). Returns
        a Tensor for a Tensor idx, else an int64 array. TypeError for idx not of integers,
        ValueError for idx not [B, T] with T >= 1, max_new_tokens not an int >= 0,
        temperature not a finite number >= TEMPERATURE_MIN (float32's smallest normal, 1.2e-38),
        or top_k not an int >= 1.
        """
        was_tensor = isinstance(idx, Tensor)
        idx = _check_generate(idx.data if was_tensor else idx, max_new_tokens, temperature, top_k)
        block_size = self.config.block_size
        caches = None
        with microtensor.no_grad():
            for _ in range(max_new_tokens):
                fits = use_cache and idx.shape[1] <= block_size
                if fits and caches is None:   # prefill: the whole prompt, once, through forward,
                    caches = [nn.KVCache() for _ in self.blocks]  # filling one cache per block
                    logits, _ = self(idx, kv_caches=caches)
                elif fits:                                  # decode: only the newest token
                    logits, _ = self(idx[:, -1:], kv_caches=caches)
                else:  # slide (or use_cache=False): recompute the last block_size tokens
                    caches = None                           # every position shifted: stale keys
                    # speed: only the last row is sampled, so compute it alone (last_position.py)
                    logits = last_position_logits(self, idx[:, -block_size:])
                next_id = sample_next(logits.data[:, -1, :], temperature, top_k)  # [B]
                idx = np.concatenate([idx, next_id[:, None]], axis=1)
        return Tensor(idx) if was_tensor else idx

    def num_parameters(self, non_embedding=False):
        """Number of learnable scalars (the tied wte counted once); non_embedding leaves out wpe."""
        n = super().num_parameters()
        return n - self.wpe.weight.size if non_embedding else n


TEMPERATURE_MIN = float(np.finfo(np.float32).tiny)  # see _check_generate


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


def init_gpt2_weights(model, n_layer, std=0.02):
    """GPT-2's initialisation, in place: every Linear and Embedding weight ~ N(0, std²),
    Linear biases 0, LayerNorms left at weight 1, bias 0.

    The two projections of each block that write into the residual stream (attn.out_proj,
    mlp.proj) get std / √(2·n_layer): 2·n_layer additions to the stream, and scaling by
    1/√(number of additions) keeps its variance from growing with depth (GPT-2 §2.3).
    """
    rng = microtensor.random.generator()
    for _, module in model.named_modules():
        if isinstance(module, (nn.Linear, nn.Embedding)):
            with writing(module.weight) as data:  # counted, as every library write (writing.py)
                data[...] = rng.normal(0.0, std, size=module.weight.shape)
        if isinstance(module, nn.Linear) and module.bias is not None:
            with writing(module.bias) as data:
                data[...] = 0.0
    for name, param in model.named_parameters():  # drawn again after the rest, as nanoGPT does
        if name.endswith(("attn.out_proj.weight", "mlp.proj.weight")):
            with writing(param) as data:
                data[...] = rng.normal(0.0, std / math.sqrt(2 * n_layer), size=param.shape)


def _check_generate(idx, max_new_tokens, temperature, top_k):
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
