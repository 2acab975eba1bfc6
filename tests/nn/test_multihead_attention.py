"""MultiHeadAttention equals the per-head computation done by hand in numpy.

It also masks padded keys, decodes with a KV cache, and has 4D²+4D parameters.
"""
import math

import numpy as np
import pytest
from mt_testing import normal64

import microtensor as mt
import nn


def _np_mha(mha, x, np_softmax, context=None, blocked=None):
    """Multi-head attention written out head by head in numpy (course notes 3.5).

    Each head h uses columns h·d..(h+1)·d of W_Q, W_K, W_V (and of their biases); the
    head outputs are concatenated in head order and multiplied by W_O.
    blocked: boolean, broadcasting against [B, T_q, T_k], True = blocked.
    Returns (out [B, T_q, D], weights [B, H, T_q, T_k]).
    """
    context = x if context is None else context
    w = {name: (getattr(mha, name).weight.data, getattr(mha, name).bias.data)
         for name in ("q_proj", "k_proj", "v_proj", "out_proj")}
    d = mha.head_dim
    heads, weights = [], []
    for h in range(mha.n_heads):
        cols = slice(h * d, (h + 1) * d)
        q = x @ w["q_proj"][0][:, cols] + w["q_proj"][1][cols]          # [B, T_q, d]
        k = context @ w["k_proj"][0][:, cols] + w["k_proj"][1][cols]    # [B, T_k, d]
        v = context @ w["v_proj"][0][:, cols] + w["v_proj"][1][cols]    # [B, T_k, d]
        s = q @ k.transpose(0, 2, 1) / math.sqrt(d)
        if blocked is not None:
            s = np.where(blocked, -np.inf, s)
        a = np_softmax(s)
        heads.append(a @ v)
        weights.append(a)
    concat = np.concatenate(heads, axis=-1)                              # [B, T_q, D]
    return concat @ w["out_proj"][0] + w["out_proj"][1], np.stack(weights, axis=1)


def test_mha_equals_manual_numpy_per_head_computation(to_float64, np_softmax):
    mha = to_float64(nn.MultiHeadAttention(8, 2, keep_attention=True))
    x = normal64(2, 4, 8)
    expected, expected_weights = _np_mha(mha, x, np_softmax)
    got = mha(mt.Tensor(x))
    np.testing.assert_allclose(
        got.data, expected, rtol=1e-10, atol=1e-12, err_msg="MHA output vs numpy heads"
    )
    assert mha.last_attention.shape == (2, 2, 4, 4), (
        f"last_attention [B, H, T, T], got {mha.last_attention.shape}"
    )
    np.testing.assert_allclose(mha.last_attention.data, expected_weights, rtol=1e-10,
                               err_msg="last_attention vs numpy per-head weights")


def test_mha_causal_equals_manual_numpy_with_future_blocked(to_float64, np_softmax):
    mha = to_float64(nn.MultiHeadAttention(8, 4, keep_attention=True))
    x = normal64(1, 5, 8, seed=1)
    future = np.triu(np.ones((5, 5), dtype=bool), k=1)
    expected, expected_weights = _np_mha(mha, x, np_softmax, blocked=future)
    got = mha(mt.Tensor(x), is_causal=True)
    np.testing.assert_allclose(
        got.data, expected, rtol=1e-10, atol=1e-12, err_msg="causal MHA vs numpy"
    )
    assert np.all(mha.last_attention.data[..., future] == 0), "future weights must be exactly 0"


def test_key_padding_mask_gives_padded_keys_exactly_zero_weight(to_float64, np_softmax):
    mha = to_float64(nn.MultiHeadAttention(8, 2, keep_attention=True))
    x = normal64(2, 4, 8, seed=2)
    pad = np.array([[False, False, False, True], [False, False, True, True]])
    out = mha(mt.Tensor(x), key_padding_mask=pad).data
    weights = mha.last_attention.data
    assert weights.shape == (2, 2, 4, 4), (
        f"expected [B, H, T_q, T_k] = (2, 2, 4, 4), got {weights.shape}"
    )
    for b in range(2):
        got = weights[b][..., pad[b]]
        assert np.all(got == 0), f"batch {b}: weights on padded keys should be exactly 0, got {got}"
    expected, _ = _np_mha(mha, x, np_softmax, blocked=pad[:, None, :])
    np.testing.assert_allclose(out, expected, rtol=1e-10, atol=1e-12, err_msg="padded MHA vs numpy")


