"""scaled_dot_product_attention computes softmax(QKᵀ/√d_k + M)V.

Checked on the course example, masks of both kinds, empty rows, shapes and gradients.
"""
import math

import numpy as np
import pytest

import microtensor as mt
import nn

# The course's hand example (notes 3.1–3.3): two tokens, d_k = 2
Q = np.array([[2.0, 1.0], [1.0, 2.0]])
K = np.array([[1.0, 2.0], [1.0, 1.0]])
V = np.array([[2.0, -1.0], [1.0, 0.0]])


def _attend(q, k, v, **kwargs):
    out, weights = nn.scaled_dot_product_attention(
        mt.Tensor(q), mt.Tensor(k), mt.Tensor(v), **kwargs
    )
    return out.data, weights.data


def _np_attention(q, k, v, np_softmax, mask=None):
    """softmax(q kᵀ/√d_k + mask) v in numpy; mask is additive (0 or −inf)."""
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s + mask
    a = np_softmax(s)
    return a @ v, a


def test_course_example_without_mask(np_softmax):
    s = Q @ K.T / math.sqrt(2)                      # [[4, 3], [5, 3]] / √2
    a_expected = np.exp(s) / np.exp(s).sum(axis=1, keepdims=True)
    z_expected = a_expected @ V
    # the formula reproduces the course's 4-decimal numbers ...
    np.testing.assert_allclose(a_expected, [[0.6698, 0.3302], [0.8044, 0.1956]], atol=5e-5,
                               err_msg="course A (no mask) vs the formula")
    np.testing.assert_allclose(z_expected, [[1.6698, -0.6698], [1.8044, -0.8044]], atol=5e-5,
                               err_msg="course Z (no mask) vs the formula")
    # ... and the implementation reproduces the formula
    z, a = _attend(Q, K, V)
    np.testing.assert_allclose(a, a_expected, rtol=1e-12, err_msg="weights A, no mask")
    np.testing.assert_allclose(z, z_expected, rtol=1e-12, err_msg="output Z, no mask")


def test_course_example_causal_first_row_ignores_later_tokens():
    s = Q @ K.T / math.sqrt(2)
    s[0, 1] = -np.inf                               # token 0 may not see token 1
    a_expected = np.exp(s) / np.exp(s).sum(axis=1, keepdims=True)
    z_expected = a_expected @ V
    np.testing.assert_allclose(a_expected, [[1.0, 0.0], [0.8044, 0.1956]], atol=5e-5,
                               err_msg="course A (causal) vs the formula")
    np.testing.assert_allclose(z_expected, [[2.0, -1.0], [1.8044, -0.8044]], atol=5e-5,
                               err_msg="course Z (causal) vs the formula")
    z, a = _attend(Q, K, V, is_causal=True)
    np.testing.assert_allclose(a, a_expected, rtol=1e-12, err_msg="weights A, causal")
    np.testing.assert_allclose(z, z_expected, rtol=1e-12, err_msg="output Z, causal")
    assert a[0, 1] == 0.0, f"the blocked weight must be exactly 0, got {a[0, 1]}"


def test_boolean_mask_float_mask_and_is_causal_agree():
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(2, 4, 3)), rng.normal(size=(2, 4, 3)), rng.normal(size=(2, 4, 5))
    blocked = np.triu(np.ones((4, 4), dtype=bool), k=1)     # True = blocked
    additive = np.where(blocked, -np.inf, 0.0)
    z_causal, a_causal = _attend(q, k, v, is_causal=True)
    for what, mask in (("boolean mask", blocked), ("float 0/−inf mask", additive),
                       ("boolean mask as a Tensor", mt.Tensor(blocked))):
        z, a = _attend(q, k, v, attn_mask=mask)
        np.testing.assert_allclose(
            a, a_causal, rtol=1e-12, atol=0, err_msg=f"weights: {what} vs is_causal"
        )
        np.testing.assert_allclose(
            z, z_causal, rtol=1e-12, atol=1e-15, err_msg=f"output: {what} vs is_causal"
        )
    assert np.all(a_causal[:, blocked] == 0), "blocked weights must be exactly 0"


