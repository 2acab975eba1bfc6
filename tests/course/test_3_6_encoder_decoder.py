"""Notes 3.6: the complete 2017 Transformer is an encoder-decoder, not the decoder-only GPT.

The encoder's self-attention is bidirectional: every source position reads the whole
source. The decoder's self-attention is causal, and every decoder layer has a
cross-attention whose queries come from the decoder and whose keys and values come from
the encoder output, the only road from the source to the target (Vaswani et al. 2017
§3.2.3). Padding in the source is blocked as a key, so it gets no weight and no gradient.
The GPT has no cross-attention at all.
"""
import numpy as np
import pytest
from mt_testing import check_shape

import microtensor as mt
import models
import nn
from models import Seq2SeqConfig, Seq2SeqTransformer

SRC = np.array([[3, 4, 5, 6, 7, 8], [9, 10, 11, 0, 0, 0]])   # row 1: 3 tokens, 3 pads
TGT_IN = np.array([[1, 3, 4, 5], [1, 6, 7, 8]])
TARGETS = np.array([[3, 4, 5, 2], [6, 7, 8, 2]])


@pytest.fixture
def model():
    config = Seq2SeqConfig(src_vocab_size=14, tgt_vocab_size=12, max_len=10, d_model=16,
                           n_heads=4, n_encoder_layers=2, n_decoder_layers=2, d_ff=32)
    return Seq2SeqTransformer(config).eval()


def test_encoder_position_0_changes_when_a_later_source_token_changes(model):
    changed = SRC.copy()
    changed[0, 4] = 12
    a, b = model.encode(SRC[:1]).data, model.encode(changed[:1]).data   # [1, T_src, D]
    assert not np.allclose(a[0, 0], b[0, 0]), (
        "bidirectional encoder: position 0 should see source position 4, got no change")


def test_decoder_positions_before_t_do_not_change_when_target_token_t_changes(model):
    changed = TGT_IN.copy()
    changed[:, 2] = 9
    a, _ = model(SRC, TGT_IN)
    b, _ = model(SRC, changed)
    np.testing.assert_allclose(b.data[:, :2], a.data[:, :2], atol=1e-6,
                               err_msg="causal decoder: positions 0, 1 changed with position 2")
    assert not np.allclose(b.data[:, 2:], a.data[:, 2:]), "positions 2, 3 should see the change"


def test_cross_attention_weights_are_b_h_t_tgt_t_src(model):
    with nn.keep_attention(model):
        model(SRC, TGT_IN)
    for i, layer in enumerate(model.decoder):
        check_shape(layer.multihead_attn.last_attention, (2, 4, 4, 6),
                    f"decoder.{i} cross-attention weights [B, H, T_tgt, T_src]")


def test_padded_source_positions_get_zero_cross_attention_weight_from_every_decoder_step(model):
    with nn.keep_attention(model):
        model(SRC, TGT_IN)
    for i, layer in enumerate(model.decoder):
        w = layer.multihead_attn.last_attention.data            # [B, H, T_tgt, T_src]
        assert np.all(w[1, :, :, 3:] == 0), (
            f"decoder.{i}: padded source keys got weights up to {w[1, :, :, 3:].max()}")
        np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-6,
                                   err_msg=f"decoder.{i}: rows over the real keys sum to 1")


def test_padded_source_positions_send_no_gradient_to_their_embeddings(model):
    # tokens 12 and 13 stand only at positions the mask calls padding: whatever sits
    # there, the mask (not the pad id) decides that nothing reads it
    src = SRC.copy()
    src[1, 3:] = [12, 13, 12]
    _, loss = model.train()(src, TGT_IN, TARGETS, src_padding_mask=SRC == 0)
    loss.backward()
    grad = model.src_embed.weight.grad                          # [V_src, D]
    assert np.all(grad[[12, 13]] == 0), (
        f"padded tokens' embeddings got |g| up to {np.abs(grad[12:]).max()}")
    assert np.all(np.abs(grad[[3, 9, 11]]).sum(axis=1) > 0), "real tokens' embeddings get gradient"


def test_the_gradient_reaches_the_encoder_only_through_cross_attention_keys_and_values(model):
    def encoder_grad_norm():
        model.zero_grad()
        _, loss = model(SRC, TGT_IN, TARGETS)
        loss.backward()
        return sum(float(np.abs(p.grad).sum()) for p in model.encoder.parameters())

    assert encoder_grad_norm() > 0, "the encoder should receive gradient from the loss"
    for layer in model.decoder:                 # cut the two roads from memory into the decoder
        for proj in (layer.multihead_attn.k_proj, layer.multihead_attn.v_proj):
            proj.weight.data[...] = 0.0
            proj.bias.data[...] = 0.0
    assert encoder_grad_norm() == 0, "with W_K and W_V of cross-attention zero, no gradient " \
                                     "should reach the encoder"


def _contexts(run):
    """{attention module path: was a `context` (cross-attention) passed} over one call of run()."""
    seen, forward = {}, nn.MultiHeadAttention.forward

    def recording(self, x, context=None, **kwargs):
        seen[self._path] = context is not None
        return forward(self, x, context=context, **kwargs)

    nn.MultiHeadAttention.forward = recording
    try:
        run()
    finally:
        nn.MultiHeadAttention.forward = forward
    return seen


def test_the_gpt_has_no_cross_attention_and_the_encoder_decoder_has_one_per_decoder_layer(model):
    gpt = models.GPT(models.GPTConfig(vocab_size=12, block_size=8, n_layer=2, n_head=2,
                                      n_embd=8))
    in_gpt = _contexts(lambda: gpt(np.array([[1, 2, 3]])))
    in_seq2seq = _contexts(lambda: model(SRC, TGT_IN))
    assert in_gpt == {"blocks.0.attn": False, "blocks.1.attn": False}, f"GPT: {in_gpt}"
    cross = sorted(path for path, has_context in in_seq2seq.items() if has_context)
    assert cross == ["decoder.0.multihead_attn", "decoder.1.multihead_attn"], (
        f"encoder-decoder cross-attention modules: {cross}")


def test_the_encoder_is_not_causal_but_a_decoder_layer_is(model):
    x = mt.Tensor(np.random.default_rng(0).normal(size=(1, 5, 16)).astype(np.float32))
    with nn.keep_attention(model):
        model.encoder[0](x)
        model.decoder[0](x, x, tgt_is_causal=True)
    enc = model.encoder[0].self_attn.last_attention.data[0]     # [H, T, T]
    dec = model.decoder[0].self_attn.last_attention.data[0]
    future = np.triu(np.ones((5, 5), dtype=bool), k=1)
    assert np.all(enc[:, future] > 0), "encoder self-attention: every key visible"
    assert np.all(dec[:, future] == 0), "decoder self-attention: future keys get weight 0"
