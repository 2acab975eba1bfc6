"""The basic layers compute their formulas, checked against numpy.

Linear, Embedding, LayerNorm, Dropout, GELU and ReLU.
"""
import math

import numpy as np
import pytest

import microtensor as mt
import nn


def test_linear_is_x_times_weight_in_by_out_plus_bias():
    layer = nn.Linear(4, 3)
    assert layer.weight.shape == (4, 3), f"weight is [in, out] = (4, 3); got {layer.weight.shape}"
    assert layer.bias.shape == (3,), f"bias is [out] = (3,); got {layer.bias.shape}"
    x = np.random.default_rng(0).normal(size=(2, 5, 4)).astype(np.float32)
    expected = x @ layer.weight.data + layer.bias.data
    np.testing.assert_allclose(layer(mt.Tensor(x)).data, expected, rtol=1e-5, atol=1e-6,
                               err_msg="Linear(x) vs x @ W + b")


def test_linear_without_bias_has_no_bias_parameter_and_is_x_times_weight():
    layer = nn.Linear(4, 3, bias=False)
    assert layer.bias is None and [n for n, _ in layer.named_parameters()] == ["weight"]
    x = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    np.testing.assert_allclose(
        layer(mt.Tensor(x)).data,
        x @ layer.weight.data,
        rtol=1e-5,
        atol=1e-6,
        err_msg="Linear(bias=False)(x) vs x @ W",
    )


def test_linear_gradients_are_x_transpose_g_and_column_sums_of_g():
    layer = nn.Linear(3, 2)
    rng = np.random.default_rng(1)
    x, g = rng.normal(size=(4, 3)).astype(np.float32), rng.normal(size=(4, 2)).astype(np.float32)
    layer(mt.Tensor(x)).backward(g)
    np.testing.assert_allclose(
        layer.weight.grad, x.T @ g, rtol=1e-5, atol=1e-6, err_msg="dL/dW = xᵀ g"
    )
    np.testing.assert_allclose(
        layer.bias.grad, g.sum(axis=0), rtol=1e-5, atol=1e-6, err_msg="dL/db = Σ_rows g"
    )


def test_linear_init_is_uniform_within_one_over_sqrt_fan_in():
    layer = nn.Linear(16, 32)
    bound = 1 / math.sqrt(16)
    worst = max(np.abs(layer.weight.data).max(), np.abs(layer.bias.data).max())
    assert worst <= bound, f"expected |w| <= {bound}, got {worst}"
    assert layer.weight.dtype == np.float32, f"expected float32 weights, got {layer.weight.dtype}"


def test_linear_wrong_input_width_raises_value_error_naming_the_shapes():
    layer = nn.Linear(4, 3)
    with pytest.raises(ValueError) as error:
        layer(mt.Tensor(np.zeros((2, 5), dtype=np.float32)))
    message = str(error.value)
    assert "(2, 5)" in message and "4" in message, (
        f"expected the input shape (2, 5) and width 4 in: {message}"
    )


def test_embedding_picks_rows_of_the_weight():
    emb = nn.Embedding(6, 3)
    ids = np.array([[0, 5, 2], [2, 2, 1]])
    got = emb(ids).data
    assert got.shape == (2, 3, 3), f"expected shape (2, 3, 3), got {got.shape}"
    assert np.array_equal(got, emb.weight.data[ids]), (
        f"expected weight[ids]\n{emb.weight.data[ids]}\ngot\n{got}"
    )
    assert np.array_equal(emb(mt.Tensor(ids)).data, got), (
        "a Tensor of ids gives the same rows as a numpy array"
    )


def test_embedding_gradient_of_a_repeated_id_accumulates():
    emb = nn.Embedding(5, 2)
    ids = np.array([[1, 3, 1]])
    g = np.array([[[1.0, 2.0], [10.0, 20.0], [100.0, 200.0]]], dtype=np.float32)
    emb(ids).backward(g)
    expected = np.zeros((5, 2), dtype=np.float32)
    expected[1] = [101.0, 202.0]  # id 1 appears at positions 0 and 2
    expected[3] = [10.0, 20.0]
    assert np.array_equal(emb.weight.grad, expected), (
        f"expected\n{expected}\ngot\n{emb.weight.grad}"
    )


def test_embedding_rejects_float_ids():
    with pytest.raises(TypeError):
        nn.Embedding(5, 2)(np.array([0.0, 1.0]))


def _np_layer_norm(x, w, b, eps=1e-5):
    """Two passes: the mean, then the mean of squared deviations (biased variance, divide by n)."""
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


@pytest.mark.parametrize("eps", [1e-5, 0.5])
def test_layer_norm_equals_numpy_two_pass_formula_with_biased_variance(eps):
    rng = np.random.default_rng(0)
    ln = nn.LayerNorm(6, eps=eps)
    ln.weight.data = rng.normal(size=6)
    ln.bias.data = rng.normal(size=6)
    x = rng.normal(size=(2, 3, 6))
    expected = _np_layer_norm(x, ln.weight.data, ln.bias.data, eps)
    np.testing.assert_allclose(
        ln(mt.Tensor(x)).data,
        expected,
        rtol=1e-10,
        atol=1e-12,
        err_msg=f"LayerNorm vs (x − μ)/√(σ² + ε)·w + b, σ² biased, ε = {eps}",
    )
    # the unbiased variance (ddof=1) gives visibly different numbers for n = 6, so this can fail
    mu = x.mean(-1, keepdims=True)
    unbiased = (x - mu) / np.sqrt(
        x.var(-1, ddof=1, keepdims=True) + eps
    ) * ln.weight.data + ln.bias.data
    assert not np.allclose(unbiased, expected, atol=1e-3), (
        "biased and unbiased variance should differ here"
    )


