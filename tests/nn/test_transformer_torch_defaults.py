"""nn.TransformerEncoderLayer / TransformerDecoderLayer against torch's with the defaults a user
does not write: no causal mask unless asked, batch_first=False ([T, B, D]), and torch's
dropout inside the feed-forward (float64, copied weights; our Linear weight is torch's ᵀ)."""
import numpy as np
import pytest

import microtensor as mt
import nn

torch = pytest.importorskip("torch")


def _x(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape)


def _t(a):
    return torch.tensor(np.asarray(a), dtype=torch.float64)


def _copy_mha(theirs, ours):
    theirs.in_proj_weight.copy_(_t(np.concatenate(
        [ours.q_proj.weight.data.T, ours.k_proj.weight.data.T, ours.v_proj.weight.data.T])))
    theirs.in_proj_bias.copy_(_t(np.concatenate(
        [ours.q_proj.bias.data, ours.k_proj.bias.data, ours.v_proj.bias.data])))
    theirs.out_proj.weight.copy_(_t(ours.out_proj.weight.data.T))
    theirs.out_proj.bias.copy_(_t(ours.out_proj.bias.data))


def _pair(kind, batch_first=None, dropout=0.0, seed=20):
    """(ours, torch's) layer, d_model 8, 2 heads, d_ff 16, with the same float64 weights;
    batch_first None leaves both at their default."""
    kw = {} if batch_first is None else {"batch_first": batch_first}
    ours = getattr(nn, f"Transformer{kind}Layer")(8, 2, 16, dropout=dropout, **kw)
    theirs = getattr(torch.nn, f"Transformer{kind}Layer")(8, 2, 16, dropout=dropout,
                                                         dtype=torch.float64, **kw)
    rng = np.random.default_rng(seed)
    for p in ours.parameters():
        p.data = (p.data + rng.normal(size=p.shape) * 0.1).astype(np.float64)
    with torch.no_grad():
        _copy_mha(theirs.self_attn, ours.self_attn)
        if kind == "Decoder":
            _copy_mha(theirs.multihead_attn, ours.multihead_attn)
        for mine, name in ((ours.ff.fc, "linear1"), (ours.ff.proj, "linear2")):
            getattr(theirs, name).weight.copy_(_t(mine.weight.data.T))
            getattr(theirs, name).bias.copy_(_t(mine.bias.data))
        for name in ("norm1", "norm2", "norm3")[:3 if kind == "Decoder" else 2]:
            getattr(theirs, name).weight.copy_(_t(getattr(ours, name).weight.data))
            getattr(theirs, name).bias.copy_(_t(getattr(ours, name).bias.data))
    return ours, theirs


def _close(got, expected, what):
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-10, err_msg=what)


def test_decoder_layer_is_not_causal_by_default_as_torch():
    ours, theirs = _pair("Decoder", batch_first=True)
    tgt, memory = _x(2, 4, 8, seed=1), _x(2, 5, 8, seed=2)
    expected = theirs(_t(tgt), _t(memory)).detach().numpy()
    _close(ours(mt.Tensor(tgt), mt.Tensor(memory)).data, expected,
           "decoder layer without masks: torch's default applies no causal mask")


def test_decoder_layer_applies_a_float_tgt_mask_alone_as_torch():
    ours, theirs = _pair("Decoder", batch_first=True)
    tgt, memory, bias = _x(2, 4, 8, seed=3), _x(2, 5, 8, seed=4), _x(4, 4, seed=5)
    expected = theirs(_t(tgt), _t(memory), tgt_mask=_t(bias)).detach().numpy()
    _close(ours(mt.Tensor(tgt), mt.Tensor(memory), tgt_mask=bias).data, expected,
           "a non-causal float tgt_mask is added as given, no causal mask on top")


