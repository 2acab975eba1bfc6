"""FeedForward and TransformerBlock: per-position FFN, the residual formulas, causality.

The block is the pre-/post-norm residual formula, records residual adds and has exact
gradients.
"""
import math

import numpy as np
import pytest
from mt_testing import normal64

import microtensor as mt
import nn


@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_feedforward_equals_numpy_two_layers_with_activation(activation, to_float64):
    ffn = to_float64(nn.FeedForward(4, 16, activation=activation))
    x = normal64(2, 3, 4)
    h = x @ ffn.fc.weight.data + ffn.fc.bias.data
    erf = np.vectorize(math.erf)
    h = np.maximum(h, 0) if activation == "relu" else h * 0.5 * (1 + erf(h / math.sqrt(2)))
    expected = h @ ffn.proj.weight.data + ffn.proj.bias.data
    np.testing.assert_allclose(ffn(mt.Tensor(x)).data, expected, rtol=1e-6, atol=1e-7,
                               err_msg=f"FFN({activation}) vs act(x W1 + b1) W2 + b2")


def test_feedforward_acts_on_each_position_independently():
    ffn = nn.FeedForward(4, 8)
    x = normal64(2, 5, 4).astype(np.float32)
    perm = np.array([3, 0, 4, 1, 2])
    out = ffn(mt.Tensor(x)).data
    out_of_permuted = ffn(mt.Tensor(x[:, perm])).data
    np.testing.assert_allclose(out_of_permuted, out[:, perm], rtol=1e-6, atol=1e-7,
                               err_msg="FFN(x permuted over positions) vs FFN(x) permuted")


def test_feedforward_unknown_activation_raises_value_error():
    with pytest.raises(ValueError, match="swish"):
        nn.FeedForward(4, 8, activation="swish")


def test_pre_norm_block_equals_x_plus_attn_of_ln1_then_plus_mlp_of_ln2(to_float64):
    block = to_float64(nn.TransformerBlock(8, 2, 16, norm_first=True))
    x = mt.Tensor(normal64(2, 5, 8))
    h = x.data + block.attn(block.ln_1(x), is_causal=True).data
    expected = h + block.mlp(block.ln_2(mt.Tensor(h))).data
    got = block(x).data
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12,
                               err_msg="pre-norm: h = x + attn(ln_1(x)); h + mlp(ln_2(h))")
    # attention without the causal mask gives other numbers: the block really is causal
    h_full = x.data + block.attn(block.ln_1(x)).data
    assert not np.allclose(h_full + block.mlp(block.ln_2(mt.Tensor(h_full))).data, got)


def test_post_norm_block_equals_ln_of_x_plus_sublayer(to_float64):
    block = to_float64(nn.TransformerBlock(8, 2, 16, norm_first=False))
    x = mt.Tensor(normal64(2, 5, 8, seed=1))
    h = block.ln_1(mt.Tensor(x.data + block.attn(x, is_causal=True).data)).data
    expected = block.ln_2(mt.Tensor(h + block.mlp(mt.Tensor(h)).data)).data
    got = block(x).data
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12,
                               err_msg="post-norm: h = LN1(x + attn(x)); LN2(h + mlp(h))")
    # each position of a post-norm output is normalised (weight 1, bias 0 at init)
    np.testing.assert_allclose(got.mean(-1), 0, atol=1e-12, err_msg="post-norm rows have mean 0")
    pre = to_float64(nn.TransformerBlock(8, 2, 16, norm_first=True))
    pre.load_state_dict(block.state_dict())
    assert not np.allclose(pre(x).data, got), "pre- and post-norm differ for the same weights"


@pytest.mark.parametrize("norm_first", [True, False])
def test_residual_adds_are_recorded_with_the_skip_path_as_input_0(norm_first):
    block = nn.TransformerBlock(8, 2, 16, norm_first=norm_first)
    x = mt.Tensor(normal64(1, 3, 8).astype(np.float32), requires_grad=True)
    out = block(x)
    # pre-norm ends in the second residual add; post-norm ends in ln_2 of it
    second = out.grad_fn if norm_first else out.grad_fn.inputs[0]
    assert second.role == "residual", f"expected the role 'residual', got {second.role!r}"
    assert second.inputs[1].module.startswith("mlp"), (
        f"input 1 of the second add is the mlp branch; got a node of {second.inputs[1].module!r}")
    skip = second.inputs[0]
    first = skip if norm_first else skip.inputs[0]
    assert first.role == "residual", (
        f"expected the first residual add on the skip path, got {first!r}"
    )
    assert first.inputs[0].variable is x, (
        "input 0 of the first residual add must be the block's input x"
    )
    assert first.inputs[1].module.startswith("attn"), (
        f"input 1 of the first add is the attention branch; got {first.inputs[1].module!r}")


def test_residual_passes_the_gradient_unchanged_to_both_inputs():
    skip = mt.Tensor(np.array([1.0, 2.0]), requires_grad=True)
    branch = mt.Tensor(np.array([3.0, 5.0]), requires_grad=True)
    out = nn.residual(skip, branch)
    assert np.array_equal(out.data, [4.0, 7.0]), f"expected [4, 7], got {out.data}"
    out.backward(np.array([0.5, -2.0]))
    assert np.array_equal(skip.grad, [0.5, -2.0]) and np.array_equal(branch.grad, [0.5, -2.0]), (
        f"expected g = [0.5, −2] on both, got {skip.grad} and {branch.grad}")


@pytest.mark.parametrize("norm_first", [True, False])
def test_gradcheck_small_block(norm_first, to_float64, weighted_gradcheck):
    block = to_float64(nn.TransformerBlock(4, 2, 8, norm_first=norm_first))
    x = mt.Tensor(normal64(1, 3, 4, seed=2), requires_grad=True)
    assert weighted_gradcheck(lambda x_, *_: block(x_), [x, *block.parameters()])


def test_gradcheck_block_with_key_padding(to_float64, weighted_gradcheck):
    block = to_float64(nn.TransformerBlock(4, 2, 8))
    x = mt.Tensor(normal64(2, 3, 4, seed=3), requires_grad=True)
    pad = np.array([[False, False, True], [False, False, False]])
    assert weighted_gradcheck(lambda x_: block(x_, key_padding_mask=pad), [x])


@pytest.mark.parametrize("norm_first", [True, False])
def test_causal_block_output_at_t_does_not_change_when_later_tokens_change(norm_first, to_float64):
    block = to_float64(nn.TransformerBlock(8, 2, 16, norm_first=norm_first))
    x = normal64(1, 6, 8, seed=4)
    before = block(mt.Tensor(x)).data
    changed = x.copy()
    changed[0, 4:] = normal64(2, 8, seed=5)               # rewrite tokens 4 and 5
    after = block(mt.Tensor(changed)).data
    np.testing.assert_allclose(after[0, :4], before[0, :4], rtol=1e-12, atol=1e-14,
                               err_msg="positions 0..3 must not see tokens 4..5")
    assert not np.allclose(after[0, 4:], before[0, 4:]), "positions 4..5 do change (sanity)"
