"""Both attentions against torch's F.scaled_dot_product_attention in float64: every mask form.

`nn.scaled_dot_product_attention` (ordinary, from primitive ops) and `nn.tiled_attention`
(tiles with an online softmax, notes 3.8) are each compared with torch on: bool and float
masks of every broadcast shape the scores [B, H, T_q, T_k] take, no mask, `is_causal` (also
with T_q != T_k: top-left, torch's alignment), rows whose keys are all blocked, d_k = 0 and
zero-size T_q or T_k; for each case the output and the gradients of q, k and v.
A bool mask is True where a key is *blocked* here (the course's and `masked_fill`'s sense)
and True where a key *may attend* in torch's function: torch is given the inverted mask, the
one kept difference (docs/conformance.md). Masks that would grow the scores (a batch dim
the inputs lack) must be refused by both attentions, as torch refuses them.
`test_attention_conformance_size` prints the grid's size:
python -m pytest -s -k conformance_attention_size tests/oracle/test_conformance_attention.py
"""
import itertools
import zlib

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import microtensor as mt  # noqa: E402
import nn  # noqa: E402

B, H = 2, 3
SIZES = [(4, 4, 3), (3, 5, 3), (5, 3, 2), (4, 4, 0), (0, 4, 3), (4, 0, 3)]  # T_q, T_k, d_k
MASK_SHAPES = {  # name -> shape of the mask, from (T_q, T_k)
    "[T_q, T_k]": lambda tq, tk: (tq, tk),
    "[1, T_k]": lambda tq, tk: (1, tk),
    "[T_k]": lambda tq, tk: (tk,),
    "[T_q, 1]": lambda tq, tk: (tq, 1),
    "[B, 1, T_q, T_k]": lambda tq, tk: (B, 1, tq, tk),
    "[B, H, T_q, T_k]": lambda tq, tk: (B, H, tq, tk),
    "[1, H, 1, T_k]": lambda tq, tk: (1, H, 1, tk),
    "[1, 1, 1, T_k]": lambda tq, tk: (1, 1, 1, tk),
    "[H, T_q, T_k]": lambda tq, tk: (H, tq, tk),
    "[H, 1, T_k]": lambda tq, tk: (H, 1, tk),
    "[B, 1, 1, T_k]": lambda tq, tk: (B, 1, 1, tk),
    "[B, 1, 1, 1]": lambda tq, tk: (B, 1, 1, 1),
}
# (mask kind, what it blocks): bool or float (−inf where blocked, finite biases elsewhere);
# "some" blocks a random few, "row" blocks every key of query row 1 (all-blocked rows)
MASK_KINDS = [("bool", "some"), ("bool", "row"), ("float", "some"), ("float", "row")]
ATTENTIONS = ("ordinary", "tiled")
TOLERANCE = 1e-10  # float64 against float64: largest |difference| / (1 + largest |value|)


def _cases():
    cases = []
    for (t_q, t_k, d_k), attention in itertools.product(SIZES, ATTENTIONS):
        size = (t_q, t_k, d_k)
        cases.append((attention, size, None, None, False))
        cases.append((attention, size, None, None, True))
        for name, kind in itertools.product(MASK_SHAPES, MASK_KINDS):
            cases.append((attention, size, name, kind, False))
    return cases


CASES = _cases()


def _mask(shape, kind, blocks, rng):
    """(ours, torch's) for a mask of `shape`: bool True = blocked here, True = attend there."""
    blocked = rng.random(shape) < 0.3
    if blocks == "row" and len(shape) >= 2 and shape[-2] > 1:
        blocked[..., 1, :] = True                            # query 1 sees no key
    elif blocks == "row":
        blocked[...] = True                                  # a [.., 1, T_k] mask: every row
    if kind == "bool":
        ours, theirs = blocked, ~blocked
    else:
        ours = theirs = np.where(blocked, -np.inf, rng.standard_normal(shape))
    # torch's function takes a mask of 2 dims or more: a [T_k] mask goes to it as [1, T_k]
    return ours, torch.from_numpy(theirs.reshape((1,) * (2 - theirs.ndim) + theirs.shape))