def test_float_mask_is_added_to_the_scaled_scores(np_softmax):
    rng = np.random.default_rng(1)
    q, k, v = rng.normal(size=(3, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 2))
    mask = rng.normal(size=(3, 5))                  # any values, not just 0 / −inf
    z_expected, a_expected = _np_attention(q, k, v, np_softmax, mask)
    z, a = _attend(q, k, v, attn_mask=mask)
    np.testing.assert_allclose(a, a_expected, rtol=1e-12, err_msg="softmax(QKᵀ/√d_k + M)")
    np.testing.assert_allclose(z, z_expected, rtol=1e-12, err_msg="softmax(QKᵀ/√d_k + M) V")
    # adding M before the scaling, (QKᵀ + M)/√d_k, gives other weights: so the test above can fail
    _, a_unscaled = _np_attention(q, k, v, np_softmax, mask / math.sqrt(4))
    assert not np.allclose(a_unscaled, a_expected, atol=1e-3)


def test_boolean_mask_blocks_exactly_even_when_scores_are_huge():
    # q·k₀ = 1e12 for the blocked key 0, q·k₁ = 0 for the allowed key 1
    q, k = np.array([[1e6]]), np.array([[1e6], [0.0]])
    v = np.array([[5.0, 5.0], [1.0, -1.0]])
    z, a = _attend(q, k, v, attn_mask=np.array([[True, False]]))
    assert a[0, 0] == 0.0 and a[0, 1] == 1.0, f"expected weights exactly [0, 1], got {a[0]}"
    assert np.array_equal(z[0], v[1]), f"expected the output v₁ = {v[1]}, got {z[0]}"
    # a finite additive −1e9 "mask" leaks at this scale: 1e12 − 1e9 still beats 0
    _, leaky = _attend(q, k, v, attn_mask=np.array([[-1e9, 0.0]]))
    assert leaky[0, 0] > 0.99, (
        f"−1e9 should leak here (weight on the blocked key ≈ 1), got {leaky[0, 0]}"
    )


def _check_all_blocked_row_is_zero(mask):
    rng = np.random.default_rng(2)
    q = mt.Tensor(rng.normal(size=(3, 4)), requires_grad=True)
    k = mt.Tensor(rng.normal(size=(5, 4)), requires_grad=True)
    v = mt.Tensor(rng.normal(size=(5, 2)), requires_grad=True)
    out, weights = nn.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert np.array_equal(weights.data[1], np.zeros(5)), (
        f"row 1 weights: expected zeros, got {weights.data[1]}"
    )
    assert np.array_equal(out.data[1], np.zeros(2)), (
        f"row 1 output: expected zeros, got {out.data[1]}"
    )
    np.testing.assert_allclose(
        weights.data[[0, 2]].sum(-1), 1.0, err_msg="other rows still sum to 1"
    )
    (out * rng.normal(size=out.shape)).sum().backward()
    for name, t in (("q", q), ("k", k), ("v", v)):
        assert np.all(np.isfinite(t.grad)), f"d/d{name} has NaN/inf: {t.grad}"
    assert np.array_equal(q.grad[1], np.zeros(4)), (
        f"the empty row's query gets no gradient, got {q.grad[1]}"
    )


def test_query_with_every_key_blocked_by_boolean_mask_gives_zeros_and_no_nan():
    mask = np.zeros((3, 5), dtype=bool)
    mask[1] = True
    mask[0, 2] = True
    _check_all_blocked_row_is_zero(mask)


def test_query_with_every_key_blocked_by_float_mask_gives_zeros_and_no_nan():
    mask = np.zeros((3, 5))
    mask[1] = -np.inf
    _check_all_blocked_row_is_zero(mask)


def test_cross_attention_shapes_with_t_q_not_t_k_and_d_v_not_d_k(np_softmax):
    rng = np.random.default_rng(3)
    q, k, v = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 5, 4)), rng.normal(size=(2, 5, 6))
    z, a = _attend(q, k, v)
    assert z.shape == (2, 3, 6), f"out is [B, T_q, d_v] = (2, 3, 6), got {z.shape}"
    assert a.shape == (2, 3, 5), f"weights are [B, T_q, T_k] = (2, 3, 5), got {a.shape}"
    z_expected, a_expected = _np_attention(q, k, v, np_softmax)
    np.testing.assert_allclose(z, z_expected, rtol=1e-12, err_msg="batched cross-attention output")
    np.testing.assert_allclose(a, a_expected, rtol=1e-12, err_msg="batched cross-attention weights")


