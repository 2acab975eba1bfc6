"""clip_grad_norm_ uses one global norm; warmup_cosine_lr warms up, then decays.

The rise is linear, the decay half a cosine down to min_lr.
"""
import math

import numpy as np
import pytest

import nn
from nn.optim import warmup_cosine_lr
from nn.utils import clip_grad_norm_


def _params_with_grads(*grads):
    params = []
    for g in grads:
        p = nn.Parameter(np.zeros(np.shape(g)))
        p.grad = np.array(g, dtype=np.float64)
        params.append(p)
    return params


def test_clip_scales_every_gradient_by_one_global_norm():
    a, b = _params_with_grads([3.0, 0.0], [[0.0, 4.0]])   # global norm √(9 + 16) = 5
    total = clip_grad_norm_([a, b], max_norm=1.0)
    assert total == pytest.approx(5.0, rel=1e-12), f"expected the pre-clip norm 5.0, got {total}"
    scale = 1.0 / (5.0 + 1e-6)  # PyTorch's max_norm / (total + 1e-6)
    np.testing.assert_allclose(
        a.grad, [3.0 * scale, 0.0], rtol=1e-12, err_msg="first gradient × 1/5"
    )
    np.testing.assert_allclose(
        b.grad, [[0.0, 4.0 * scale]], rtol=1e-12, err_msg="second gradient × 1/5"
    )
    # clipping each parameter on its own would give [1, 0] and [0, 1]: the test can tell
    assert not np.allclose(b.grad, [[0.0, 1.0]]), (
        "gradients were clipped per parameter, not globally"
    )
    new_norm = math.sqrt((a.grad ** 2).sum() + (b.grad ** 2).sum())
    assert new_norm == pytest.approx(1.0, rel=1e-5), (
        f"expected a clipped global norm ≈ 1, got {new_norm}"
    )


def test_clip_leaves_gradients_alone_under_max_norm_and_returns_the_norm():
    a, b = _params_with_grads([0.3, 0.0], [[0.0, -0.4]])
    total = clip_grad_norm_([a, b], max_norm=1.0)
    assert total == pytest.approx(0.5, rel=1e-12), f"expected 0.5, got {total}"
    assert np.array_equal(a.grad, [0.3, 0.0]) and np.array_equal(b.grad, [[0.0, -0.4]]), (
        f"gradients under max_norm must be unchanged; got {a.grad}, {b.grad}")


def test_clip_ignores_parameters_without_gradient():
    a, = _params_with_grads([6.0, 8.0])
    idle = nn.Parameter(np.ones(2))
    total = clip_grad_norm_((p for p in (a, idle)), max_norm=100.0)  # a generator works too
    assert total == pytest.approx(10.0), f"expected 10.0, got {total}"
    assert idle.grad is None, "a parameter without gradient keeps grad None"


LR, MIN_LR, WARMUP, DECAY = 6e-4, 6e-5, 10, 110


def _lr(it):
    return warmup_cosine_lr(it, LR, MIN_LR, WARMUP, DECAY)


def test_schedule_starts_near_zero_and_rises_linearly_during_warmup():
    first = _lr(0)
    assert 0 < first <= LR / WARMUP, f"expected 0 < lr(0) <= lr/warmup = {LR / WARMUP}, got {first}"
    steps = np.diff([_lr(it) for it in range(WARMUP)])
    np.testing.assert_allclose(steps, steps[0], rtol=1e-9, err_msg="equal increments during warmup")
    assert steps[0] > 0, "warmup increases the rate"


def test_schedule_reaches_lr_at_the_end_of_warmup():
    assert _lr(WARMUP) == pytest.approx(LR, rel=1e-12), (
        f"expected lr = {LR} at it = warmup, got {_lr(WARMUP)}"
    )


def test_schedule_is_min_lr_at_decay_iters_and_after():
    for it in (DECAY, DECAY + 1, DECAY + 1000):
        assert _lr(it) == pytest.approx(MIN_LR, rel=1e-12), (
            f"it={it}: expected min_lr {MIN_LR}, got {_lr(it)}"
        )


def test_schedule_halfway_through_decay_is_the_mean_of_lr_and_min_lr():
    halfway = (WARMUP + DECAY) // 2
    expected = (LR + MIN_LR) / 2
    assert _lr(halfway) == pytest.approx(expected, rel=1e-12), (
        f"expected {expected}, got {_lr(halfway)}"
    )
    # a quarter of the way, the cosine gives min + (lr − min)·(1 + cos(π/4))/2, not the linear 3/4
    quarter = WARMUP + (DECAY - WARMUP) // 4
    cosine = MIN_LR + (LR - MIN_LR) * (1 + math.cos(math.pi / 4)) / 2
    assert _lr(quarter) == pytest.approx(cosine, rel=1e-12), (
        f"expected {cosine}, got {_lr(quarter)}"
    )


def test_schedule_never_increases_after_warmup():
    rates = [_lr(it) for it in range(WARMUP, DECAY + 5)]
    assert all(b <= a for a, b in zip(rates, rates[1:])), "the rate must not rise during decay"
