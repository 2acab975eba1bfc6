"""Grader of exercise 8, multi-head split and merge (notes 3.5): the closed-book shapes
(B = 2, T = 5, D = 24, H = 3), head h owning columns h·d … (h+1)·d − 1, merge inverting split,
both against the reference, then a whole MultiHeadAttention built with them against the
reference module and against finite differences."""
import numpy as np

import nn
from microtensor import Tensor

from .. import reference
from ..grading import (
    Mistake,
    as_array,
    call,
    check_student_gradients,
    compare,
    expect_close,
    inputs_rng,
    run_task,
    student_function,
)

HINT = ("split: reshape [B, T, D] -> [B, T, H, d], then transpose(1, 2) -> [B, H, T, d]; merge: "
        "transpose(1, 2) back to [B, T, H, d] first, then reshape to [B, T, D]")


def _split_reshape_only(x, n_heads):
    b, t, d_model = x.shape
    return x.reshape(b, n_heads, t, d_model // n_heads)


def _split_interleaved(x, n_heads):
    b, t, d_model = x.shape
    return x.reshape(b, t, d_model // n_heads, n_heads).permute(0, 3, 1, 2)


def _split_float_d(x, n_heads):  # D / H is a float in Python 3
    b, t, d_model = x.shape
    return x.reshape(b, t, n_heads, d_model / n_heads).transpose(1, 2)


def _split_minus_one(x, n_heads):  # right for T ≥ 1; at T = 0 the −1 cannot be inferred
    b, t, d_model = x.shape
    return x.reshape(b, t, n_heads, -1).transpose(1, 2)


def _merge_reshape_only(z):
    b, h, t, d = z.shape
    return z.reshape(b, t, h * d)


def _merge_wrong_transpose(z):
    b, h, t, d = z.shape
    return z.transpose(2, 3).reshape(b, t, h * d)


SPLIT_MISTAKES = [
    Mistake("reshape only", "reshaping [B, T, D] straight to [B, H, T, d] mixes positions and "
            "heads: reshape to [B, T, H, d] (only D is regrouped), then transpose(1, 2)",
            _split_reshape_only),
    Mistake("interleaved", "head h owns the *contiguous* columns h·d … (h+1)·d − 1: reshape to "
            "[B, T, H, d] (H before d), not [B, T, d, H]", _split_interleaved),
    Mistake("float d", "d = D // H: in Python 3 D / H is a float (8.0) even when H divides D, "
            "and reshape takes whole numbers", _split_float_d),
    Mistake("−1 at T = 0", "with T = 0 there are no elements, so reshape(b, t, h, −1) cannot "
            "work out the −1 (any d fits; numpy and PyTorch both raise): write d = D // H "
            "yourself, reshape(b, t, h, d_model // h)", _split_minus_one),
]
MERGE_MISTAKES = [
    Mistake("reshape only", "reshaping [B, H, T, d] straight to [B, T, D] mixes heads with "
            "positions: transpose(1, 2) back to [B, T, H, d] first", _merge_reshape_only),
    Mistake("wrong transpose", "merge swaps the heads and positions axes back, transpose(1, 2), "
            "not the last two", _merge_wrong_transpose),
]


def check_closed_book_shapes_and_head_slices(student):
    """B = 2, T = 5, D = 24, H = 3 (the notes' closed-book question): split gives [2, 3, 5, 8],
    and head h is columns 8h … 8h + 7 of X."""
    split = student_function(student, "split_heads")
    x = Tensor(inputs_rng(19).normal(size=(2, 5, 24)))
    heads = compare(split, (x, 3), reference.split_heads(x, 3).data, "split_heads(X)",
                    hint=HINT, mistakes=SPLIT_MISTAKES, context="X [2, 5, 24], H = 3")
    heads = as_array(heads, "split_heads(X)")
    for h in range(3):
        expect_close(heads[:, h], x.data[:, :, 8 * h:8 * h + 8], f"head {h}",
                     hint=SPLIT_MISTAKES[1].hint, context=f"head {h} is X[:, :, {8 * h}:"
                     f"{8 * h + 8}]")


def check_split_and_merge_against_the_reference(student):
    """[2, 4, 6] with H = 2, D = H (d = 1), H = 1, T = 0, all float32; merge on its own, and
    merge(split(x)) == x."""
    split = student_function(student, "split_heads")
    merge = student_function(student, "merge_heads")
    rng = inputs_rng(20)
    for shape, h in (((2, 4, 6), 2), ((1, 3, 4), 4), ((2, 3, 6), 1), ((2, 0, 6), 3)):
        x = Tensor(rng.normal(size=shape).astype(np.float32))
        context = f"X {list(shape)} float32, H = {h}"
        compare(split, (x, h), reference.split_heads(x, h).data, "split_heads(X)", hint=HINT,
                mistakes=SPLIT_MISTAKES, dtype=np.float32, context=context)
        z = reference.split_heads(x, h)
        compare(merge, (z,), x.data, "merge_heads(Z)", hint=HINT, mistakes=MERGE_MISTAKES,
                dtype=np.float32, context=f"Z {list(z.shape)}")
        both = call(lambda x=x, h=h: merge(split(x, h)), what="merge_heads(split_heads(X))",
                    context=context, hint=HINT)
        expect_close(as_array(both, "merge_heads(split_heads(X))"), x.data,
                     "merge_heads(split_heads(X))", hint=HINT, context=context)


def _weights(mha):
    """The four projections' arrays, by name, for tasks.attention_with_heads."""
    return {f"{name}.{part}": getattr(getattr(mha, name), part).data
            for name in ("q_proj", "k_proj", "v_proj", "out_proj") for part in ("weight", "bias")}


def check_multi_head_attention(student):
    """A MultiHeadAttention(12, 3) forward built with your split and merge equals the
    reference module's; ∂L/∂X through it against finite differences."""
    student_function(student, "split_heads")
    student_function(student, "merge_heads")
    mha = nn.MultiHeadAttention(12, 3)
    for p in mha.parameters():
        p.data = inputs_rng(p.data.size).normal(size=p.shape) * 0.5  # rebinds: fresh
    x = Tensor(inputs_rng(21).normal(size=(2, 4, 12)), requires_grad=True)
    context = "MultiHeadAttention(12, 3), X [2, 4, 12], causal"
    out = call(run_task, student, "attention_with_heads", _weights(mha), 3, x.data,
               what="attention with your split and merge", context=context, hint=HINT)[0]
    expect_close(as_array(out, "MHA(X)"), mha(x, is_causal=True).data, "MHA(X)", hint=HINT,
                 context=context)
    small = Tensor(x.data[:1, :3], requires_grad=True)
    check_student_gradients(
        student, "attention_with_heads", lambda w: (_weights(mha), 3, small.data, w),
        lambda result: [result[1]], lambda x: mha(x, is_causal=True), [small], ["X"],
        hint=HINT, context="MultiHeadAttention(12, 3), X [1, 3, 12]")


CHECKS = [check_closed_book_shapes_and_head_slices, check_split_and_merge_against_the_reference,
          check_multi_head_attention]
