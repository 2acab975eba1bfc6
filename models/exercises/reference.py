"""The answers, in the students' signatures, computed by the project's own code (never a second
copy of a formula): the graders compare with these, and a workspace whose files import them
passes every exercise.
"""
import numpy as np

import nn
from microtensor.autograd import unbroadcast
from microtensor.ops.layer_norm import LayerNorm
from microtensor.ops.loss import CrossEntropy
from microtensor.ops.masking import MaskedFill
from microtensor.ops.matmul import MatMul
from microtensor.ops.softmax import Softmax

__all__ = ["unbroadcast", "matmul_backward", "softmax_backward", "layer_norm_backward",
           "cross_entropy_backward", "masked_fill", "masked_fill_backward",
           "scaled_dot_product_attention", "split_heads", "merge_heads", "pre_norm_block",
           "attend_with_cache", "adamw_step"]


# The methods as the project wrote them, taken at import: a grader plugs a student's code into
# these classes while it runs, and the answers must not call the student's code.
_MATMUL_BACKWARD = MatMul.backward
_SOFTMAX_BACKWARD = Softmax.backward
_LAYER_NORM_BACKWARD = LayerNorm.backward
_CROSS_ENTROPY = CrossEntropy.forward, CrossEntropy.backward
_MASKED_FILL = MaskedFill.forward, MaskedFill.backward


def _backward(method, op, saved, input_shapes, g):
    """op's backward(g) with its saved arrays set by hand, as if its forward had run."""
    op.saved, op.input_shapes = dict(saved), tuple(input_shapes)
    op.needs_input_grad = (True,) * len(input_shapes)
    return method(op, g)


def matmul_backward(a, b, g):
    return _backward(_MATMUL_BACKWARD, MatMul(), {"a": a, "b": b}, (a.shape, b.shape), g)


def softmax_backward(a, da, axis=-1):
    return _backward(_SOFTMAX_BACKWARD, Softmax(axis), {"a": a}, (a.shape,), da)


def layer_norm_backward(g, xhat, rstd, weight):
    gx, gw, gb = _backward(_LAYER_NORM_BACKWARD, LayerNorm(1),
                           {"xhat": xhat, "rstd": rstd, "weight": weight},
                           (xhat.shape, weight.shape, weight.shape), g)
    return gx, gw, unbroadcast(gb, weight.shape)


def cross_entropy_backward(logits, targets, ignore_index=-100):
    op = CrossEntropy(np.asarray(targets), ignore_index)
    op.needs_input_grad = (True,)
    forward, backward = _CROSS_ENTROPY
    forward(op, logits)
    return backward(op, np.ones((), logits.dtype))


def masked_fill(x, mask, value):
    return _MASKED_FILL[0](MaskedFill(np.asarray(mask), value), x)


def masked_fill_backward(g, mask):
    return _MASKED_FILL[1](MaskedFill(np.asarray(mask), 0), g)


def scaled_dot_product_attention(q, k, v, mask=None):
    return nn.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def split_heads(x, n_heads):
    b, t, d_model = x.shape
    heads = nn.MultiHeadAttention.__new__(nn.MultiHeadAttention)  # only the two sizes it reads
    heads.n_heads, heads.head_dim = n_heads, d_model // n_heads
    return nn.MultiHeadAttention._split_heads(heads, x)


def merge_heads(z):
    b, h, t, d = z.shape
    return z.transpose(1, 2).reshape(b, t, h * d)  # as MultiHeadAttention.forward merges


def pre_norm_block(block, x):
    return nn.TransformerBlock.forward(block, x)


def attend_with_cache(cache, q, k, v):
    kv = nn.KVCache()
    kv.k, kv.v = cache["k"], cache["v"]
    keys, values = kv.append(k, v)
    cache["k"], cache["v"] = keys, values
    t_q, t_k = q.shape[-2], keys.shape[-2]
    mask = nn.causal_mask(t_q, t_k, offset=t_k - t_q)
    return nn.scaled_dot_product_attention(q, keys, values, attn_mask=mask)[0]


def adamw_step(p, g, m, v, t, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
    param = nn.Parameter(np.array(p, copy=True))
    param.grad = np.asarray(g)
    optimizer = nn.optim.AdamW([param], lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
    optimizer.state[id(param)] = {"step": t - 1, "exp_avg": np.array(m, copy=True),
                                  "exp_avg_sq": np.array(v, copy=True)}
    optimizer.step()
    state = optimizer.state[id(param)]
    return param.data, state["exp_avg"], state["exp_avg_sq"]
