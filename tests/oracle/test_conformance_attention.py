"""Both attentions against PyTorch's F.scaled_dot_product_attention (issue 25's grid), in float64:
bool and float masks of every broadcast shape, is_causal, all-blocked rows, d_k = 0 and zero-size
T; outputs and the gradients of q, k and v.

A kept difference (docs/conformance.md): a boolean attn_mask here is True where a key is
*blocked* (the course's sense and this project's API); torch's is True where a
query *may attend*, so the grid hands torch the inverted mask.
`test_conformance_attention_size` prints the grid's size.
"""
import itertools

import numpy as np
import pytest

import microtensor as mt
import nn

torch = pytest.importorskip("torch")
TF = torch.nn.functional

B, H, T_Q, T_K = 2, 3, 4, 5
MASK_SHAPES = [None, (T_Q, T_K), (1, T_K), (T_K,), (B, 1, T_Q, T_K), (B, H, T_Q, T_K),
               (1, 1, 1, T_K), (H, 1, T_K), (B, 1, 1, T_K)]
MASK_KINDS = ["bool", "float"]
SIZES = [(T_Q, T_K, 4, 3), (T_Q, T_Q, 4, 3), (T_Q, T_K, 0, 3), (0, T_K, 4, 3), (T_Q, 0, 4, 3)]
ATTENTIONS = ["ordinary", "tiled"]


def _mask(shape, kind, t_q, t_k, rng):
    if shape is None:
        return None
    shape = tuple(t_q if n == T_Q else t_k if n == T_K else n for n in shape)
    blocked = rng.random(shape) < 0.4
    if len(shape) >= 2 and shape[-2] > 1:
        blocked[..., 1, :] = True  # an all-blocked row: zeros in both, never NaN
    if kind == "bool":
        return blocked
    return np.where(blocked, -np.inf, rng.normal(size=shape))


def _ours(attention, q, k, v, mask, is_causal):
    qt, kt, vt = (mt.Tensor(a, requires_grad=True) for a in (q, k, v))
    if attention == "tiled":
        z = nn.tiled_attention(qt, kt, vt, attn_mask=mask, is_causal=is_causal, tile_size=2)
    else:
        z, _ = nn.scaled_dot_product_attention(qt, kt, vt, attn_mask=mask, is_causal=is_causal)
    upstream = np.arange(z.data.size, dtype=np.float64).reshape(z.shape) / 7 - 1
    z.backward(upstream)
    return z.data, qt.grad, kt.grad, vt.grad, upstream


def _torch(q, k, v, mask, is_causal, upstream):
    qt, kt, vt = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    if mask is not None:
        # a [T_k] mask broadcasts as [1, T_k] here (numpy's rule); torch's function wants ≥ 2-D
        mask = mask.reshape((1,) * (2 - mask.ndim) + mask.shape)
        mask = torch.tensor(~mask if mask.dtype == np.bool_ else mask)  # torch: True = attend
    z = TF.scaled_dot_product_attention(qt, kt, vt, attn_mask=mask, is_causal=is_causal)
    z.backward(torch.tensor(upstream))
    # torch leaves NaN in a row whose float mask is all −inf; our contract gives zeros there
    return [np.nan_to_num(t.detach().numpy(), nan=0.0) for t in (z, qt.grad, kt.grad, vt.grad)]


CASES = [(a, s, m, k, c) for a, s, m, k, c in itertools.product(
    ATTENTIONS, SIZES, MASK_SHAPES, MASK_KINDS, [False, True])
    if not (c and m is not None) and not (m is None and k == "float")]


@pytest.mark.parametrize("attention,size,mask_shape,mask_kind,is_causal", CASES)
def test_attention_matches_torch(attention, size, mask_shape, mask_kind, is_causal):
    t_q, t_k, d_k, d_v = size
    rng = np.random.default_rng(abs(hash((size, mask_shape, mask_kind))) % 2**32)
    q, k, v = (rng.normal(size=(B, H, t, d)) for t, d in ((t_q, d_k), (t_k, d_k), (t_k, d_v)))
    mask = _mask(mask_shape, mask_kind, t_q, t_k, rng)
    *ours, upstream = _ours(attention, q, k, v, mask, is_causal)
    theirs = _torch(q, k, v, mask, is_causal, upstream)
    for name, a, b in zip(("out", "∂L/∂q", "∂L/∂k", "∂L/∂v"), ours, theirs):
        assert a.shape == b.shape, f"{name}: expected shape {b.shape}, got {a.shape}"
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12, err_msg=(
            f"{name} of {attention} attention, size {size}, {mask_kind} mask {mask_shape}, "
            f"is_causal={is_causal}"))


@pytest.mark.parametrize("attention", ATTENTIONS)
def test_a_mask_that_adds_a_batch_dimension_is_refused_as_torch(attention):
    """Found: tiled attention took q, k, v [3, 7, 4] with a mask [2, 3, 7, 7] and returned
    (2, 3, 7, 4); ordinary attention and torch refuse."""
    rng = np.random.default_rng(0)
    q, k, v = (rng.normal(size=(3, 7, 4)) for _ in range(3))
    mask = rng.random((2, 3, 7, 7)) < 0.3
    with pytest.raises(RuntimeError):
        TF.scaled_dot_product_attention(*map(torch.tensor, (q, k, v)), attn_mask=torch.tensor(mask))
    with pytest.raises(ValueError, match=r"attn_mask of shape \(2, 3, 7, 7\)"):
        _ours(attention, q, k, v, mask, False)


@pytest.mark.parametrize("attention", ATTENTIONS)
def test_d_k_zero_gives_the_mean_of_v_as_torch(attention):
    """Found: with d_k = 0 ordinary attention returned NaN and tiled raised ZeroDivisionError;
    torch returns the mean of V (every score is an empty sum, 0)."""
    v = np.arange(15.0).reshape(1, 5, 3)
    z, *_ = _ours(attention, np.zeros((1, 2, 0)), np.zeros((1, 5, 0)), v, None, False)
    np.testing.assert_allclose(z, np.broadcast_to(v.mean(axis=1, keepdims=True), (1, 2, 3)),
                               err_msg="d_k = 0: expected the mean of V in every row")


def test_conformance_attention_size():
    print(f"\nattention grid: {len(CASES)} cases (outputs and three gradients each)")
    assert len(CASES) == 2 * 5 * (1 + 2 * 8 + 1)
