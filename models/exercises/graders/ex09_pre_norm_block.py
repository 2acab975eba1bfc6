"""Grader of exercise 9, the pre-norm block (notes 3.6): against the reference block on random
inputs, the residual path's claim (with both branches switched off the block is exactly the
identity: y = x, which post-norm is not), causality (a later position never changes an
earlier output), and finite differences through the student's forward."""

import nn
from microtensor import Tensor, writing

from .. import reference
from ..grading import (
    Mistake,
    as_array,
    call,
    check_student_gradients,
    compare,
    expect_close,
    inputs_rng,
    student_function,
)

HINT = ("x = x + block.attn(block.ln_1(x), is_causal=True), then x = x + block.mlp(block.ln_2(x)): "
        "the skip path carries the un-normalized x")


def _post_norm(block, x):
    x = block.ln_1(x + block.attn(x, is_causal=True))
    return block.ln_2(x + block.mlp(x))


def _no_residual(block, x):
    return block.mlp(block.ln_2(block.attn(block.ln_1(x), is_causal=True)))


def _normalized_skip(block, x):
    h = block.ln_1(x)
    x = h + block.attn(h, is_causal=True)
    h = block.ln_2(x)
    return h + block.mlp(h)


def _parallel(block, x):
    return x + block.attn(block.ln_1(x), is_causal=True) + block.mlp(block.ln_2(x))


def _ln2_of_h(block, x):
    h = block.ln_1(x)
    x = x + block.attn(h, is_causal=True)
    return x + block.mlp(block.ln_2(h))


MISTAKES = [
    Mistake("post-norm", "that is the 2017 post-norm, LN(x + F(x)); pre-norm normalizes the "
            "branch's input only: x + F(LN(x))", _post_norm),
    Mistake("no residual", "each sublayer is inside a residual connection: add its output to "
            "its input, x + F(LN(x))", _no_residual),
    Mistake("normalized skip", "the skip path carries x itself, not LN(x): x + F(LN(x)), so the "
            "residual stream passes no norm (3.6)", _normalized_skip),
    Mistake("parallel", "the FFN reads the attention sublayer's output (x after its residual "
            "add), not the block's input", _parallel),
    Mistake("LN₂ of LN₁(x)", "the second sublayer normalizes the *new* x, after the attention's "
            "residual add: x + FFN(LN₂(x)), not LN₂ of the first LN's output", _ln2_of_h),
]


def _block(d_model=8, seed=22):
    block = nn.TransformerBlock(d_model, 2, 2 * d_model)
    rng = inputs_rng(seed)
    for name, p in block.named_parameters():
        base = 1.0 if name.endswith("ln_1.weight") or name.endswith("ln_2.weight") else 0.0
        p.data = base + rng.normal(size=p.shape) * 0.4  # rebinds: a fresh block, no graph
    return block


def check_against_the_reference(student):
    """x [2, 4, 8] and [1, 1, 8] through a TransformerBlock(8, 2, 16) with random weights."""
    fn = student_function(student, "pre_norm_block")
    block = _block()
    rng = inputs_rng(23)
    for shape in ((2, 4, 8), (1, 1, 8)):
        x = Tensor(rng.normal(size=shape))
        compare(fn, (block, x), reference.pre_norm_block(block, x).data, "y", hint=HINT,
                mistakes=MISTAKES, context=f"x {list(shape)}")


def check_branches_off_leave_the_identity(student):
    """Notes 3.6: y = x + F(LN(x)) with F = 0 is y = x exactly (the residual path passes no
    norm); zero the last layer of attention and of the FFN and the block returns its input."""
    fn = student_function(student, "pre_norm_block")
    block = _block(seed=24)
    for layer in (block.attn.out_proj, block.mlp.proj):
        with writing(layer.weight, layer.bias) as (weight, bias):
            weight[...], bias[...] = 0, 0
    x = Tensor(inputs_rng(25).normal(size=(2, 3, 8)) * 3 + 1)
    y = call(fn, block, x, context="x [2, 3, 8], both branches zero", hint=HINT)
    expect_close(as_array(y, "y"), x.data, "y (both branches zero)", hint=HINT,
                 context="attention's out_proj and the FFN's proj set to 0")


def check_a_later_position_changes_no_earlier_output(student):
    """Notes 3.3/3.7: changing x at the last position leaves the outputs before it unchanged."""
    fn = student_function(student, "pre_norm_block")
    block = _block(seed=26)
    x = inputs_rng(27).normal(size=(1, 4, 8))
    changed = x.copy()
    changed[0, -1] = 10
    before = as_array(call(fn, block, Tensor(x), context="x [1, 4, 8]", hint=HINT), "y")
    after = as_array(call(fn, block, Tensor(changed), context="x [1, 4, 8]", hint=HINT), "y")
    expect_close(after[:, :-1], before[:, :-1], "y[:, :3] after changing x[:, 3]",
                 hint="call the attention with is_causal=True: " + HINT)


def check_gradcheck(student):
    """Backward through your forward (the engine's ops), x [1, 3, 8]: ∂L/∂x against finite
    differences (3.6: the residual adds the identity, I + ∂F/∂x)."""
    student_function(student, "pre_norm_block")
    block = _block(seed=28)
    x = Tensor(inputs_rng(29).normal(size=(1, 3, 8)), requires_grad=True)
    check_student_gradients(
        student, "gradients", lambda w: ("pre_norm_block", [block, x], w),
        lambda result: result[1], lambda x: reference.pre_norm_block(block, x), [x], ["x"],
        hint=HINT, context="x [1, 3, 8]")


CHECKS = [check_against_the_reference, check_branches_off_leave_the_identity,
          check_a_later_position_changes_no_earlier_output, check_gradcheck]
