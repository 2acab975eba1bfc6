"""The building blocks of a transformer: softmax, log_softmax, layer_norm, cross_entropy,
embedding, dropout.

Forward values are compared with direct numpy formulas, gradients with finite
differences (float64). Dropout is random, so its test fixes the seed with
`microtensor.manual_seed` and checks that the gradient is exactly mask / (1 − p).
"""
import numpy as np
import pytest
from mt_testing import array64, assert_close, check_gradients, tensor64

import microtensor as mt
import microtensor.functional as F


def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("axis", [-1, 0, 1, 2, -2])
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_family_matches_formula_and_finite_differences_on_any_axis(name, axis):
    x = tensor64(2, 3, 4, low=-3, high=3)
    expected = _softmax(x.data, axis)
    if name == "log_softmax":
        expected = np.log(expected)
    def method(t):
        return getattr(t, name)(axis=axis)

    def function(t):
        return getattr(F, name)(t, axis=axis)

    assert_close(method(x), expected, f"x.{name}(axis={axis})")
    assert_close(function(x), expected, f"F.{name}(x, axis={axis})")
    assert check_gradients(method, x)


def test_softmax_rows_sum_to_one():
    x = tensor64(4, 6, low=-5, high=5)
    sums = x.softmax(axis=-1).data.sum(axis=-1)
    assert_close(sums, np.ones(4), "softmax row sums")


def _layer_norm(x, n_dims, weight=None, bias=None, eps=1e-5):
    axes = tuple(range(-n_dims, 0))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)  # biased: divide by n
    y = (x - mean) / np.sqrt(var + eps)
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


@pytest.mark.parametrize("normalized_shape", [4, (4,), (3, 4)])
@pytest.mark.parametrize("use_weight, use_bias", [(False, False), (True, False), (False, True),
                                                  (True, True)])
def test_layer_norm_matches_formula_and_finite_differences(normalized_shape, use_weight, use_bias):
    norm_shape = (normalized_shape,) if isinstance(normalized_shape, int) else normalized_shape
    x = tensor64(2, 3, 4, seed=1)
    weight = tensor64(*norm_shape, seed=2, low=0.5, high=1.5) if use_weight else None
    bias = tensor64(*norm_shape, seed=3) if use_bias else None
    expected = _layer_norm(x.data, len(norm_shape), weight.data if use_weight else None,
                           bias.data if use_bias else None)
    out = F.layer_norm(x, normalized_shape, weight=weight, bias=bias)
    assert_close(out, expected,
                 f"layer_norm over {norm_shape}, weight={use_weight}, bias={use_bias}")
    inputs = [t for t in (x, weight, bias) if t is not None]

    def fn(x, *affine):
        affine = list(affine)
        w = affine.pop(0) if use_weight else None
        b = affine.pop(0) if use_bias else None
        return F.layer_norm(x, normalized_shape, weight=w, bias=b)

    assert check_gradients(fn, *inputs)


def test_layer_norm_with_a_custom_eps_uses_it():
    x = tensor64(2, 5)
    assert_close(F.layer_norm(x, 5, eps=0.5), _layer_norm(x.data, 1, eps=0.5), "layer_norm eps=0.5")


def _cross_entropy_losses(logits, targets, ignore_index=-100):
    """Per-position loss −log softmax(z)[t], 0 where ignored (numpy reference)."""
    flat, t = logits.reshape(-1, logits.shape[-1]), targets.reshape(-1)
    log_p = np.log(_softmax(flat, -1))
    valid = t != ignore_index
    losses = np.where(valid, -log_p[np.arange(len(t)), np.where(valid, t, 0)], 0.0)
    return losses.reshape(targets.shape), valid.reshape(targets.shape)


