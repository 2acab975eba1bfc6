"""Procedures the grader runs in the student's process (sandbox.py) when a check needs more than
one call of the student's function: a backward pass through the graph the student's code
built, a decoding run with its cost counted. Each takes the student's module first and returns
plain numbers; the grader compares them, in its own process, with what it computed itself.

It imports the engine's public names only (microtensor, nn), never the reference answers.
"""
import numpy as np

import microtensor
import nn
from microtensor import Tensor


def _leaf_grads(tensors):
    """The .grad of each Tensor that requires grad (None where backward did not reach it)."""
    return [None if t.grad is None else np.asarray(t.grad) for t in tensors
            if isinstance(t, Tensor) and t.requires_grad]


def gradients(student, name, args, weights, pick=None):
    """out = student.name(*args) (its `pick`-th item for a tuple), L = Σ w ⊙ out, backward:
    (out's array, the gradient of each argument that requires grad)."""
    out = getattr(student, name)(*args)
    if pick is not None:
        out = out[pick]
    if not isinstance(out, Tensor):
        raise TypeError(f"{name} returned a {type(out).__name__}, not a Tensor: backward needs "
                        "the graph of the engine's ops")
    (out * weights).sum().backward()
    return out.data, _leaf_grads(args)


def attention_with_heads(student, weights, n_heads, x, w=None):
    """Multi-head causal self-attention with the student's split_heads and merge_heads:
    out = merge(sdpa(split(xW_q + b_q), ...)) W_o + b_o; with `w`, backward of Σ w ⊙ out too."""
    x = Tensor(x, requires_grad=w is not None)
    proj = {name: (Tensor(weights[name + ".weight"]), Tensor(weights[name + ".bias"]))
            for name in ("q_proj", "k_proj", "v_proj", "out_proj")}
    q, k, v = (student.split_heads(x @ proj[p][0] + proj[p][1], n_heads)
               for p in ("q_proj", "k_proj", "v_proj"))
    t = x.shape[1]
    z, _ = nn.scaled_dot_product_attention(q, k, v, attn_mask=nn.causal_mask(t, t))
    out = student.merge_heads(z) @ proj["out_proj"][0] + proj["out_proj"][1]
    if w is None:
        return out.data, None
    (out * w).sum().backward()
    return out.data, x.grad


def decode(student, q, k, v, chunks, weights=None):
    """attend_with_cache over the positions in calls of `chunks` sizes, from an empty cache:
    (each call's output, the FLOPs each call cost as microtensor.profile counts them, the
    cache's final contents, and with `weights` the gradients of Σ w ⊙ outputs for q, k, v)."""
    needs_grad = weights is not None
    q, k, v = (Tensor(a, requires_grad=needs_grad) for a in (q, k, v))
    cache, outs, flops, start = {"k": None, "v": None}, [], [], 0
    for size in chunks:
        part = [t[:, :, start:start + size] for t in (q, k, v)]
        with microtensor.profile() as prof:
            out = student.attend_with_cache(cache, *part)
        flops.append(int(prof.flops()))
        outs.append(out)
        start += size
    grads = None
    if needs_grad:
        joined = microtensor.cat(outs, axis=-2)
        (joined * weights).sum().backward()
        grads = _leaf_grads([q, k, v])
    held = {key: (value.data if isinstance(value, Tensor) else value)
            for key, value in cache.items()}
    return [o.data if isinstance(o, Tensor) else o for o in outs], flops, held, grads


_DECODING = {}  # the cache of a decoding run driven one call at a time by the grader


def decode_reset(student):
    """Start a decoding run driven step by step (`decode_step`): an empty cache."""
    _DECODING.clear()
    _DECODING["cache"] = {"k": None, "v": None}
    return 0


def decode_step(student, q, k, v):
    """One call of attend_with_cache on the run's cache, no gradients: the output's array.
    The grader reads this process's CPU time around each such call, so that no work can move
    between steps (or into the prompt) unseen."""
    with microtensor.no_grad():
        out = student.attend_with_cache(_DECODING["cache"], Tensor(q), Tensor(k), Tensor(v))
    return out.data if isinstance(out, Tensor) else out
