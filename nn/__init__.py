"""nn: layers, attention, Transformer blocks and optimizers on microtensor (torch.nn's names)."""
from . import layer_reprs, optim, utils  # noqa: F401  (layer_reprs: each layer's repr line)
from .activations import GELU, ReLU
from .attention import MultiHeadAttention, causal_mask, scaled_dot_product_attention
from .block import TransformerBlock, residual, sublayer
from .containers import ModuleList, Sequential
from .feedforward import FeedForward
from .keep_attention import keep_attention
from .kv_cache import KVCache, check_kv_caches
from .layers import Dropout, Embedding, LayerNorm, Linear
from .module import Module, Parameter
from .tiled_attention import check_attention, tiled_attention, use_attention
from .transformer import TransformerDecoderLayer, TransformerEncoderLayer

__all__ = ["Module", "Parameter", "Sequential", "ModuleList", "Linear", "Embedding", "LayerNorm",
           "Dropout", "ReLU", "GELU", "scaled_dot_product_attention", "causal_mask", "KVCache",
           "keep_attention", "MultiHeadAttention", "FeedForward", "TransformerBlock", "residual",
           "sublayer", "optim", "utils", "TransformerEncoderLayer", "TransformerDecoderLayer",
           "tiled_attention", "check_attention", "use_attention", "check_kv_caches"]