@pytest.mark.parametrize("shape", [(5, 4), (2, 3, 4)])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("ignore_index", [-100, 1])
def test_cross_entropy_matches_formula_and_finite_differences(shape, reduction, ignore_index):
    logits = tensor64(*shape, low=-3, high=3)
    targets = np.random.default_rng(5).integers(0, shape[-1], size=shape[:-1])
    targets.reshape(-1)[:2] = [1, 2]  # at least one ignored and one kept when ignore_index=1
    losses, valid = _cross_entropy_losses(logits.data, targets, ignore_index)
    expected = {"none": losses, "sum": losses.sum(), "mean": losses.sum() / valid.sum()}[reduction]
    out = F.cross_entropy(logits, targets, ignore_index=ignore_index, reduction=reduction)
    assert_close(out, expected,
                 f"cross_entropy({shape}, reduction={reduction}, ignore={ignore_index})")
    assert check_gradients(
        lambda z: F.cross_entropy(z, targets, ignore_index=ignore_index,
                                  reduction=reduction), logits)


def test_cross_entropy_mean_divides_by_the_number_of_kept_targets_not_all_targets():
    logits = mt.Tensor(np.zeros((4, 2)), requires_grad=True)  # each loss is log 2
    targets = np.array([0, -100, -100, 1])
    loss = F.cross_entropy(logits, targets)
    assert abs(loss.item() - np.log(2)) < 1e-12, (
        f"expected mean over 2 kept = log 2; got {loss.item()}")
    loss.backward()
    assert_close(logits.grad[1:3], np.zeros((2, 2)), "ignored rows get zero gradient")
    assert_close(logits.grad[0], [-0.25, 0.25], "kept row: (softmax − onehot) / 2 kept")


def test_cross_entropy_accepts_targets_as_an_integer_tensor():
    logits = tensor64(3, 4)
    targets = np.array([3, 0, 1])
    a = F.cross_entropy(logits, targets)
    b = F.cross_entropy(logits, mt.Tensor(targets))
    assert a.item() == b.item(), f"Tensor targets gave {b.item()}, numpy targets {a.item()}"


@pytest.mark.parametrize("ids_shape", [(5,), (2, 3)])
def test_embedding_gathers_rows_and_sums_gradients_of_repeated_ids(ids_shape):
    weight = tensor64(4, 3)
    ids = np.array([1, 3, 1, 1, 0, 3])[: int(np.prod(ids_shape))].reshape(ids_shape)
    assert_close(F.embedding(ids, weight), weight.data[ids], "embedding lookup")
    assert check_gradients(lambda w: F.embedding(ids, w), weight)
    weight.zero_grad()
    F.embedding(mt.Tensor(ids), weight).sum().backward()
    counts = np.bincount(ids.reshape(-1), minlength=4)[:, None] * np.ones((1, 3))
    assert_close(weight.grad, counts, "each row's gradient counts how often its id was used")


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_dropout_gradient_equals_mask_over_keep_probability(p):
    x = tensor64(50, 40)
    mt.manual_seed(1234)
    out = F.dropout(x, p)
    mask = out.data != 0
    assert_close(out, x.data * mask / (1 - p), f"dropout(p={p}) output = x ⊙ mask / (1 − p)")
    kept = mask.mean()
    assert abs(kept - (1 - p)) < 0.05, (
        f"expected about {1 - p:.2f} of the entries kept; got {kept:.3f}")
    upstream = array64(50, 40, seed=9)
    out.backward(upstream)
    assert_close(x.grad, upstream * mask / (1 - p), "dropout gradient = g ⊙ mask / (1 − p)")


def test_dropout_with_the_same_seed_drops_the_same_entries():
    x = tensor64(10, 10)
    mt.manual_seed(7)
    first = F.dropout(x, 0.5).data
    mt.manual_seed(7)
    second = F.dropout(x, 0.5).data
    assert np.array_equal(first, second), "manual_seed(7) twice should give the same dropout mask"


def test_dropout_is_the_identity_when_not_training_or_p_is_zero():
    x = tensor64(3, 3)
    assert np.array_equal(F.dropout(x, 0.5, training=False).data, x.data), (
        "eval-mode dropout changed x")
    assert np.array_equal(F.dropout(x, 0.0).data, x.data), "dropout(p=0) changed x"
