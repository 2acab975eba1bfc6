"""Tiled attention (nn/tiled_attention.py) equals ordinary attention: values and ∂L/∂Q, K, V
within 1e-6 relative in float32 and 1e-12 in float64, on shapes that do not fit the tiles, with
causal, boolean, float and padding masks and fully blocked rows; PyTorch in float64 is the
independent oracle; gradcheck passes; it keeps O(T) for backward and skips causal tiles.
"""
import dataclasses

import numpy as np
import pytest
from mt_testing import check_close, weighted_gradcheck

import microtensor as mt
import models
import nn
from microtensor.ops.tiled_attention import TiledAttention
from nn.masks import causal_offset

TOLERANCE = {np.float32: 1e-6, np.float64: 1e-12}  # largest |difference| / largest |value|


def _qkv(lead, t_q, t_k, d_k, d_v, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=lead + (t, d)).astype(dtype)
            for t, d in ((t_q, d_k), (t_k, d_k), (t_k, d_v))]


def _attend(attention, q, k, v, causal_alignment="top_left", **kwargs):
    """(Z, weights) of ordinary attention, or (Z, None) of tiled attention with the same rule."""
    if attention == "tiled":
        offset = causal_offset(q.shape[-2], k.shape[-2], causal_alignment)
        return nn.tiled_attention(q, k, v, causal_offset=offset, **kwargs), None
    return nn.scaled_dot_product_attention(q, k, v, causal_alignment=causal_alignment, **kwargs)


def _run(attention, arrays, upstream, **kwargs):
    """Z and ∂L/∂Q, ∂L/∂K, ∂L/∂V for L = Σ upstream ⊙ Z, with attention "ordinary" or "tiled"."""
    q, k, v = (mt.Tensor(a.copy(), requires_grad=True) for a in arrays)
    z, _ = _attend(attention, q, k, v, **kwargs)
    z.backward(upstream)
    return {"Z": z.data, "∂L/∂Q": q.grad, "∂L/∂K": k.grad, "∂L/∂V": v.grad}


def _relative_error(got, expected):
    got, expected = np.asarray(got, np.float64), np.asarray(expected, np.float64)
    return float(np.max(np.abs(got - expected)) / max(np.max(np.abs(expected)), 1e-300))


def _mask(kind, lead, t_q, t_k, dtype, rng):
    """A mask of `kind` with at least one query row whose keys are all blocked."""
    if kind is None:
        return None
    if kind == "padding":  # [B, 1, 1, T_k], True at padding keys; batch row 0 is all padding
        pad = rng.random((lead[0], 1, 1, t_k)) < 0.3
        pad[0] = True
        return pad
    blocked = rng.random(lead[-1:] + (t_q, t_k)) < 0.4                 # [H, T_q, T_k]
    blocked[..., 1, :] = True                                          # query 1 sees no key
    if kind == "bool":
        return blocked
    return np.where(blocked, -np.inf, rng.normal(size=blocked.shape)).astype(dtype)  # "float"


