"""nn agrees with PyTorch, when it is installed.

Optimizer trajectories, attention, MultiHeadAttention, Transformer layers, clipping.
"""
import numpy as np
import pytest
from mt_testing import normal64

import microtensor as mt
import nn

torch = pytest.importorskip("torch")
F_torch = torch.nn.functional


def _t(a):
    return torch.tensor(np.asarray(a), dtype=torch.float64)


# ---- optimizers -------------------------------------------------------------------------
P0, TARGET = normal64(3, 4, seed=1), normal64(3, 4, seed=2)
SCALE = np.abs(normal64(3, 4, seed=3)) + 0.5


def _ours(optimizer_cls, steps, **options):
    p = nn.Parameter(P0.copy())
    opt = optimizer_cls([p], **options)
    out = []
    for _ in range(steps):
        opt.zero_grad()
        (((p - TARGET) ** 2) * SCALE).sum().backward()
        opt.step()
        out.append(p.data.copy())
    return out


def _theirs(optimizer_cls, steps, **options):
    p = torch.nn.Parameter(_t(P0))
    opt = optimizer_cls([p], **options)
    out = []
    for _ in range(steps):
        opt.zero_grad()
        (((p - _t(TARGET)) ** 2) * _t(SCALE)).sum().backward()
        opt.step()
        out.append(p.detach().numpy().copy())
    return out


@pytest.mark.parametrize(
    "ours, theirs, options",
    [
        (nn.optim.SGD, torch.optim.SGD, dict(lr=0.05, momentum=0.9)),
        (nn.optim.SGD, torch.optim.SGD, dict(lr=0.05, momentum=0.9, weight_decay=0.1)),
        (nn.optim.AdamW, torch.optim.AdamW, dict(lr=0.05, weight_decay=0.1)),
        (
            nn.optim.AdamW,
            torch.optim.AdamW,
            dict(lr=0.01, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.0),
        ),
    ],
    ids=["sgd-momentum", "sgd-momentum-wd", "adamw", "adamw-betas"],
)
def test_optimizer_trajectory_matches_torch_over_5_steps(ours, theirs, options):
    for step, (a, b) in enumerate(
        zip(_ours(ours, 5, **options), _theirs(theirs, 5, **options)), start=1
    ):
        np.testing.assert_allclose(
            a, b, rtol=1e-12, atol=1e-14, err_msg=f"{ours.__name__} {options}, step {step}"
        )


def test_clip_grad_norm_matches_torch():
    grads = [normal64(3, 4, seed=4) * 5, normal64(7, seed=5) * 5]
    ours = [nn.Parameter(np.zeros_like(g)) for g in grads]
    theirs = [torch.nn.Parameter(_t(np.zeros_like(g))) for g in grads]
    for p, q, g in zip(ours, theirs, grads):
        p.grad, q.grad = g.copy(), _t(g)
    total = nn.utils.clip_grad_norm_(ours, 1.0)
    expected = torch.nn.utils.clip_grad_norm_(theirs, 1.0).item()
    assert total == pytest.approx(expected, rel=1e-12), (
        f"total norm: torch {expected}, ours {total}"
    )
    for p, q in zip(ours, theirs):
        np.testing.assert_allclose(p.grad, q.grad.numpy(), rtol=1e-12, err_msg="clipped gradient")


# ---- layers -------------------------------------------------------------------------------
def test_linear_matches_torch_with_the_weight_transposed():
    layer = nn.Linear(4, 3)
    x = normal64(2, 4).astype(np.float32)
    expected = F_torch.linear(
        torch.tensor(x), torch.tensor(layer.weight.data.T), torch.tensor(layer.bias.data)
    )
    np.testing.assert_allclose(layer(mt.Tensor(x)).data, expected.numpy(), rtol=1e-5, atol=1e-6,
                               err_msg="our x @ W + b vs torch x Wᵀ + b with torch W = our Wᵀ")


def test_layer_norm_and_gelu_match_torch():
    x = normal64(3, 6, seed=6) * 3 + 1
    w, b = normal64(6, seed=7), normal64(6, seed=8)
    np.testing.assert_allclose(
        mt.functional.layer_norm(mt.Tensor(x), 6, mt.Tensor(w), mt.Tensor(b)).data,
        F_torch.layer_norm(_t(x), (6,), _t(w), _t(b)).numpy(),
        rtol=1e-10,
        atol=1e-12,
        err_msg="layer_norm",
    )
    for approximate in ("none", "tanh"):
        np.testing.assert_allclose(nn.GELU(approximate)(mt.Tensor(x)).data,
                                   F_torch.gelu(_t(x), approximate=approximate).numpy(),
                                   rtol=1e-6, atol=1e-7, err_msg=f"gelu approximate={approximate}")


