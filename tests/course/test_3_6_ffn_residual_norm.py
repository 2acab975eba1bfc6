"""Notes 3.6: what the FFN, the residual connection and the norm each do.

And which Transformer we build.

Attention mixes positions; the FFN transforms each position on its own with shared
weights. A residual y = x + F(x) has the derivative I + ∂F/∂x. Post-norm (2017) is
LN(x + F(x)); pre-norm (GPT-2, our default) is x + F(LN(x)), whose main path skips
every norm. We build a decoder-only GPT (embedding → causal blocks → final norm → LM
head); the 2017 encoder-decoder adds a bidirectional encoder and decoder cross-attention
(models.Seq2SeqTransformer; its claims are checked in test_3_6_encoder_decoder.py).
"""
import math

import numpy as np
import pytest
from mt_testing import backward_jacobian, check_close, np_softmax, numeric_jacobian, to_float64

import microtensor as mt
import models
import nn


def test_ffn_is_w2_relu_w1_x_plus_b1_plus_b2_at_every_position():
    ffn = to_float64(nn.FeedForward(4, 16, activation="relu"))
    x = np.random.default_rng(0).normal(size=(2, 5, 4))
    w1, b1, w2, b2 = (p.data for p in (ffn.fc.weight, ffn.fc.bias, ffn.proj.weight, ffn.proj.bias))
    expected = np.maximum(x @ w1 + b1, 0) @ w2 + b2          # row vectors: x W₁ (W₁ is [D, d_ff])
    check_close(ffn(mt.Tensor(x)), expected, "FFN(x) = ReLU(x W₁ + b₁) W₂ + b₂", atol=1e-12)
    assert ffn.fc.weight.shape == (4, 16), (
        f"W₁: expected [D, d_ff] = (4, 16), got {ffn.fc.weight.shape}"
    )


def test_permuting_positions_permutes_the_ffn_outputs():
    ffn = to_float64(nn.FeedForward(6, 12, activation="gelu"))
    x = np.random.default_rng(1).normal(size=(2, 7, 6))
    order = np.array([3, 0, 6, 1, 5, 2, 4])
    y = ffn(mt.Tensor(x)).data
    check_close(
        ffn(mt.Tensor(x[:, order])), y[:, order], "FFN(permuted x) vs permuted FFN(x)", atol=1e-12
    )
    check_close(ffn(mt.Tensor(x[:, 2:3])), y[:, 2:3], "one position run alone", atol=1e-12)


def test_attention_mixes_positions_where_the_ffn_does_not():
    mha = to_float64(nn.MultiHeadAttention(6, 2))
    x = np.random.default_rng(2).normal(size=(1, 4, 6))
    alone = mha(mt.Tensor(x[:, :1])).data[0, 0]
    together = mha(mt.Tensor(x)).data[0, 0]
    assert np.abs(alone - together).max() > 1e-3, (
        "attention output at position 0 should depend on the other positions; "
        f"got {alone} both ways"
    )


def test_residual_jacobian_is_identity_plus_dF_dx():
    ffn = to_float64(nn.FeedForward(3, 8, activation="gelu"))
    x = np.random.default_rng(3).normal(size=3)
    j_res = backward_jacobian(lambda t: nn.residual(t, ffn(t)), x)
    j_f = numeric_jacobian(lambda a: ffn(mt.Tensor(a)).data, x)
    check_close(
        j_res,
        np.eye(3) + j_f,
        "∂(x + F(x))/∂x from backward() vs I + ∂F/∂x (finite differences)",
        atol=1e-7,
    )
    assert np.abs(j_f).max() > 0.01, f"∂F/∂x should be non-trivial, got {j_f}"


def _block_parts(block):
    def attn(h):
        return block.attn(h, is_causal=True)
    return attn, block.mlp, block.ln_1, block.ln_2


def test_post_norm_block_is_ln_of_x_plus_f_of_x():
    block = to_float64(nn.TransformerBlock(8, 2, 16, norm_first=False))
    x = mt.Tensor(np.random.default_rng(4).normal(size=(2, 5, 8)))
    attn, mlp, ln_1, ln_2 = _block_parts(block)
    h = ln_1(x + attn(x))
    check_close(
        block(x), ln_2(h + mlp(h)), "post-norm: LN₂(h + FFN(h)), h = LN₁(x + Attn(x))", atol=1e-12
    )


def test_pre_norm_block_is_x_plus_f_of_ln_x():
    block = to_float64(nn.TransformerBlock(8, 2, 16, norm_first=True))
    x = mt.Tensor(np.random.default_rng(5).normal(size=(2, 5, 8)))
    attn, mlp, ln_1, ln_2 = _block_parts(block)
    h = x + attn(ln_1(x))
    check_close(
        block(x), h + mlp(ln_2(h)), "pre-norm: h + FFN(LN₂(h)), h = x + Attn(LN₁(x))", atol=1e-12
    )