def test_mask_of_shape_t_q_by_t_k_broadcasts_over_batch_and_heads(np_softmax):
    rng = np.random.default_rng(4)
    q, k, v = (
        rng.normal(size=(2, 3, 4, 2)),
        rng.normal(size=(2, 3, 6, 2)),
        rng.normal(size=(2, 3, 6, 2)),
    )
    blocked = rng.random((4, 6)) < 0.4
    blocked[:, 0] = False                            # keep one key per row
    z, a = _attend(q, k, v, attn_mask=blocked)
    z_expected, a_expected = _np_attention(q, k, v, np_softmax, np.where(blocked, -np.inf, 0.0))
    np.testing.assert_allclose(
        a, a_expected, rtol=1e-12, atol=0, err_msg="[T_q, T_k] mask over [B, H, T_q, T_k]"
    )
    np.testing.assert_allclose(z, z_expected, rtol=1e-12, err_msg="output with a broadcast mask")


def test_mismatched_shapes_raise_value_error():
    q, k = mt.Tensor(np.zeros((2, 4))), mt.Tensor(np.zeros((3, 5)))
    with pytest.raises(ValueError):
        nn.scaled_dot_product_attention(q, k, mt.Tensor(np.zeros((3, 2))))      # d_k 4 vs 5
    with pytest.raises(ValueError):
        nn.scaled_dot_product_attention(
            q, mt.Tensor(np.zeros((3, 4))), mt.Tensor(np.zeros((2, 2)))
        )  # T_k 3 vs 2


def _qkv64(seed=5):
    rng = np.random.default_rng(seed)
    return [mt.Tensor(rng.normal(size=shape), requires_grad=True)
            for shape in ((2, 3, 4), (2, 4, 4), (2, 4, 3))]


_BOOL = np.array([[False, True, False, True],
                  [True, True, True, True],          # a row with every key blocked
                  [False, False, True, False]])
_MASKS = {"no mask": {}, "causal": {"is_causal": True}, "boolean mask": {"attn_mask": _BOOL},
          "float mask": {"attn_mask": np.random.default_rng(6).normal(size=(3, 4))}}


@pytest.mark.parametrize("case", list(_MASKS))
def test_gradcheck_attention_output_wrt_q_k_v(case, weighted_gradcheck):
    kwargs = _MASKS[case]
    assert weighted_gradcheck(lambda q, k, v: nn.scaled_dot_product_attention(q, k, v, **kwargs)[0],
                              _qkv64())


def test_gradcheck_attention_weights_wrt_q_k(weighted_gradcheck):
    assert weighted_gradcheck(
        lambda q, k, v: nn.scaled_dot_product_attention(q, k, v, is_causal=True)[1], _qkv64()
    )


# ---- issue 25 findings 6, 7 and 11, each failing before its fix --------------------------

def _both(q, k, v, **kwargs):
    """{attention: Z} of ordinary and tiled attention on the same float64 arrays."""
    tensors = [mt.Tensor(a) for a in (q, k, v)]
    return {"ordinary": nn.scaled_dot_product_attention(*tensors, **kwargs)[0].data,
            "tiled": nn.tiled_attention(*tensors, tile_size=2, **kwargs).data}


@pytest.mark.parametrize("attention", ["ordinary", "tiled"])
def test_a_mask_with_a_batch_dim_the_inputs_lack_is_refused_in_one_line(attention):
    """#6: q, k, v [3, 7, 4] with a mask [2, 3, 7, 7]: tiled attention returned (2, 3, 7, 4);
    both attentions must refuse it as torch does, naming attn_mask and the shapes."""
    q = k = v = mt.Tensor(np.ones((3, 7, 4)))
    mask = np.zeros((2, 3, 7, 7), bool)
    with pytest.raises(ValueError) as raised:
        if attention == "tiled":
            nn.tiled_attention(q, k, v, attn_mask=mask)
        else:
            nn.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    message = str(raised.value)
    assert "attn_mask" in message and "(2, 3, 7, 7)" in message and "(3, 7, 7)" in message \
        and "\n" not in message, f"expected one line naming attn_mask (2, 3, 7, 7) and the " \
                                 f"scores (3, 7, 7), got {message!r}"