@pytest.mark.parametrize("as_bool", [False, True])
def test_tgt_is_causal_with_the_causal_mask_matches_torch(as_bool):
    ours, theirs = _pair("Decoder", batch_first=True)
    tgt, memory = _x(2, 4, 8, seed=6), _x(2, 5, 8, seed=7)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64)
    mask = torch.isinf(mask) if as_bool else mask
    expected = theirs(_t(tgt), _t(memory), tgt_mask=mask, tgt_is_causal=True).detach().numpy()
    _close(ours(mt.Tensor(tgt), mt.Tensor(memory), tgt_mask=mask.numpy(),
                tgt_is_causal=True).data, expected, "tgt_is_causal=True with torch's mask")
    _close(ours(mt.Tensor(tgt), mt.Tensor(memory), tgt_is_causal=True).data, expected,
           "tgt_is_causal=True alone applies the same causal mask")


def test_tgt_is_causal_with_a_mask_that_is_not_causal_is_refused():
    ours, _ = _pair("Decoder", batch_first=True)
    with pytest.raises(ValueError, match="tgt_is_causal=True but tgt_mask"):
        ours(mt.Tensor(_x(2, 4, 8)), mt.Tensor(_x(2, 5, 8)), tgt_mask=_x(4, 4),
             tgt_is_causal=True)


@pytest.mark.parametrize("kind", ["Encoder", "Decoder"])
def test_layers_read_t_b_d_by_default_as_torch(kind):
    ours, theirs = _pair(kind)
    assert ours.batch_first is False, "batch_first defaults to False, as torch's"
    x, memory = _x(5, 2, 8, seed=8), _x(3, 2, 8, seed=9)       # [T, B, D]
    args = (x,) if kind == "Encoder" else (x, memory)
    expected = theirs(*map(_t, args)).detach().numpy()
    got = ours(*map(mt.Tensor, args)).data
    assert got.shape == (5, 2, 8), f"expected [T, B, D] = (5, 2, 8), got {got.shape}"
    _close(got, expected, f"{kind} layer on [T, B, D] input, torch's default layout")


def test_batch_first_is_the_seventh_positional_argument_as_torch():
    layer = nn.TransformerEncoderLayer(8, 2, 16, 0.1, "relu", 1e-5, False)
    assert (layer.batch_first, layer.norm_first) == (False, False), (
        f"got batch_first={layer.batch_first}, norm_first={layer.norm_first}")


def _dropout_nodes(out):
    seen, stack, count = set(), [out.grad_fn], 0
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        count += node.op == "dropout"
        stack.extend(node.inputs)
    return count


@pytest.mark.parametrize("kind, expected", [("Encoder", 4), ("Decoder", 6)])
def test_layers_drop_out_as_often_as_torch_in_training(kind, expected):
    layer = getattr(nn, f"Transformer{kind}Layer")(8, 2, 16, dropout=0.1, batch_first=True)
    x = mt.Tensor(_x(2, 4, 8), requires_grad=True)
    out = layer(x) if kind == "Encoder" else layer(x, mt.Tensor(_x(2, 3, 8)))
    assert _dropout_nodes(out) == expected, (
        f"{kind} layer: torch applies {expected} dropouts, got {_dropout_nodes(out)}")


def test_gpt_block_keeps_nanogpts_three_dropouts():
    block = nn.TransformerBlock(8, 2, 16, dropout=0.1)
    out = block(mt.Tensor(_x(2, 4, 8), requires_grad=True))
    assert _dropout_nodes(out) == 3, f"expected 3 dropouts, got {_dropout_nodes(out)}"


@pytest.mark.parametrize("kind", ["Encoder", "Decoder"])
def test_the_inner_dropout_sits_after_the_activation_as_torchs(kind):
    """With p = 1 in the inner dropout alone the FFN gives linear2's bias: torch's placement."""
    ours, theirs = _pair(kind, batch_first=True)
    ours.ff.activation_dropout, theirs.dropout.p = 1.0, 1.0
    x, memory = _x(2, 4, 8, seed=10), _x(2, 3, 8, seed=11)
    args = (x,) if kind == "Encoder" else (x, memory)
    expected = theirs(*map(_t, args)).detach().numpy()          # train mode, as ours
    _close(ours(*map(mt.Tensor, args)).data, expected, f"{kind}: the inner dropout, p = 1")