# ---- attention ----------------------------------------------------------------------------
def test_scaled_dot_product_attention_matches_torch():
    q = normal64(2, 2, 3, 4, seed=9)
    k, v = normal64(2, 2, 5, 4, seed=10), normal64(2, 2, 5, 6, seed=11)
    blocked = np.random.default_rng(12).random((3, 5)) < 0.4
    blocked[:, 0] = False
    float_mask = normal64(3, 5, seed=13)
    cases = {"no mask": ({}, {}),
             # torch's boolean attn_mask is True where attention is *allowed*: the opposite sense
             "boolean mask": ({"attn_mask": blocked}, {"attn_mask": torch.tensor(~blocked)}),
             "float mask": ({"attn_mask": float_mask}, {"attn_mask": _t(float_mask)})}
    for what, (ours_kw, theirs_kw) in cases.items():
        out, _ = nn.scaled_dot_product_attention(
            mt.Tensor(q), mt.Tensor(k), mt.Tensor(v), **ours_kw
        )
        expected = F_torch.scaled_dot_product_attention(_t(q), _t(k), _t(v), **theirs_kw)
        np.testing.assert_allclose(out.data, expected.numpy(), rtol=1e-10, atol=1e-12, err_msg=what)
    q, k, v = normal64(2, 4, 3, seed=14), normal64(2, 4, 3, seed=15), normal64(2, 4, 3, seed=16)
    out, _ = nn.scaled_dot_product_attention(
        mt.Tensor(q), mt.Tensor(k), mt.Tensor(v), is_causal=True
    )
    expected = F_torch.scaled_dot_product_attention(_t(q), _t(k), _t(v), is_causal=True)
    np.testing.assert_allclose(
        out.data, expected.numpy(), rtol=1e-10, atol=1e-12, err_msg="is_causal"
    )


def _load_torch_mha(theirs, ours):
    """Copy our q/k/v/out projections into torch's packed in_proj ([3D, D], ours transposed)."""
    with torch.no_grad():
        theirs.in_proj_weight.copy_(_t(np.concatenate(
            [ours.q_proj.weight.data.T, ours.k_proj.weight.data.T, ours.v_proj.weight.data.T])))
        theirs.in_proj_bias.copy_(_t(np.concatenate(
            [ours.q_proj.bias.data, ours.k_proj.bias.data, ours.v_proj.bias.data])))
        theirs.out_proj.weight.copy_(_t(ours.out_proj.weight.data.T))
        theirs.out_proj.bias.copy_(_t(ours.out_proj.bias.data))


def _mha_pair(d=8, heads=2):
    ours = nn.MultiHeadAttention(d, heads, keep_attention=True)
    for p in ours.parameters():
        p.data = p.data.astype(np.float64)
    theirs = torch.nn.MultiheadAttention(d, heads, batch_first=True, dtype=torch.float64)
    _load_torch_mha(theirs, ours)
    return ours, theirs


def test_multi_head_attention_matches_torch_with_causal_and_padding_masks():
    ours, theirs = _mha_pair()
    x = normal64(2, 5, 8, seed=17)
    future = np.triu(np.ones((5, 5), dtype=bool), k=1)
    pad = np.array([[False] * 5, [False, False, False, True, True]])
    out = ours(mt.Tensor(x), attn_mask=future, key_padding_mask=pad).data
    # nn.MultiheadAttention's boolean masks are True where blocked, as ours
    expected, weights = theirs(_t(x), _t(x), _t(x), attn_mask=torch.tensor(future),
                               key_padding_mask=torch.tensor(pad), average_attn_weights=False)
    np.testing.assert_allclose(
        out, expected.detach().numpy(), rtol=1e-10, atol=1e-12, err_msg="MHA output"
    )
    np.testing.assert_allclose(
        ours.last_attention.data,
        weights.detach().numpy(),
        rtol=1e-10,
        atol=1e-12,
        err_msg="MHA weights [B, H, T_q, T_k]",
    )


def test_cross_attention_matches_torch():
    ours, theirs = _mha_pair(d=8, heads=4)
    x, context = normal64(2, 3, 8, seed=18), normal64(2, 6, 8, seed=19)
    out = ours(mt.Tensor(x), context=mt.Tensor(context)).data
    expected, _ = theirs(_t(x), _t(context), _t(context))
    np.testing.assert_allclose(
        out, expected.detach().numpy(), rtol=1e-10, atol=1e-12, err_msg="cross-attention"
    )


@pytest.mark.parametrize("norm_first", [True, False])
def test_transformer_block_matches_torch_encoder_layer_with_causal_mask(norm_first):
    ours = nn.TransformerBlock(8, 2, 16, norm_first=norm_first)
    rng = np.random.default_rng(20)
    for p in ours.parameters():  # nudge LayerNorm off ones/zeros so that a swapped weight shows
        p.data = (p.data + rng.normal(size=p.shape) * 0.1).astype(np.float64)
    theirs = torch.nn.TransformerEncoderLayer(
        8,
        2,
        16,
        dropout=0.0,
        activation="gelu",
        batch_first=True,
        norm_first=norm_first,
        dtype=torch.float64,
    )
    _load_torch_mha(theirs.self_attn, ours.attn)
    with torch.no_grad():
        for torch_layer, our_layer in (
            (theirs.linear1, ours.mlp.fc),
            (theirs.linear2, ours.mlp.proj),
        ):
            torch_layer.weight.copy_(_t(our_layer.weight.data.T))
            torch_layer.bias.copy_(_t(our_layer.bias.data))
        for torch_ln, our_ln in ((theirs.norm1, ours.ln_1), (theirs.norm2, ours.ln_2)):
            torch_ln.weight.copy_(_t(our_ln.weight.data))
            torch_ln.bias.copy_(_t(our_ln.bias.data))
    x = normal64(2, 5, 8, seed=21)
    future = torch.triu(torch.ones(5, 5, dtype=torch.bool), diagonal=1)
    expected = theirs(_t(x), src_mask=future).detach().numpy()   # train mode: no fused fast path
    np.testing.assert_allclose(
        ours(mt.Tensor(x)).data,
        expected,
        rtol=1e-6,
        atol=1e-7,
        err_msg=f"TransformerBlock(norm_first={norm_first}) vs torch encoder layer",
    )