def test_padded_positions_do_not_change_the_outputs_of_real_positions(to_float64):
    mha = to_float64(nn.MultiHeadAttention(8, 2))
    x = normal64(1, 4, 8, seed=3)
    pad = np.array([[False, False, True, True]])
    before = mha(mt.Tensor(x), key_padding_mask=pad).data
    x_changed = x.copy()
    x_changed[0, 2:] += 10.0                         # rewrite the padding tokens
    after = mha(mt.Tensor(x_changed), key_padding_mask=pad).data
    np.testing.assert_allclose(after[0, :2], before[0, :2], rtol=1e-12, atol=1e-14,
                               err_msg="real positions must not see the padding")
    assert not np.allclose(after[0, 2:], before[0, 2:]), (
        "padded positions' own outputs do change (sanity)"
    )


def test_key_padding_mask_of_wrong_shape_raises_value_error():
    mha = nn.MultiHeadAttention(8, 2)
    with pytest.raises(ValueError, match="key_padding_mask"):
        mha(mt.Tensor(normal64(2, 4, 8)), key_padding_mask=np.zeros((2, 3), dtype=bool))


def test_cross_attention_reads_keys_and_values_from_context(to_float64, np_softmax):
    mha = to_float64(nn.MultiHeadAttention(8, 2, keep_attention=True))
    x, context = normal64(2, 3, 8, seed=4), normal64(2, 5, 8, seed=5)
    out = mha(mt.Tensor(x), context=mt.Tensor(context))
    assert out.shape == (2, 3, 8), f"out is [B, T_q, D] = (2, 3, 8), got {out.shape}"
    assert mha.last_attention.shape == (2, 2, 3, 5), (
        f"weights [B, H, T_q, T_k], got {mha.last_attention.shape}"
    )
    expected, _ = _np_mha(mha, x, np_softmax, context=context)
    np.testing.assert_allclose(
        out.data, expected, rtol=1e-10, atol=1e-12, err_msg="cross-attention vs numpy"
    )


def test_gradcheck_mha_parameters_and_input(to_float64, weighted_gradcheck):
    mha = to_float64(nn.MultiHeadAttention(4, 2))
    x = mt.Tensor(normal64(1, 3, 4, seed=6), requires_grad=True)
    params = mha.parameters()
    pad = np.array([[False, False, True]])
    assert weighted_gradcheck(lambda x_, *_: mha(x_, is_causal=True), [x, *params])
    assert weighted_gradcheck(lambda x_, *_: mha(x_, key_padding_mask=pad), [x, *params])


def test_gradcheck_mha_cross_attention_wrt_context(to_float64, weighted_gradcheck):
    mha = to_float64(nn.MultiHeadAttention(4, 2))
    x = mt.Tensor(normal64(1, 2, 4, seed=7), requires_grad=True)
    context = mt.Tensor(normal64(1, 3, 4, seed=8), requires_grad=True)
    assert weighted_gradcheck(lambda a, c: mha(a, context=c), [x, context])


def test_kv_cache_decoding_equals_the_full_causal_forward(to_float64):
    mha = to_float64(nn.MultiHeadAttention(8, 2, keep_attention=True))
    x = normal64(2, 6, 8, seed=9)
    full = mha(mt.Tensor(x), is_causal=True).data
    cache = nn.KVCache()
    pieces = [mha(mt.Tensor(x[:, :3]), is_causal=True, kv_cache=cache).data]  # prefill 3 tokens
    for t in range(3, 6):  # then one at a time
        pieces.append(mha(mt.Tensor(x[:, t:t + 1]), is_causal=True, kv_cache=cache).data)
        assert mha.last_attention.shape == (2, 2, 1, t + 1), (
            f"step {t}: expected weights (2, 2, 1, {t + 1}), got {mha.last_attention.shape}")
    assert len(cache) == 6, f"the cache should hold 6 positions, got {len(cache)}"
    np.testing.assert_allclose(np.concatenate(pieces, axis=1), full, rtol=1e-10, atol=1e-12,
                               err_msg="prefill + one-token decoding vs full causal forward")


def test_kv_cache_without_a_graph_holds_every_append_and_keeps_earlier_views_unchanged():
    steps = [normal64(1, 2, t, 4, seed=20 + t) for t in (3, 1, 1, 4, 1)]  # [B, H, T_new, d]
    cache, views = nn.KVCache(), []
    with mt.no_grad():
        for s in steps:
            k, v = cache.append(mt.Tensor(s), mt.Tensor(2 * s))
            views.append((k, k.data.copy()))
    expected = np.concatenate(steps, axis=-2)
    assert len(cache) == 10, f"expected 10 cached positions, got {len(cache)}"
    np.testing.assert_array_equal(cache.k.data, expected, err_msg="keys vs concatenation")
    np.testing.assert_array_equal(cache.v.data, 2 * expected, err_msg="values vs concatenation")
    for i, (view, then) in enumerate(views):  # the buffer is made at step 1, regrown at step 3
        np.testing.assert_array_equal(view.data, then, err_msg=f"keys returned by append {i}")


