"""cross_entropy with label_smoothing, ignore_index and every reduction: finite differences,
a hand calculation and PyTorch float64 (Szegedy et al. 2016; "Attention Is All You Need" §5.4).
"""
import numpy as np
import pytest

import microtensor as mt
import microtensor.functional as F

REDUCTIONS = ["mean", "sum", "none"]


def _logits(*shape, seed=0):
    return mt.Tensor(np.random.default_rng(seed).standard_normal(shape) * 2, requires_grad=True)


def _scalar(loss, reduction, seed=1):
    """A scalar from the loss: itself, or a random weighting of the per-target losses."""
    if reduction != "none":
        return loss
    weights = np.random.default_rng(seed).standard_normal(loss.shape)
    return (loss * weights).sum()


def test_label_smoothing_loss_equals_the_hand_formula():
    z = np.array([[1.0, 2.0, 0.5], [0.0, -1.0, 3.0]])
    targets, eps = np.array([1, 2]), 0.1
    log_p = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    q = np.full_like(z, eps / 3)
    q[[0, 1], targets] += 1 - eps
    expected = -(q * log_p).sum(axis=1)  # −Σ_c q_c log p_c, q = (1 − ε)·onehot + ε/C
    got = F.cross_entropy(mt.Tensor(z), targets, reduction="none", label_smoothing=eps).data
    assert np.allclose(got, expected, rtol=1e-12, atol=0), f"expected {expected}, got {got}"


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("eps", [0.0, 0.1, 1.0])
def test_label_smoothing_gradient_matches_finite_differences(reduction, eps):
    z = _logits(5, 4)
    targets = np.array([0, -100, 3, 1, -100])
    assert mt.gradcheck(
        lambda z: _scalar(F.cross_entropy(z, targets, reduction=reduction, label_smoothing=eps),
                          reduction), [z], atol=1e-7, rtol=1e-6)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("eps", [0.0, 0.1, 0.5])
def test_label_smoothing_with_ignore_index_on_btc_logits_matches_torch(reduction, eps):
    torch = pytest.importorskip("torch")
    z = np.random.default_rng(2).standard_normal((2, 3, 5)) * 3
    targets = np.array([[4, 0, -100], [2, -100, 1]])
    ours = mt.Tensor(z, requires_grad=True)
    theirs = torch.tensor(z, requires_grad=True)
    loss = F.cross_entropy(ours, targets, reduction=reduction, label_smoothing=eps)
    expected = torch.nn.functional.cross_entropy(
        theirs.permute(0, 2, 1), torch.tensor(targets), reduction=reduction, label_smoothing=eps)
    upstream = np.random.default_rng(3).standard_normal(expected.shape)
    loss.backward(upstream)
    expected.backward(torch.tensor(upstream))
    assert loss.dtype == np.float64, f"expected float64, got {loss.dtype}"
    assert np.allclose(loss.data, expected.detach().numpy(), rtol=1e-12, atol=1e-15), (
        f"loss: expected {expected.detach().numpy()}, got {loss.data}")
    assert np.allclose(ours.grad, theirs.grad.numpy(), rtol=1e-10, atol=1e-15), (
        f"gradient: expected {theirs.grad.numpy()}, got {ours.grad}")


def test_label_smoothing_keeps_float32():
    z = mt.Tensor(np.ones((2, 3), dtype=np.float32), requires_grad=True)
    loss = F.cross_entropy(z, np.array([0, 1]), label_smoothing=0.1)
    loss.backward()
    assert (loss.dtype, z.grad.dtype) == (np.float32, np.float32), (
        f"expected float32 loss and gradient, got {loss.dtype} and {z.grad.dtype}")


@pytest.mark.parametrize("eps", [-0.1, 1.5])
def test_label_smoothing_outside_0_1_is_a_value_error_naming_it(eps):
    with pytest.raises(ValueError, match="label_smoothing"):
        F.cross_entropy(mt.Tensor(np.zeros((1, 2))), np.array([0]), label_smoothing=eps)
