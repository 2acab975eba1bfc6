"""nn: layers, attention, Transformer blocks and optimizers on microtensor (torch.nn's names)."""
from . import optim, utils
from .attention import KVCache, MultiHeadAttention, causal_mask, scaled_dot_product_attention
from .block import TransformerBlock, residual
from .feedforward import FeedForward
from .layers import GELU, Dropout, Embedding, LayerNorm, Linear, ReLU
from .module import Module, ModuleList, Parameter, Sequential
from .tiled_attention import check_attention, tiled_attention, use_attention
from .transformer import TransformerDecoderLayer, TransformerEncoderLayer

__all__ = ["Module", "Parameter", "Sequential", "ModuleList", "Linear", "Embedding", "LayerNorm",
           "Dropout", "ReLU", "GELU", "scaled_dot_product_attention", "causal_mask", "KVCache",
           "MultiHeadAttention", "FeedForward", "TransformerBlock", "residual", "optim", "utils",
           "TransformerEncoderLayer", "TransformerDecoderLayer", "tiled_attention",
           "check_attention", "use_attention"]
