"""SGD and AdamW follow PyTorch's update formulas over several steps.

Checked against numpy; also parameter groups, zero_grad and option errors.
"""
import numpy as np
import pytest

import microtensor as mt
import nn
from nn.optim import SGD, AdamW

P0 = np.array([[1.0, -2.0], [0.5, 3.0]])
TARGET = np.array([[0.0, 1.0], [-1.0, 2.0]])
SCALE = np.array([[1.0, 0.5], [2.0, 3.0]])


def _grad(p):
    """∇ of L = ½ Σ c ⊙ (p − target)²: c ⊙ (p − target) (the reference's gradient)."""
    return SCALE * (p - TARGET)


def _run(optimizer_cls, steps=3, **options):
    """`steps` optimizer steps on L(p) with backward(); returns p after each step."""
    p = nn.Parameter(P0.copy())
    opt = optimizer_cls([p], **options)
    trajectory = []
    for _ in range(steps):
        opt.zero_grad()
        ((p - TARGET) ** 2 * SCALE * 0.5).sum().backward()
        opt.step()
        trajectory.append(p.data.copy())
    return trajectory


def _check(got, expected, what):
    for step, (g, e) in enumerate(zip(got, expected), start=1):
        np.testing.assert_allclose(
            g, e, rtol=1e-12, atol=1e-15, err_msg=f"{what}, after step {step}"
        )


def _np_sgd(lr, momentum=0.0, weight_decay=0.0, steps=3):
    p, buf, out = P0.copy(), None, []
    for _ in range(steps):
        g = _grad(p) + weight_decay * p
        if momentum:
            buf = g.copy() if buf is None else momentum * buf + g
            g = buf
        p = p - lr * g
        out.append(p)
    return out


def test_sgd_plain_is_p_minus_lr_g():
    _check(_run(SGD, lr=0.1), _np_sgd(0.1), "SGD: p ← p − lr·g")


def test_sgd_momentum_buffer_starts_at_g_then_mu_b_plus_g():
    _check(_run(SGD, lr=0.1, momentum=0.9), _np_sgd(0.1, momentum=0.9), "SGD momentum 0.9")


def test_sgd_weight_decay_adds_lambda_p_to_the_gradient():
    _check(
        _run(SGD, lr=0.1, weight_decay=0.2), _np_sgd(0.1, weight_decay=0.2), "SGD weight_decay 0.2"
    )
    _check(_run(SGD, lr=0.1, momentum=0.5, weight_decay=0.2),
           _np_sgd(0.1, momentum=0.5, weight_decay=0.2), "SGD momentum 0.5 + weight_decay 0.2")


def test_sgd_first_step_by_hand():
    # g = c ⊙ (p0 − target) = [[1, −1.5], [3, 3]]; p1 = p0 − 0.1 g
    got = _run(SGD, steps=1, lr=0.1)[0]
    expected = np.array([[0.9, -1.85], [0.2, 2.7]])
    np.testing.assert_allclose(got, expected, rtol=1e-12, err_msg="one SGD step by hand")


def _np_adamw(lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01, steps=3):
    b1, b2 = betas
    p, m, v, out = P0.copy(), np.zeros_like(P0), np.zeros_like(P0), []
    for t in range(1, steps + 1):
        g = _grad(p)
        p = p * (1 - lr * weight_decay)               # decoupled: shrink p itself, times lr
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        m_hat, v_hat = m / (1 - b1 ** t), v / (1 - b2 ** t)
        p = p - lr * m_hat / (np.sqrt(v_hat) + eps)
        out.append(p)
    return out


def test_adamw_matches_numpy_update_with_bias_correction_and_decoupled_decay():
    _check(_run(AdamW, lr=0.05, weight_decay=0.1), _np_adamw(0.05, weight_decay=0.1),
           "AdamW lr 0.05, weight_decay 0.1")
    _check(
        _run(AdamW, lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.0),
        _np_adamw(0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.0),
        "AdamW betas (0.8, 0.99)",
    )