@pytest.mark.parametrize("norm_first", [True, False])
def test_only_pre_norm_keeps_a_norm_free_path_from_input_to_output(norm_first):
    """Switch both branches off (zero output projections): pre-norm returns x itself."""
    block = to_float64(nn.TransformerBlock(8, 2, 16, norm_first=norm_first))
    for layer in (block.attn.out_proj, block.mlp.proj):
        layer.weight.data[...] = 0
        layer.bias.data[...] = 0
    x = np.random.default_rng(6).normal(size=(1, 4, 8)) * 3 + 1
    y = block(mt.Tensor(x)).data
    if norm_first:
        check_close(y, x, "pre-norm block with silent branches: x + 0 + 0", atol=0)
    else:
        z = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
        z = (z - z.mean(-1, keepdims=True)) / np.sqrt(z.var(-1, keepdims=True) + 1e-5)
        check_close(y, z, "post-norm block with silent branches: LN(LN(x)), not x", atol=1e-9)


def test_gpt_is_decoder_only_embeddings_causal_blocks_final_norm_lm_head():
    config = models.GPTConfig(vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=8)
    gpt = to_float64(models.GPT(config))
    idx = np.array([[1, 5, 2, 7, 3]])
    logits, _ = gpt(idx)
    x = gpt.wte.weight.data[idx] + gpt.wpe.weight.data[np.arange(5)]
    h = mt.Tensor(x)
    for block in gpt.blocks:
        h = block(h)
    expected = gpt.ln_f(h).data @ gpt.wte.weight.data.T
    check_close(logits, expected, "GPT = LM head(ln_f(blocks(tok + pos embeddings)))", atol=1e-10)
    assert all(isinstance(b, nn.TransformerBlock) for b in gpt.blocks), (
        "GPT's blocks should be TransformerBlocks"
    )


def test_decoder_block_is_causal_and_encoder_style_self_attention_is_not():
    block = to_float64(nn.TransformerBlock(8, 2, 16))
    mha = to_float64(nn.MultiHeadAttention(8, 2))
    rng = np.random.default_rng(7)
    x = rng.normal(size=(1, 4, 8))
    later_changed = x.copy()
    later_changed[0, 2:] = rng.normal(size=(2, 8))
    dec, dec2 = block(mt.Tensor(x)).data, block(mt.Tensor(later_changed)).data
    check_close(
        dec2[0, :2], dec[0, :2], "decoder block: positions 0, 1 after changing 2, 3", atol=1e-12
    )
    enc, enc2 = mha(mt.Tensor(x)).data, mha(mt.Tensor(later_changed)).data
    assert np.abs(enc2[0, 0] - enc[0, 0]).max() > 1e-3, \
        "bidirectional (encoder) self-attention: position 0 should see later tokens, got no change"


def test_cross_attention_reads_keys_and_values_from_the_encoder_output():
    d_model, h = 8, 2
    d = d_model // h
    mha = to_float64(nn.MultiHeadAttention(d_model, h, keep_attention=True))
    rng = np.random.default_rng(8)
    dec = rng.normal(size=(1, 3, d_model))                   # decoder states: T_q = 3
    enc = rng.normal(size=(1, 6, d_model))                   # encoder output: T_k = 6
    out = mha(mt.Tensor(dec), context=mt.Tensor(enc)).data
    assert out.shape == (1, 3, d_model), (
        f"cross-attention output: expected (1, 3, {d_model}), got {out.shape}"
    )
    a = mha.last_attention.data
    assert a.shape == (1, h, 3, 6), (
        f"cross-attention weights: expected (1, {h}, 3, 6), got {a.shape}"
    )
    w = {n: (getattr(mha, n).weight.data, getattr(mha, n).bias.data)
         for n in ("q_proj", "k_proj", "v_proj", "out_proj")}
    heads = []
    for head in range(h):
        cols = slice(head * d, (head + 1) * d)
        q = dec @ w["q_proj"][0][:, cols] + w["q_proj"][1][cols]  # queries from the decoder
        k = enc @ w["k_proj"][0][:, cols] + w["k_proj"][1][cols]  # keys and values from the encoder
        v = enc @ w["v_proj"][0][:, cols] + w["v_proj"][1][cols]
        heads.append(np_softmax(q @ np.swapaxes(k, 1, 2) / math.sqrt(d)) @ v)
    expected = np.concatenate(heads, axis=-1) @ w["out_proj"][0] + w["out_proj"][1]
    check_close(out, expected, "cross-attention output vs numpy", atol=1e-12)
