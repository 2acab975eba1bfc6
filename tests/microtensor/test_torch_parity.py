"""An independent oracle: PyTorch gives the same values and gradients as microtensor on the same
float64 inputs.

Skipped where torch is not installed (microtensor never needs it). Each case runs one
op in both libraries, backpropagates the same random upstream gradient, and compares
the outputs and every input gradient.
"""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
# the imports below wait for the skip above: without torch this module is skipped, not broken
import torch.nn.functional as TF  # noqa: E402
from mt_testing import array64, assert_close  # noqa: E402

import microtensor as mt  # noqa: E402
import microtensor.functional as F  # noqa: E402


def _compare(mt_fn, torch_fn, arrays, what, atol=1e-10, rtol=1e-7):
    """Run both functions on copies of `arrays`; compare outputs and input gradients."""
    mt_inputs = [mt.Tensor(a.copy(), requires_grad=True) for a in arrays]
    torch_inputs = [torch.tensor(a.copy(), requires_grad=True) for a in arrays]
    mt_out, torch_out = mt_fn(*mt_inputs), torch_fn(*torch_inputs)
    assert_close(mt_out, torch_out.detach().numpy(), f"{what}: output vs torch", atol, rtol)
    upstream = np.random.default_rng(99).standard_normal(torch_out.shape)
    mt_out.backward(upstream)
    torch_out.backward(torch.tensor(upstream))
    for i, (m, t) in enumerate(zip(mt_inputs, torch_inputs)):
        assert_close(m.grad, t.grad.numpy(), f"{what}: gradient of input {i} vs torch", atol, rtol)


@pytest.mark.parametrize("dim", [-1, 0, 1])
def test_softmax_and_log_softmax_match_torch(dim):
    x = array64(3, 4, 5, low=-4, high=4)
    _compare(lambda t: t.softmax(dim), lambda t: torch.softmax(t, dim), [x], f"softmax(dim={dim})")
    _compare(lambda t: t.log_softmax(dim), lambda t: torch.log_softmax(t, dim), [x],
             f"log_softmax(dim={dim})")


def test_softmax_at_logits_1e4_matches_torch():
    x = np.array([[1e4, 0.0, -1e4], [-1e4, -1e4, 1e4]])
    _compare(lambda t: t.softmax(-1), lambda t: torch.softmax(t, -1), [x], "softmax of ±1e4")
    _compare(lambda t: t.log_softmax(-1), lambda t: torch.log_softmax(t, -1), [x],
             "log_softmax of ±1e4")


@pytest.mark.parametrize("normalized_shape", [(6,), (4, 6)])
def test_layer_norm_with_weight_and_bias_matches_torch(normalized_shape):
    x = array64(2, 4, 6, seed=1, low=-3, high=3)
    w, b = array64(*normalized_shape, seed=2), array64(*normalized_shape, seed=3)
    _compare(lambda x, w, b: F.layer_norm(x, normalized_shape, w, b),
             lambda x, w, b: TF.layer_norm(x, normalized_shape, w, b), [x, w, b],
             f"layer_norm over {normalized_shape}", atol=1e-9)


def test_layer_norm_without_affine_matches_torch():
    x = array64(3, 8, seed=4)
    _compare(lambda x: F.layer_norm(x, 8), lambda x: TF.layer_norm(x, (8,)), [x], "layer_norm",
             atol=1e-9)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_with_ignore_index_on_btc_logits_matches_torch(reduction):
    logits = array64(2, 5, 7, seed=5, low=-3, high=3)
    targets = np.array([[1, 6, -100, 0, 3], [-100, 2, 2, 5, -100]])
    # torch wants classes on dim 1: [B, C, T]
    _compare(lambda z: F.cross_entropy(z, targets, ignore_index=-100, reduction=reduction),
             lambda z: TF.cross_entropy(z.permute(0, 2, 1), torch.tensor(targets),
                                        ignore_index=-100,
                                        reduction=reduction),
             [logits], f"cross_entropy(reduction={reduction})")


def test_cross_entropy_with_a_custom_ignore_index_matches_torch():
    logits = array64(6, 4, seed=6)
    targets = np.array([0, 3, 3, 1, 2, 3])
    _compare(lambda z: F.cross_entropy(z, targets, ignore_index=3),
             lambda z: TF.cross_entropy(z, torch.tensor(targets), ignore_index=3),
             [logits], "cross_entropy(ignore_index=3)")


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_matches_torch(approximate):
    x = array64(4, 25, seed=7, low=-6, high=6)
    # exact gelu: microtensor's erf is a rational approximation good to ~1e-7
    atol = 1e-7 if approximate == "none" else 1e-12
    _compare(lambda t: F.gelu(t, approximate=approximate),
             lambda t: TF.gelu(t,
                               approximate=approximate), [x], f"gelu({approximate!r})", atol=atol)


@pytest.mark.parametrize("shape_a, shape_b", [
    ((2, 1, 3, 4), (5, 4, 6)),
    ((4,), (2, 4, 3)),
    ((2, 3, 4), (4,)),
    ((4,), (4,)),
    ((2, 3, 4), (4, 5)),
])
def test_matmul_with_broadcasting_and_1d_operands_matches_torch(shape_a, shape_b):
    a, b = array64(*shape_a, seed=8), array64(*shape_b, seed=9)
    _compare(lambda x, y: x @ y, lambda x, y: x @ y, [a, b], f"{shape_a} @ {shape_b}")


@pytest.mark.parametrize("exponent", [True, False, 0, 2, 1.5])
@pytest.mark.parametrize("values", [[True, False], [3, 0], [2.5, 0.5]])
def test_power_of_a_bool_int_or_float_tensor_has_torchs_dtype_and_values(values, exponent):
    # numpy's bool ** bool is int8; torch keeps bool (x ** True is x, x ** False is all True)
    ours, theirs = mt.Tensor(values) ** exponent, torch.tensor(values) ** exponent
    expected = theirs.numpy()
    assert ours.dtype == expected.dtype and np.allclose(ours.data, expected, rtol=1e-6), (
        f"Tensor({values}) ** {exponent!r}: expected {expected!r} as torch, got {ours.data!r}")


def test_max_with_ties_matches_torch_amax():
    x = np.array([[3.0, 1.0, 3.0, 3.0], [2.0, 2.0, 0.0, 1.0], [5.0, 5.0, 5.0, 5.0]])
    _compare(lambda t: t.max(axis=1), lambda t: torch.amax(t, dim=1), [x],
             "max over rows with ties")
    _compare(lambda t: t.max(), lambda t: torch.amax(t), [x], "max of everything with ties")