def test_layer_norm_keeps_precision_of_float32_rows_with_a_large_offset():
    # a one-pass E[x²] − E[x]² in float32 loses everything here: E[x²] ~ 1e8, spacing ~ 8
    noise = np.random.default_rng(0).normal(size=(4, 64))
    x = (1e4 + noise).astype(np.float32)
    ln = nn.LayerNorm(64)
    expected = _np_layer_norm(x.astype(np.float64), 1.0, 0.0)
    got = ln(mt.Tensor(x)).data
    np.testing.assert_allclose(
        got, expected, atol=1e-2, err_msg="float32 LayerNorm of 1e4 + N(0, 1)"
    )


def test_layer_norm_defaults_to_ones_and_zeros_and_normalises_each_row():
    ln = nn.LayerNorm(5)
    assert np.array_equal(ln.weight.data, np.ones(5)) and np.array_equal(ln.bias.data, np.zeros(5))
    y = ln(mt.Tensor(np.random.default_rng(0).normal(3.0, 2.0, size=(4, 5)))).data
    np.testing.assert_allclose(y.mean(-1), 0, atol=1e-12, err_msg="row means after LayerNorm")
    np.testing.assert_allclose(
        y.var(-1), 1, atol=1e-4, err_msg="row (biased) variances: 1 − ε/(σ²+ε)"
    )


def test_layer_norm_without_bias_has_no_bias_parameter_and_no_shift():
    ln = nn.LayerNorm(4, bias=False)
    assert ln.bias is None, f"expected bias None, got {ln.bias}"
    assert [n for n, _ in ln.named_parameters()] == ["weight"]
    ln.weight.data = np.array([1.0, 2.0, 3.0, 4.0])
    x = np.random.default_rng(0).normal(size=(3, 4))
    np.testing.assert_allclose(ln(mt.Tensor(x)).data, _np_layer_norm(x, ln.weight.data, 0.0),
                               rtol=1e-10, err_msg="LayerNorm(bias=False) vs x̂·w")


def test_dropout_is_the_identity_in_eval_mode():
    drop = nn.Dropout(0.5).eval()
    x = mt.Tensor(np.random.default_rng(0).normal(size=(10, 10)).astype(np.float32))
    assert np.array_equal(drop(x).data, x.data), "Dropout in eval mode must return x unchanged"


def test_dropout_in_training_zeroes_about_p_and_scales_the_rest_by_one_over_one_minus_p():
    p = 0.25
    x = mt.Tensor(np.ones((200, 200), dtype=np.float32), requires_grad=True)
    mt.manual_seed(3)
    y = nn.Dropout(p)(x)
    zero_fraction = np.mean(y.data == 0)
    # 40,000 Bernoulli(0.25) draws: std of the fraction ≈ 0.0022, so ±0.01 is > 4 std
    assert abs(zero_fraction - p) < 0.01, (
        f"expected ≈{p} of the entries zeroed, got {zero_fraction:.4f}"
    )
    kept = y.data[y.data != 0]
    assert np.allclose(kept, 1 / (1 - p)), (
        f"kept entries should be 1/(1−p) = {1 / (1 - p)}, got {np.unique(kept)}"
    )
    y.backward(np.ones_like(y.data))
    assert np.array_equal(x.grad, y.data), "dL/dx uses the same mask and scale as the forward pass"


def test_dropout_mask_repeats_under_the_same_seed():
    x = mt.Tensor(np.ones((8, 8), dtype=np.float32))
    mt.manual_seed(5)
    first = nn.Dropout(0.5)(x).data
    mt.manual_seed(5)
    second = nn.Dropout(0.5)(x).data
    assert np.array_equal(first, second), "manual_seed(5) twice should give the same dropout mask"


def test_dropout_rejects_p_outside_zero_to_one():
    for p in (-0.1, 1.01, "0.1", None):
        with pytest.raises(ValueError):
            nn.Dropout(p)


def test_relu_module_is_max_of_x_and_zero():
    x = np.array([-2.0, -0.5, 0.0, 0.5, 3.0])
    got = nn.ReLU()(mt.Tensor(x)).data
    assert np.array_equal(got, [0.0, 0.0, 0.0, 0.5, 3.0]), f"expected [0, 0, 0, 0.5, 3], got {got}"


def test_gelu_module_is_x_times_normal_cdf():
    xs = [-3.0, -1.0, -0.1, 0.0, 0.5, 2.0]
    expected = [x * 0.5 * (1 + math.erf(x / math.sqrt(2))) for x in xs]
    got = nn.GELU()(mt.Tensor(np.array(xs))).data
    np.testing.assert_allclose(got, expected, atol=1e-7, err_msg="GELU(x) vs x·Φ(x) with math.erf")
    assert abs(expected[4] - 0.3457) < 1e-4, "GELU(0.5) ≈ 0.3457 (sanity of the reference)"


def test_gelu_tanh_module_is_gpt2_formula():
    xs = np.array([-3.0, -1.0, 0.0, 0.5, 2.0])
    expected = 0.5 * xs * (1 + np.tanh(math.sqrt(2 / math.pi) * (xs + 0.044715 * xs ** 3)))
    got = nn.GELU(approximate="tanh")(mt.Tensor(xs)).data
    np.testing.assert_allclose(
        got, expected, rtol=1e-12, err_msg="GELU(tanh) vs ½x(1 + tanh(√(2/π)(x + 0.044715x³)))"
    )