def test_adamw_first_step_moves_each_weight_by_lr_thanks_to_bias_correction():
    # m̂ = g and v̂ = g² at t = 1, so the step is lr·g/(|g| + ε) ≈ lr·sign(g);
    # without bias correction it would be lr·0.1g/(√0.001·|g|) ≈ 3.16·lr·sign(g)
    got = _run(AdamW, steps=1, lr=0.01, weight_decay=0.0)[0]
    g = _grad(P0)
    expected = P0 - 0.01 * g / (np.abs(g) + 1e-8)
    np.testing.assert_allclose(got, expected, rtol=1e-12, err_msg="AdamW step 1 ≈ p − lr·sign(g)")


def test_adamw_zero_gradient_shrinks_p_by_exactly_one_minus_lr_times_wd_per_step():
    lr, wd = 0.1, 0.5
    p = nn.Parameter(P0.copy())
    opt = AdamW([p], lr=lr, weight_decay=wd)
    expected = P0.copy()
    for step in range(1, 4):
        p.grad = np.zeros_like(P0)
        opt.step()
        expected = expected * (1 - lr * wd)
        assert np.array_equal(p.data, expected), (
            f"step {step}: expected p·(1 − lr·wd)^{step} =\n{expected}\ngot\n{p.data}"
        )
    # decay not multiplied by lr would give P0·(1 − wd)³: far from the result, so this can fail
    wrong = P0 * (1 - wd) ** 3
    assert not np.allclose(p.data, wrong), (
        f"decay must be multiplied by lr; got the lr-free result {wrong}"
    )


def test_parameter_groups_apply_their_own_weight_decay_and_lr():
    decayed, plain = nn.Parameter(P0.copy()), nn.Parameter(P0.copy())
    opt = AdamW([{"params": [decayed], "weight_decay": 0.1},
                 {"params": [plain], "weight_decay": 0.0, "lr": 0.02}], lr=0.05)
    assert opt.param_groups[1]["betas"] == (0.9, 0.999), "defaults fill what a group does not set"
    got_decayed, got_plain = [], []
    for _ in range(3):
        opt.zero_grad()
        for p in (decayed, plain):
            ((p - TARGET) ** 2 * SCALE * 0.5).sum().backward()
        opt.step()
        got_decayed.append(decayed.data.copy())
        got_plain.append(plain.data.copy())
    _check(got_decayed, _np_adamw(0.05, weight_decay=0.1), "group 0 (lr 0.05, weight_decay 0.1)")
    _check(got_plain, _np_adamw(0.02, weight_decay=0.0), "group 1 (lr 0.02, weight_decay 0)")


def test_parameter_without_gradient_is_not_touched_even_with_weight_decay():
    used, unused = nn.Parameter(P0.copy()), nn.Parameter(P0.copy())
    opt = AdamW([used, unused], lr=0.1, weight_decay=0.5)
    used.grad = np.ones_like(P0)
    opt.step()
    assert np.array_equal(unused.data, P0), (
        f"a parameter with grad None must stay put, got {unused.data}"
    )
    assert not np.array_equal(used.data, P0), "the parameter with a gradient moves (sanity)"


@pytest.mark.parametrize(
    "optimizer_cls, options", [(SGD, {"lr": 0.1, "momentum": 0.9}), (AdamW, {})]
)
def test_zero_grad_sets_every_gradient_to_none(optimizer_cls, options):
    a, b = nn.Parameter(P0.copy()), nn.Parameter(P0.copy())
    opt = optimizer_cls([{"params": [a]}, {"params": [b]}], **options)
    a.grad, b.grad = np.ones_like(P0), np.ones_like(P0)
    opt.zero_grad()
    assert a.grad is None and b.grad is None, f"expected None, None; got {a.grad}, {b.grad}"


def test_module_zero_grad_sets_every_gradient_to_none():
    layer = nn.Linear(3, 2)
    layer(mt.Tensor(np.ones((1, 3), dtype=np.float32))).sum().backward()
    assert layer.weight.grad is not None
    layer.zero_grad()
    assert all(p.grad is None for p in layer.parameters()), "Module.zero_grad() leaves None"


@pytest.mark.parametrize("optimizer_cls, options", [(SGD, {"lr": 0.1}), (AdamW, {})])
def test_unknown_group_option_raises_value_error_naming_it(optimizer_cls, options):
    with pytest.raises(ValueError, match="weight_dacay"):
        optimizer_cls([{"params": [nn.Parameter(P0.copy())], "weight_dacay": 0.1}], **options)


def test_empty_parameter_list_raises_value_error():
    with pytest.raises(ValueError):
        SGD([], lr=0.1)