def test_the_bool_mask_sense_is_stated_first_as_the_difference_from_torch():
    """#7: True = blocked here, True = may attend in torch's function: said in the first
    paragraph of the docstring (and in docs/conformance.md)."""
    first = nn.scaled_dot_product_attention.__doc__.split("\n\n")[0]
    assert "True" in first and "blocked" in first and \
        "unlike torch.nn.functional.scaled_dot_product_attention, where True means may attend" \
        in " ".join(first.split()), f"expected the kept difference in: {first!r}"


def test_a_torch_keep_mask_inverted_gives_torch_s_values():
    """#7: torch's tril "keep" mask, given here as its inverse (True = blocked), gives torch's
    output; given as it is, it would block the keys torch keeps (a max difference of ~1)."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    q, k, v = (rng.standard_normal((2, 5, 4)) for _ in range(3))
    keep = np.tril(np.ones((5, 5), bool))
    want = torch.nn.functional.scaled_dot_product_attention(
        *map(torch.from_numpy, (q, k, v)), attn_mask=torch.from_numpy(keep)).numpy()
    for attention, got in _both(q, k, v, attn_mask=~keep).items():
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12,
                                   err_msg=f"{attention}: expected torch's values")


@pytest.mark.parametrize("attention", ["ordinary", "tiled"])
def test_d_k_zero_gives_the_mean_of_the_unblocked_values(attention):
    """#11: with d_k = 0 every score is an empty sum, 0, so softmax weighs the keys equally:
    Z is the mean of V over the unblocked keys (torch's answer), and an all-blocked row is 0.
    Ordinary attention gave NaN, tiled attention raised ZeroDivisionError."""
    v = np.arange(12.0).reshape(1, 4, 3)                   # [1, T_k = 4, d_v = 3]
    q, k = np.zeros((1, 3, 0)), np.zeros((1, 4, 0))
    mask = np.array([[False] * 4, [False, True, False, True], [True] * 4])
    got = _both(q, k, v, attn_mask=mask)[attention][0]
    want = np.stack([v[0].mean(0), v[0, [0, 2]].mean(0), np.zeros(3)])
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12,
                               err_msg=f"{attention}: expected the means of V {want}, got {got}")


def _nn_imports():
    """{module: the nn modules it imports, at the top or inside a function} for nn/*.py."""
    import ast
    from pathlib import Path
    folder = Path(nn.__file__).parent
    graph = {}
    for path in folder.glob("*.py"):
        names = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                names |= {node.module} if node.module else {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and \
                    node.module.startswith("nn."):
                names.add(node.module.split(".")[1])
        graph[path.stem] = {n.split(".")[0] for n in names} & {p.stem for p in folder.glob("*.py")}
    return graph


def test_attention_s_files_import_one_way_with_no_circle():
    """Issue 24: attention, kv_cache, tiled_attention and attention_checks imported each other
    in a circle (lazy imports included); attention.py now imports the others, never back."""
    graph = _nn_imports()
    for helper in ("masks", "kv_cache", "tiled_attention", "attention_checks", "keep_attention"):
        assert "attention" not in graph.get(helper, ()), f"nn/{helper}.py imports nn/attention.py"

    def reach(start, seen):
        for nxt in graph.get(start, ()):
            if nxt not in seen:
                seen.add(nxt)
                reach(nxt, seen)
        return seen
    circles = sorted(m for m in graph if m != "__init__" and m in reach(m, set()))
    assert not circles, f"expected no import circle in nn/, got one through {circles}"


@pytest.mark.parametrize("t_q, t_k, offset", [(4, 4, 0), (1, 6, 5), (3, 7, 4), (5, 3, -2)])
def test_the_cached_causal_mask_is_the_notes_mask_read_only(t_q, t_k, offset):
    """MultiHeadAttention's speed cache holds the same M as its causal_mask, and cannot be written
    into; where M blocks no key (one query after a KV cache) it holds None."""
    cached = nn.attention.cached_causal_mask(t_q, t_k, offset)
    expected = nn.causal_mask(t_q, t_k, offset)
    if not expected.any():
        assert cached is None, f"expected None for a mask blocking nothing, got {cached}"
        return
    assert cached.dtype == np.bool_ and np.array_equal(cached, expected), (
        f"expected {expected.astype(int)}, got {cached.astype(int)}")
    assert not cached.flags.writeable, "expected the cached mask to be read-only"
