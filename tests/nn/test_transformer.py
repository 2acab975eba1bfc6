"""nn.TransformerEncoderLayer and nn.TransformerDecoderLayer: shapes, masks, finite differences,
and PyTorch's layers with the same weights."""
import numpy as np
import pytest

import microtensor as mt
import nn


def _x(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape)


def _nudged(module, seed=20):
    """float64 parameters moved off their init (LayerNorm off ones/zeros) so a swap shows."""
    rng = np.random.default_rng(seed)
    for p in module.parameters():
        p.data = (p.data + rng.normal(size=p.shape) * 0.1).astype(np.float64)
    return module


def test_encoder_and_decoder_layers_keep_the_shape_b_t_d():
    enc = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)
    dec = nn.TransformerDecoderLayer(8, 2, 16, batch_first=True)
    memory = enc(mt.Tensor(_x(2, 7, 8)))
    out = dec(mt.Tensor(_x(2, 3, 8, seed=1)), memory)
    assert memory.shape == (2, 7, 8), f"encoder: expected (2, 7, 8), got {memory.shape}"
    assert out.shape == (2, 3, 8), f"decoder: expected (2, 3, 8), got {out.shape}"


def test_layers_take_torch_argument_names_and_defaults():
    layer = nn.TransformerDecoderLayer(d_model=8, nhead=2)
    assert layer.ff.fc.weight.shape == (8, 2048), "dim_feedforward defaults to 2048 as torch's"
    assert layer.self_attn.dropout == 0.1, "dropout defaults to 0.1 as torch's"
    assert layer.norm_first is False, "post-norm by default, as the paper and torch"


def test_encoder_output_ignores_what_sits_at_padded_positions():
    enc = _nudged(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True, dropout=0.0))
    x = _x(1, 5, 8)
    pad = np.array([[False, False, False, True, True]])
    other = x.copy()
    other[0, 3:] = 100.0
    a = enc(mt.Tensor(x), src_key_padding_mask=pad).data[0, :3]
    b = enc(mt.Tensor(other), src_key_padding_mask=pad).data[0, :3]
    np.testing.assert_allclose(a, b, atol=1e-12, err_msg="real positions read a padded one")


def test_decoder_position_t_does_not_see_later_target_positions():
    dec = _nudged(nn.TransformerDecoderLayer(8, 2, 16, batch_first=True, dropout=0.0))
    tgt, memory = _x(1, 4, 8), mt.Tensor(_x(1, 6, 8, seed=1))
    changed = tgt.copy()
    changed[0, 2:] += 5.0
    a = dec(mt.Tensor(tgt), memory, tgt_is_causal=True).data[0, :2]
    b = dec(mt.Tensor(changed), memory, tgt_is_causal=True).data[0, :2]
    np.testing.assert_allclose(a, b, atol=1e-12, err_msg="position < 2 changed with positions >= 2")


def test_decoder_cross_attention_gives_padded_memory_zero_weight():
    dec = nn.TransformerDecoderLayer(8, 2, 16, batch_first=True, dropout=0.0)
    pad = np.array([[False, False, True], [False, True, True]])
    with nn.keep_attention(dec):
        dec(mt.Tensor(_x(2, 4, 8)), mt.Tensor(_x(2, 3, 8, seed=1)), memory_key_padding_mask=pad)
    weights = dec.multihead_attn.last_attention.data              # [B, H, T_tgt, T_src]
    assert weights.shape == (2, 2, 4, 3), (
        f"expected [B, H, T_tgt, T_src] = (2, 2, 4, 3), got {weights.shape}")
    blocked = np.broadcast_to(pad[:, None, None, :], weights.shape)
    assert np.all(weights[blocked] == 0), f"padded memory got weight {weights[blocked].max()}"


@pytest.mark.parametrize("norm_first", [False, True])
def test_gradcheck_small_encoder_layer(norm_first, weighted_gradcheck):
    enc = _nudged(nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, norm_first=norm_first,
                                    batch_first=True))
    x = mt.Tensor(_x(2, 3, 4), requires_grad=True)
    pad = np.array([[False, False, True], [False, False, False]])
    assert weighted_gradcheck(lambda x_, *_: enc(x_, src_key_padding_mask=pad),
                              [x, *enc.parameters()])


@pytest.mark.parametrize("norm_first", [False, True])
def test_gradcheck_small_decoder_layer_through_target_and_memory(norm_first, weighted_gradcheck):
    dec = _nudged(nn.TransformerDecoderLayer(4, 2, 8, dropout=0.0, norm_first=norm_first,
                                    batch_first=True))
    tgt = mt.Tensor(_x(2, 3, 4), requires_grad=True)
    memory = mt.Tensor(_x(2, 2, 4, seed=1), requires_grad=True)
    pad = np.array([[False, True], [False, False]])
    assert weighted_gradcheck(lambda t, m, *_: dec(t, m, memory_key_padding_mask=pad,
                                                   tgt_is_causal=True),
                              [tgt, memory, *dec.parameters()])