def _ours(attention, q, k, v, mask, is_causal):
    if attention == "tiled":
        return nn.tiled_attention(q, k, v, attn_mask=mask, is_causal=is_causal, tile_size=2)
    return nn.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal)[0]


@pytest.mark.parametrize("attention, size, mask_name, mask_kind, is_causal", CASES,
                         ids=lambda p: str(p).replace(" ", ""))
def test_attention_output_and_gradients_match_torch(attention, size, mask_name, mask_kind,
                                                    is_causal):
    t_q, t_k, d_k = size
    rng = np.random.default_rng(zlib.crc32(repr((size, mask_name, mask_kind, is_causal)).encode()))
    arrays = [rng.standard_normal((B, H, t, d)) for t, d in ((t_q, d_k), (t_k, d_k), (t_k, 5))]
    upstream = rng.standard_normal((B, H, t_q, 5))
    ours_mask = theirs_mask = None
    if mask_name is not None:
        ours_mask, theirs_mask = _mask(MASK_SHAPES[mask_name](t_q, t_k), *mask_kind, rng)
    q, k, v = (mt.Tensor(a, requires_grad=True) for a in arrays)
    z = _ours(attention, q, k, v, ours_mask, is_causal)
    z.backward(upstream)
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in arrays)
    tz = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, attn_mask=theirs_mask,
                                                          is_causal=is_causal)
    tz.backward(torch.from_numpy(upstream))
    for name, got, want in (("out", z.data, tz.detach()), ("∂L/∂q", q.grad, tq.grad),
                            ("∂L/∂k", k.grad, tk.grad), ("∂L/∂v", v.grad, tv.grad)):
        want = np.zeros(got.shape) if want is None else want.numpy()
        assert got.shape == want.shape, f"{name}: expected shape {want.shape}, got {got.shape}"
        assert np.isfinite(got).all(), f"{name}: expected torch's finite values, got {got}"
        err = np.abs(got - want).max(initial=0.0) / (1 + np.abs(want).max(initial=0.0))
        assert err <= TOLERANCE, (f"{name}: expected torch's values within {TOLERANCE}, "
                                  f"got a relative difference of {err:.3g}")


GROWING = [(3, 7, 4, (2, 3, 7, 7)), (3, 7, 4, (5, 7, 7)), (3, 7, 4, (2, 1, 1, 7))]


@pytest.mark.parametrize("attention", ATTENTIONS)
@pytest.mark.parametrize("lead, t, d, mask_shape", GROWING)
def test_a_mask_that_adds_batch_dims_is_refused_as_torch_refuses_it(attention, lead, t, d,
                                                                   mask_shape):
    """Issue 25 #6: q, k, v [3, 7, 4] and a mask [2, 3, 7, 7] gave a [2, 3, 7, 4] output in
    tiled attention; torch and ordinary attention refuse it."""
    arrays = [np.ones((lead, t, d)) for _ in range(3)]
    mask = np.zeros(mask_shape, bool)
    with pytest.raises(RuntimeError):
        torch.nn.functional.scaled_dot_product_attention(
            *map(torch.from_numpy, arrays), attn_mask=torch.from_numpy(~mask))
    with pytest.raises(ValueError) as raised:
        _ours(attention, *map(mt.Tensor, arrays), mask, False)
    message = str(raised.value)
    assert "attn_mask" in message and str(mask_shape) in message and "\n" not in message, (
        f"expected one line naming attn_mask and its shape {mask_shape}, got {message!r}")


def test_conformance_attention_size():
    compared = 4 * len(CASES)  # the output and the gradients of q, k, v
    refused = 2 * len(GROWING)
    print(f"\nattention conformance: {len(CASES)} cases ({len(SIZES)} sizes × "
          f"{len(ATTENTIONS)} attentions × ({len(MASK_SHAPES)} mask shapes × {len(MASK_KINDS)} "
          f"mask kinds + no mask + is_causal)), {compared} arrays compared with torch, "
          f"{refused} growing masks refused")
    assert len(CASES) >= 600, f"expected a grid of at least 600 cases, got {len(CASES)}"
