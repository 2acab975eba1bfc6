"""The one line each nn layer prints in `repr(model)` (torch's `extra_repr`), kept off the
reading path: nn/__init__.py imports this file, which attaches each to its layer."""
from .attention import MultiHeadAttention
from .block import TransformerBlock
from .feedforward import FeedForward
from .layers import Dropout, Embedding, LayerNorm, Linear
from .transformer import TransformerDecoderLayer, TransformerEncoderLayer


def _linear(self):
    return f"{self.in_features}, {self.out_features}, bias={self.bias is not None}"


def _embedding(self):
    return f"{self.num_embeddings}, {self.embedding_dim}"


def _layer_norm(self):
    return (f"{self.normalized_shape}, eps={self.eps}, "
            f"elementwise_affine={self.weight is not None}, bias={self.bias is not None}")


def _dropout(self):
    return f"p={self.p}"


def _multi_head_attention(self):
    return f"d_model={self.d_model}, n_heads={self.n_heads}"


def _feed_forward(self):
    return f"activation={self.activation!r}"


def _block(self):
    return f"norm_first={self.norm_first}"


def _transformer_layer(self):
    return f"batch_first={self.batch_first}, norm_first={self.norm_first}"


for layer, extra_repr in ((Linear, _linear), (Embedding, _embedding), (LayerNorm, _layer_norm),
                          (Dropout, _dropout), (MultiHeadAttention, _multi_head_attention),
                          (FeedForward, _feed_forward), (TransformerBlock, _block),
                          (TransformerEncoderLayer, _transformer_layer),
                          (TransformerDecoderLayer, _transformer_layer)):
    layer.extra_repr = extra_repr