def test_decoding_with_caches_gives_the_full_forward_outputs():
    dec = _nudged(nn.TransformerDecoderLayer(8, 2, 16, batch_first=True, dropout=0.0))
    tgt, memory = _x(2, 4, 8), mt.Tensor(_x(2, 5, 8, seed=1))
    full = dec(mt.Tensor(tgt), memory, tgt_is_causal=True).data
    self_cache, cross_cache = nn.KVCache(), nn.KVCache()
    steps = [dec(mt.Tensor(tgt[:, t:t + 1]), memory, tgt_is_causal=True,
                 self_attn_cache=self_cache, cross_attn_cache=cross_cache).data for t in range(4)]
    np.testing.assert_allclose(np.concatenate(steps, axis=1), full, atol=1e-12,
                               err_msg="step-by-step decoding with KV caches")
    assert (len(cross_cache), len(self_cache)) == (5, 4), (
        f"caches: expected 5 memory keys and 4 target keys, "
        f"got {len(cross_cache)}, {len(self_cache)}")


# ---- PyTorch with copied weights (float64) -----------------------------------------------
def _copy_mha(theirs, ours):
    """Our q/k/v/out projections into torch's packed in_proj [3D, D] (torch's layout is ours ᵀ)."""
    t = _torch_tensor
    theirs.in_proj_weight.copy_(t(np.concatenate(
        [ours.q_proj.weight.data.T, ours.k_proj.weight.data.T, ours.v_proj.weight.data.T])))
    theirs.in_proj_bias.copy_(t(np.concatenate(
        [ours.q_proj.bias.data, ours.k_proj.bias.data, ours.v_proj.bias.data])))
    theirs.out_proj.weight.copy_(t(ours.out_proj.weight.data.T))
    theirs.out_proj.bias.copy_(t(ours.out_proj.bias.data))


def _copy_linear_and_norms(theirs, ours, norms):
    t = _torch_tensor
    for torch_layer, our_layer in ((theirs.linear1, ours.ff.fc), (theirs.linear2, ours.ff.proj)):
        torch_layer.weight.copy_(t(our_layer.weight.data.T))
        torch_layer.bias.copy_(t(our_layer.bias.data))
    for name in norms:
        getattr(theirs, name).weight.copy_(t(getattr(ours, name).weight.data))
        getattr(theirs, name).bias.copy_(t(getattr(ours, name).bias.data))


def _torch_tensor(a):
    import torch

    return torch.tensor(np.asarray(a), dtype=torch.float64)


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_matches_torch_with_padding(norm_first):
    torch = pytest.importorskip("torch")
    ours = _nudged(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, norm_first=norm_first,
                                    batch_first=True))
    theirs = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True,
                                              norm_first=norm_first, dtype=torch.float64)
    with torch.no_grad():
        _copy_mha(theirs.self_attn, ours.self_attn)
        _copy_linear_and_norms(theirs, ours, ("norm1", "norm2"))
    x = _x(2, 5, 8, seed=21)
    pad = np.array([[False] * 5, [False, False, False, True, True]])
    expected = theirs(_torch_tensor(x), src_key_padding_mask=torch.tensor(pad)).detach().numpy()
    got = ours(mt.Tensor(x), src_key_padding_mask=pad).data
    # torch's fast path leaves padded rows of the output at zero; compare the real positions
    real = ~pad
    np.testing.assert_allclose(got[real], expected[real], rtol=1e-9, atol=1e-10,
                               err_msg=f"encoder layer (norm_first={norm_first}) vs torch")


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_matches_torch_with_causal_mask_and_memory_padding(norm_first):
    torch = pytest.importorskip("torch")
    ours = _nudged(nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, norm_first=norm_first,
                                    batch_first=True))
    theirs = torch.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, batch_first=True,
                                              norm_first=norm_first, dtype=torch.float64)
    with torch.no_grad():
        _copy_mha(theirs.self_attn, ours.self_attn)
        _copy_mha(theirs.multihead_attn, ours.multihead_attn)
        _copy_linear_and_norms(theirs, ours, ("norm1", "norm2", "norm3"))
    tgt, memory = _x(2, 4, 8, seed=22), _x(2, 6, 8, seed=23)
    pad = np.array([[False] * 6, [False, False, False, True, True, True]])
    future = torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64)
    expected = theirs(_torch_tensor(tgt), _torch_tensor(memory), tgt_mask=future,
                      memory_key_padding_mask=torch.tensor(pad)).detach().numpy()
    got = ours(mt.Tensor(tgt), mt.Tensor(memory), memory_key_padding_mask=pad,
               tgt_is_causal=True).data
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-10,
                               err_msg=f"decoder layer (norm_first={norm_first}) vs torch")