def test_kv_cache_append_of_another_head_width_raises_value_error_naming_both_shapes():
    cache = nn.KVCache()
    with mt.no_grad():
        cache.append(mt.Tensor(np.zeros((1, 2, 3, 4))), mt.Tensor(np.zeros((1, 2, 3, 4))))
        with pytest.raises(ValueError) as error:
            cache.append(mt.Tensor(np.zeros((1, 2, 1, 5))), mt.Tensor(np.zeros((1, 2, 1, 5))))
    assert "(1, 2, 1, 5)" in str(error.value) and "(1, 2, 3, 4)" in str(error.value), (
        f"expected both shapes in: {error.value}")


def test_kv_cache_with_a_graph_records_the_append_so_backward_reaches_the_cached_keys():
    first = mt.Tensor(normal64(1, 1, 2, 4, seed=30), requires_grad=True)
    cache = nn.KVCache()
    cache.append(first, first)
    k, _ = cache.append(mt.Tensor(normal64(1, 1, 1, 4, seed=31)), first[:, :, :1])
    k.sum().backward()
    np.testing.assert_array_equal(first.grad, np.ones((1, 1, 2, 4)),
                                  err_msg="d(sum of cached keys)/d(first keys) should be 1")


@pytest.mark.parametrize("n_heads", [1, 2, 4, 8])
def test_mha_has_4d_squared_plus_4d_parameters_whatever_n_heads(n_heads):
    d = 8
    count = nn.MultiHeadAttention(d, n_heads).num_parameters()
    assert count == 4 * d * d + 4 * d, f"expected 4·{d}² + 4·{d} = {4 * d * d + 4 * d}, got {count}"
    no_bias = nn.MultiHeadAttention(d, n_heads, bias=False).num_parameters()
    assert no_bias == 4 * d * d, f"bias=False: expected {4 * d * d}, got {no_bias}"


def test_d_model_not_divisible_by_n_heads_raises_value_error():
    with pytest.raises(ValueError) as error:
        nn.MultiHeadAttention(10, 3)
    assert "10" in str(error.value) and "3" in str(error.value), (
        f"expected both numbers in: {error.value}"
    )


def test_float_attn_mask_combines_with_key_padding_like_the_boolean_one(to_float64):
    mha = to_float64(nn.MultiHeadAttention(8, 2, keep_attention=True))
    x = mt.Tensor(normal64(2, 4, 8, seed=10))
    pad = np.array([[False, False, False, True], [False, True, False, False]])
    future = np.triu(np.ones((4, 4), dtype=bool), k=1)
    with_bool = mha(x, attn_mask=future, key_padding_mask=pad).data
    bool_weights = mha.last_attention.data
    with_float = mha(x, attn_mask=np.where(future, -np.inf, 0.0), key_padding_mask=pad).data
    np.testing.assert_allclose(
        with_float,
        with_bool,
        rtol=1e-12,
        atol=1e-14,
        err_msg="float 0/−inf attn_mask + padding vs boolean attn_mask + padding",
    )
    np.testing.assert_array_equal(
        mha.last_attention.data, bool_weights, err_msg="weights of both mask kinds"
    )
    assert np.all(bool_weights[1][..., 1] == 0), "the padded key 1 of sequence 1 must get weight 0"


@pytest.mark.parametrize("t_q, t_k", [(1, 5), (3, 5), (5, 5)])
def test_bottom_right_is_causal_in_the_function_blocks_what_the_module_blocks_after_a_cache(
        t_q, t_k):
    """The T_q queries are the last T_q of T_k positions: query i sees keys j <= T_k - T_q + i."""
    q, k, v = normal64(1, 2, t_q, 4, seed=40), normal64(1, 2, t_k, 4, seed=41), \
        normal64(1, 2, t_k, 4, seed=42)
    _, weights = nn.scaled_dot_product_attention(mt.Tensor(q), mt.Tensor(k), mt.Tensor(v),
                                                 is_causal=True, causal_alignment="bottom_right")
    expected = np.array([[j > t_k - t_q + i for j in range(t_k)] for i in range(t_q)])
    assert np.all(weights.data[..., expected] == 0), "function: future keys must get weight 0"
    assert np.all(weights.data[..., ~expected] > 0), "function: past keys must get weight > 0"
    mha = nn.MultiHeadAttention(8, 2, keep_attention=True)
    cache = nn.KVCache()
    x = mt.Tensor(normal64(1, t_k, 8, seed=43))
    with mt.no_grad():
        if t_k > t_q:
            mha(x[:, :t_k - t_q], is_causal=True, kv_cache=cache)   # the cached keys
        mha(x[:, t_k - t_q:], is_causal=True, kv_cache=cache)
    assert mha.last_attention.shape == (1, 2, t_q, t_k), mha.last_attention.shape
    np.testing.assert_array_equal(mha.last_attention.data == 0,
                                  np.broadcast_to(expected, (1, 2, t_q, t_k)),
                                  err_msg="module: blocked keys differ from the function's")