CASES = [  # lead dims, T_q, T_k, d_k, d_v, tile, mask kind, is_causal
    ((2, 3), 37, 37, 8, 8, 16, None, True),
    ((2, 3), 37, 53, 8, 5, 16, None, False),
    ((2, 3), 53, 37, 4, 6, 8, "bool", False),
    ((3, 2), 45, 70, 8, 8, 16, "padding", True),
    ((2, 2), 33, 33, 16, 16, 7, "float", True),
    ((1, 1), 5, 130, 8, 8, 64, "float", False),
    ((4,), 1, 19, 8, 3, 4, None, False),
    ((4,), 3, 19, 8, 3, 2, None, True),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("lead, t_q, t_k, d_k, d_v, tile, kind, causal", CASES)
def test_tiled_equals_ordinary_values_and_gradients(dtype, lead, t_q, t_k, d_k, d_v, tile, kind,
                                                    causal):
    rng = np.random.default_rng(1)
    arrays = _qkv(lead, t_q, t_k, d_k, d_v, dtype)
    upstream = rng.normal(size=lead + (t_q, d_v)).astype(dtype)
    mask = _mask(kind, lead, t_q, t_k, dtype, rng)
    ordinary = _run("ordinary", arrays, upstream, attn_mask=mask, is_causal=causal)
    q, k, v = (mt.Tensor(a.copy(), requires_grad=True) for a in arrays)
    z = nn.tiled_attention(q, k, v, attn_mask=mask, is_causal=causal, tile_size=tile)
    z.backward(upstream)
    tiled = {"Z": z.data, "∂L/∂Q": q.grad, "∂L/∂K": k.grad, "∂L/∂V": v.grad}
    for name, expected in ordinary.items():
        got = tiled[name]
        assert got.dtype == dtype and not np.isnan(got).any(), f"{name}: {got.dtype}, NaN?"
        error = _relative_error(got, expected)
        assert error <= TOLERANCE[dtype], (
            f"{name} in {dtype.__name__}: expected tiled = ordinary within "
            f"{TOLERANCE[dtype]:g} relative, got {error:.3g}")


def test_a_query_whose_keys_are_all_blocked_gets_zero_output_and_zero_gradients():
    q, k, v = (mt.Tensor(a, requires_grad=True) for a in _qkv((2,), 6, 9, 4, 3, np.float64))
    mask = np.zeros((6, 9), dtype=bool)
    mask[2] = True                                                     # query 2: every key blocked
    z = nn.tiled_attention(q, k, v, attn_mask=mask, tile_size=4)
    z.backward(np.ones(z.shape))
    check_close(z.data[:, 2], np.zeros((2, 3)), "Z of the blocked row", atol=0)
    check_close(q.grad[:, 2], np.zeros((2, 4)), "∂L/∂Q of the blocked row", atol=0)
    assert np.isfinite(z.data).all() and np.isfinite(k.grad).all(), "expected no NaN or inf"


def test_tiled_equals_pytorch_in_float64():
    torch = pytest.importorskip("torch")
    arrays = _qkv((2, 3), 29, 41, 8, 5, np.float64, seed=3)
    blocked = np.random.default_rng(4).random((29, 41)) < 0.3
    upstream = np.random.default_rng(5).normal(size=(2, 3, 29, 5))
    q, k, v = (torch.tensor(a, requires_grad=True) for a in arrays)
    z = torch.nn.functional.scaled_dot_product_attention(
        q, k, v, attn_mask=torch.tensor(~blocked))                      # torch: True = attend
    z.backward(torch.tensor(upstream))
    ours = _run("tiled", arrays, upstream, attn_mask=blocked)
    for name, expected in zip(ours, (z, q.grad, k.grad, v.grad)):
        error = _relative_error(ours[name], expected.detach().numpy())
        assert error <= 1e-12, f"{name}: expected PyTorch's within 1e-12 relative, got {error:.3g}"


@pytest.mark.parametrize("causal, kind", [(True, None), (False, "bool"), (True, "float")])
def test_gradcheck_passes(causal, kind):
    arrays = _qkv((2,), 7, 10, 3, 4, np.float64, seed=6)
    mask = _mask(kind, (2,), 7, 10, np.float64, np.random.default_rng(7))
    inputs = [mt.Tensor(a, requires_grad=True) for a in arrays]
    assert weighted_gradcheck(
        lambda q, k, v: nn.tiled_attention(q, k, v, attn_mask=mask, is_causal=causal, tile_size=3),
        inputs)


def test_dropout_gradcheck_passes_and_the_mean_output_is_unchanged():
    arrays = _qkv((2,), 6, 8, 3, 4, np.float64, seed=8)
    inputs = [mt.Tensor(a, requires_grad=True) for a in arrays]

    def dropped(q, k, v):
        mt.manual_seed(11)  # the same keep masks at every finite-difference step
        return nn.tiled_attention(q, k, v, is_causal=True, dropout_p=0.3, tile_size=3)

    assert weighted_gradcheck(dropped, inputs)
    plain = nn.tiled_attention(*inputs, is_causal=True).data
    with mt.no_grad():
        mean = np.mean([nn.tiled_attention(*inputs, is_causal=True, dropout_p=0.3,
                                           tile_size=3).data for _ in range(2000)], axis=0)
    check_close(mean, plain, "the mean over 2000 dropout draws (inverted dropout keeps it)",
                atol=0.1)


@pytest.mark.parametrize("alignment", ["top_left", "bottom_right"])
def test_causal_alignment_is_ordinary_attentions(alignment):
    arrays = _qkv((2,), 5, 9, 4, 4, np.float64, seed=9)
    upstream = np.ones((2, 5, 4))
    ordinary = _run("ordinary", arrays, upstream, is_causal=True, causal_alignment=alignment)
    tiled = _run("tiled", arrays, upstream, is_causal=True, causal_alignment=alignment)
    for name, expected in ordinary.items():
        check_close(tiled[name], expected, f"{name}, {alignment} causal, T_q < T_k", atol=1e-12)
    x, context = (mt.Tensor(a) for a in _qkv((2,), 5, 9, 8, 8, np.float64, seed=10)[:2])
    mha = nn.MultiHeadAttention(8, 2)
    expected = mha(x, context=context, is_causal=True, causal_alignment=alignment)
    mha.attention = "tiled"
    check_close(mha(x, context=context, is_causal=True, causal_alignment=alignment), expected,
                f"MultiHeadAttention, {alignment} causal, T_q < T_k", atol=1e-12)
    assert mha.last_attention is None, "a tiled call never forms the weights to keep"


def test_causal_skips_the_tiles_above_the_diagonal(monkeypatch):
    calls = []
    real = TiledAttention._scores
    monkeypatch.setattr(TiledAttention, "_scores",
                        lambda self, *args: calls.append(args[2:]) or real(self, *args))
    q, k, v = (mt.Tensor(a) for a in _qkv((1,), 256, 256, 4, 4, np.float32))
    nn.tiled_attention(q, k, v, is_causal=True, tile_size=64)
    assert sorted(calls) == [(i, j) for i in range(0, 256, 64) for j in range(0, i + 1, 64)], (
        f"expected the 10 tiles on and below the diagonal of 4 × 4, got {sorted(calls)}")


def test_backward_keeps_O_of_T_and_no_T_by_T_array():
    t = 256
    q, k, v = (mt.Tensor(a, requires_grad=True) for a in _qkv((2, 2), t, t, 16, 16, np.float32))
    saved = {}
    for attention in ("ordinary", "tiled"):
        with mt.profile() as prof:
            _attend(attention, q, k, v, is_causal=True)
        saved[attention] = prof.saved_bytes()
        shapes = [s for r in prof.records for s, _, _ in r.saved.values()]
        assert (attention == "ordinary") == any(s[-2:] == (t, t) for s in shapes), (
            f"{attention}: expected a [T, T] array saved only by ordinary attention; got {shapes}")
    # ordinary: Q, Kᵀ, V, A [2, 2, T, T], the scale's 1/√d_k and the causal mask [T, T] (bool,
    # kept by masked_fill as torch's); tiled: Q, K, V, Z, L [2, 2, T, 1]
    qkv = 3 * q.data.nbytes
    assert saved["ordinary"] == qkv + 2 * 2 * t * t * 4 + 4 + t * t, saved
    assert saved["tiled"] == qkv + q.data.nbytes + 2 * 2 * t * 4, saved


def test_a_tiled_gpt_gives_the_default_gpts_loss_gradients_and_generation():
    config = models.GPTConfig(vocab_size=13, block_size=40, n_layer=2, n_head=2, n_embd=16)
    idx = np.random.default_rng(0).integers(0, 13, size=(3, 40))
    runs = {}
    for attention in ("ordinary", "tiled"):
        mt.manual_seed(0)
        model = models.GPT(dataclasses.replace(config, attention=attention))
        _, loss = model(idx[:, :-1], idx[:, 1:])
        loss.backward()
        mt.manual_seed(1)
        tokens = model.generate(idx[:, :4], 30, top_k=1)              # KV-cached, greedy
        runs[attention] = (loss.item(), dict(model.named_parameters()), tokens)
    (loss_o, params_o, tokens_o), (loss_t, params_t, tokens_t) = runs["ordinary"], runs["tiled"]
    assert abs(loss_t - loss_o) <= 1e-6 * abs(loss_o), f"loss: ordinary {loss_o}, tiled {loss_t}"
    for name, p in params_o.items():
        if name.endswith("k_proj.bias"):  # 0 but for rounding: q·b shifts a whole row of scores
            check_close(params_t[name].grad, p.grad, f"∂L/∂{name}", atol=1e-6)
            continue
        error = _relative_error(params_t[name].grad, p.grad)
        assert error <= 1e-5, f"∂L/∂{name}: expected the default's, relative error {error:.3g}"
    assert (tokens_t == tokens_o).all(), "expected the same greedy tokens with the KV cache"


def test_a_tiled_seq2seq_gives_the_default_loss_with_padding_masks():
    config = models.Seq2SeqConfig(12, 14, 20, 16, 2, 1, 1, 32)
    rng = np.random.default_rng(2)
    src, tgt = rng.integers(3, 12, size=(3, 11)), rng.integers(3, 14, size=(3, 9))
    src[0, 7:], tgt[1, 5:] = 0, 0                                      # padding
    losses = []
    for attention in ("ordinary", "tiled"):
        mt.manual_seed(0)
        model = models.Seq2SeqTransformer(dataclasses.replace(config, attention=attention))
        _, loss = model(src, tgt[:, :-1], tgt[:, 1:], src_padding_mask=src == 0,
                        tgt_padding_mask=tgt[:, :-1] == 0)
        loss.backward()
        losses.append((loss.item(), model.src_embed.weight.grad))
    assert abs(losses[1][0] - losses[0][0]) <= 1e-6 * losses[0][0], losses
    assert _relative_error(losses[1][1], losses[0][1]) <= 1e-5, "∂L/∂src_embed differs"


@pytest.mark.parametrize("call, error, words", [
    (lambda: models.GPTConfig(10, 8, 1, 1, 4, attention="flash"), ValueError, "'flash'"),
    (lambda: nn.MultiHeadAttention(4, 2, attention="Tiled"), ValueError, "'Tiled'"),
    (lambda: nn.use_attention(nn.MultiHeadAttention(4, 2), None), ValueError, "None"),
    (lambda: nn.tiled_attention(*map(mt.Tensor, _qkv((), 2, 2, 2, 2, np.float32)),
                                attn_mask=np.zeros((2, 2), int)), TypeError, "int64"),
    (lambda: nn.tiled_attention(*map(mt.Tensor, _qkv((), 2, 2, 2, 2, np.float32)),
                                dropout_p=1.0), ValueError, "dropout_p"),
    (lambda: nn.tiled_attention(*(mt.Tensor(np.ones((2, 2), np.int64)) for _ in range(3))),
     TypeError, "floating-point"),
    (lambda: nn.tiled_attention(*map(mt.Tensor, _qkv((), 2, 2, 2, 2, np.float32)),
                                tile_size=0), ValueError, "tile_size"),
    (lambda: nn.tiled_attention(*map(mt.Tensor, _qkv((), 2, 3, 2, 2, np.float32)),
                                attn_mask=np.zeros((2, 2), bool)), ValueError, "attn_mask"),
    (lambda: nn.tiled_attention(*map(mt.Tensor, _qkv((), 2, 2, 2, 2, np.float32)),
                                attn_mask=mt.zeros(2, 2, requires_grad=True)),
     ValueError, "learned bias"),
])
def test_bad_input_names_the_argument(call, error, words):
    with pytest.raises(error, match=words):
        call()


@pytest.mark.parametrize("t_q, t_k", [(0, 5), (4, 0)])
def test_zero_queries_or_zero_keys_give_ordinary_attentions_result(t_q, t_k):
    arrays = _qkv((2,), t_q, t_k, 3, 2, np.float64)
    upstream = np.ones((2, t_q, 2))
    ordinary, tiled = (_run(a, arrays, upstream) for a in ("ordinary", "tiled"))
    for name, expected in ordinary.items():
        check_close(tiled[name], expected, f"{name} with T_q={t_q}, T_k={t_k}", atol=0)
