"""The answers, in the students' signatures, computed by the project's own code (never a second
copy of a formula): the graders compare with these, and a workspace whose files import them
passes every exercise.
"""
import numpy as np

import nn

from .. import bpe
from .parts import engine_function, op

# the engine's pieces by what they are (its files may move; its op names stay)
unbroadcast = engine_function("unbroadcast")
LayerNorm, CrossEntropy, MaskedFill, MatMul, Softmax = (
    op(name) for name in ("LayerNorm", "CrossEntropy", "MaskedFill", "MatMul", "Softmax"))

__all__ = ["unbroadcast", "matmul_backward", "softmax_backward", "layer_norm_backward",
           "cross_entropy_backward", "masked_fill", "masked_fill_backward",
           "scaled_dot_product_attention", "split_heads", "merge_heads", "pre_norm_block",
           "attend_with_cache", "adamw_step", "topological_order", "backward", "count_pairs",
           "most_frequent_pair", "merge"]


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
    gx, gw, gb = _backward(_LAYER_NORM_BACKWARD, LayerNorm(),
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
    optimizer.state[param] = {"step": t - 1, "exp_avg": np.array(m, copy=True),
                              "exp_avg_sq": np.array(v, copy=True)}
    optimizer.step()
    state = optimizer.state[param]
    return param.data, state["exp_avg"], state["exp_avg_sq"]


# Exercises 12 and 13 work on plain Python data (a scalar graph, lists of token ids), which no
# function of the package takes as it is: their answers are written here, once, and the
# graders hold them to an independent oracle as well ((I − L)⁻¹ for the chain rule; counting
# by hand in the worked example).

def topological_order(inputs, root):
    order, placed, stack = [], set(), [(root, False)]
    while stack:
        node, inputs_done = stack.pop()
        if inputs_done:
            order.append(node)
            continue
        if node in placed:
            continue
        placed.add(node)
        stack.append((node, True))
        stack.extend((parent, False) for parent in reversed(inputs[node]) if parent not in placed)
    return order


def backward(inputs, local, root):
    grad = [0.0] * len(inputs)
    grad[root] = 1.0
    for node in reversed(topological_order(inputs, root)):
        for parent, d in zip(inputs[node], local[node]):
            grad[parent] += d * grad[node]
    return grad


def count_pairs(chunks):
    return dict(bpe.pair_counts(chunks))  # exercise 13: models/bpe.py's own step


def most_frequent_pair(counts):
    return bpe.best_pair(counts)


def merge(chunks, pair, new_id):
    return [bpe.merge(chunk, tuple(pair), new_id) for chunk in chunks]