def test_bottom_right_is_causal_matches_torch_lower_right_causal_bias():
    torch = pytest.importorskip("torch")
    from torch.nn.attention.bias import causal_lower_right
    q, k, v = normal64(2, 2, 3, 4, seed=44), normal64(2, 2, 7, 4, seed=45), \
        normal64(2, 2, 7, 4, seed=46)
    out, _ = nn.scaled_dot_product_attention(mt.Tensor(q), mt.Tensor(k), mt.Tensor(v),
                                             is_causal=True, causal_alignment="bottom_right")
    tq, tk, tv = (torch.tensor(a) for a in (q, k, v))
    expected = torch.nn.functional.scaled_dot_product_attention(
        tq, tk, tv, attn_mask=causal_lower_right(3, 7))
    np.testing.assert_allclose(out.data, expected.numpy(), rtol=1e-10, atol=1e-12,
                               err_msg="bottom_right is_causal vs torch's causal_lower_right")


def test_a_kv_cache_written_by_hand_with_the_function_matches_the_modules_cached_decoding(
        to_float64):
    """Notes 3.7: keep every step's K and V, attend with the new query over all of them."""
    mha = to_float64(nn.MultiHeadAttention(8, 2))
    x = normal64(1, 5, 8, seed=47)                          # [B, T, D]
    cache = nn.KVCache()
    with mt.no_grad():
        module_steps = [mha(mt.Tensor(x[:, t:t + 1]), is_causal=True, kv_cache=cache).data
                        for t in range(5)]

    def heads(w, rows):                                     # [1, t, D] @ [D, D] -> [1, H, t, d]
        return (rows @ w.weight.data + w.bias.data).reshape(1, -1, 2, 4).transpose(0, 2, 1, 3)

    keys, values, hand_steps = [], [], []
    for t in range(5):
        row = x[:, t:t + 1]                                 # [1, 1, D]  the new token
        keys.append(heads(mha.k_proj, row))                 # [1, H, 1, d]
        values.append(heads(mha.v_proj, row))
        k, v = np.concatenate(keys, axis=2), np.concatenate(values, axis=2)  # [1, H, t+1, d]
        # the new query is the last position: bottom-right (top-left would hide every key
        # but the first from it)
        z, _ = nn.scaled_dot_product_attention(mt.Tensor(heads(mha.q_proj, row)), mt.Tensor(k),
                                               mt.Tensor(v), is_causal=True,
                                               causal_alignment="bottom_right")  # [1, H, 1, d]
        z = z.data.transpose(0, 2, 1, 3).reshape(1, 1, 8)   # [1, 1, D]  heads concatenated
        hand_steps.append(z @ mha.out_proj.weight.data + mha.out_proj.bias.data)
    np.testing.assert_allclose(np.concatenate(module_steps, 1), np.concatenate(hand_steps, 1),
                               rtol=1e-10, atol=1e-12,
                               err_msg="module's cached decoding vs the cache written by hand")


def test_attention_weights_are_kept_only_when_asked_for():
    model = nn.Sequential(nn.TransformerBlock(8, 2, 16), nn.TransformerBlock(8, 2, 16))
    x = mt.Tensor(normal64(1, 4, 8, seed=48).astype(np.float32))
    model(x)
    kept = [block.attn.last_attention for block in model]
    assert kept == [None, None], f"nobody asked: expected nothing kept, got {kept}"
    with nn.keep_attention(model):
        model(x)
    shapes = [block.attn.last_attention.shape for block in model]
    assert shapes == [(1, 2, 4, 4)] * 2, f"asked: expected [B, H, T, T] per layer, got {shapes}"
    assert [block.attn.keep_attention for block in model] == [False, False], \
        "after the with block the layers should stop keeping weights"


@pytest.mark.parametrize("cache", [{}, "abc", []], ids=["dict", "str", "list"])
@pytest.mark.parametrize("cross", [False, True], ids=["self", "cross"])
def test_a_kv_cache_that_is_not_a_kvcache_raises_one_typeerror_before_any_work(cache, cross):
    mha = nn.MultiHeadAttention(8, 2)
    x = mt.Tensor(np.zeros((1, 3, 8), np.float32))
    with pytest.raises(TypeError) as info:
        mha(x, context=x if cross else None, kv_cache=cache)
    message = str(info.value)
    expected = f"MultiHeadAttention: kv_cache must be an nn.KVCache; got {type(cache).__name__}"
    assert message == expected, f"expected {expected!r}, got {message!r}"
