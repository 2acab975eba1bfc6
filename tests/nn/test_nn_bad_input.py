"""nn under odd input: layer sizes, load_state_dict values, optimizer arguments, clipping.

Each error names the argument, the value and what was expected, instead of a numpy cast or
a ZeroDivisionError far from the cause.
"""
import re

import numpy as np
import pytest

import nn
from microtensor import Tensor


@pytest.mark.parametrize("make, message", [
    (lambda: nn.Linear(0, 2), "Linear: in_features must be a positive int; got 0"),
    (lambda: nn.Linear(-1, 2), "Linear: in_features must be a positive int; got -1"),
    (lambda: nn.Linear(2.5, 2), "Linear: in_features must be a positive int; got 2.5"),
    (lambda: nn.Linear(2, True), "Linear: out_features must be a positive int; got True"),
    (lambda: nn.Embedding(4, 0), "Embedding: embedding_dim must be a positive int; got 0"),
])
def test_layer_sizes_must_be_positive_ints(make, message):
    with pytest.raises(ValueError, match=message):
        make()


@pytest.mark.parametrize("value, dtype", [
    (np.ones((2, 3), np.complex64), "complex64"), (np.full((2, 3), "a"), "<U1"),
    (np.full((2, 3), None), "object")])
def test_load_state_dict_refuses_values_that_are_not_real_numbers(value, dtype):
    layer = nn.Linear(2, 3)
    before = layer.weight.data.copy()
    with pytest.raises(TypeError, match=f"'weight' has dtype {dtype}; expected real numbers"):
        layer.load_state_dict({"weight": value, "bias": np.zeros(3, np.float32)})
    assert np.array_equal(layer.weight.data, before), "expected the weight unchanged"


def test_load_state_dict_refuses_a_list():
    with pytest.raises(TypeError, match="expected a dict of name -> array; got list"):
        nn.Linear(2, 3).load_state_dict([1, 2])


def test_load_state_dict_casts_float64_to_the_parameter_dtype():
    layer = nn.Linear(2, 3)
    layer.load_state_dict({"weight": np.ones((2, 3)), "bias": np.zeros(3)})
    assert layer.weight.dtype == np.float32 and layer.weight.data.sum() == 6


def param():
    return nn.Parameter(np.ones(2, np.float32))


@pytest.mark.parametrize("make, error, message", [
    (lambda: nn.optim.SGD([param()], lr=float("nan")), ValueError, "lr must be a finite number"),
    (lambda: nn.optim.AdamW([param()], lr=float("nan")), ValueError, "lr must be a finite"),
    (lambda: nn.optim.AdamW([param()], weight_decay=float("inf")), ValueError,
     "weight_decay must be a finite number; got inf"),
    (lambda: nn.optim.SGD(param(), lr=0.1), TypeError, "got a single Tensor"),
    (lambda: nn.optim.SGD([Tensor([1, 2])], lr=0.1), TypeError, "of dtype int64"),
    (lambda: nn.optim.SGD([np.ones(2)], lr=0.1), TypeError, "got ndarray"),
    (lambda: nn.optim.SGD([{"lr": 0.1}], lr=0.1), ValueError, "needs a 'params' entry"),
    (lambda: nn.optim.SGD([param()], lr="x"), TypeError, "SGD: lr must be a real number; got 'x'"),
    (lambda: nn.optim.AdamW([param()], lr="x"), TypeError,
     "AdamW: lr must be a real number; got 'x'"),
    (lambda: nn.optim.AdamW([param()], betas=(0.9, None)), TypeError,
     "AdamW: beta2 must be a real number; got None"),
    (lambda: nn.optim.AdamW([param()], betas=0.9), TypeError,
     r"AdamW: betas must be a pair \(beta1, beta2\); got 0.9"),
])
def test_optimizers_refuse_odd_arguments(make, error, message):
    with pytest.raises(error, match=message):
        make()


def test_a_parameter_given_twice_is_refused_instead_of_updated_twice():
    p = param()
    with pytest.raises(ValueError, match=r"AdamW: a parameter of shape \(2,\) appears twice"):
        nn.optim.AdamW([{"params": [p]}, {"params": [p], "weight_decay": 0.0}])


@pytest.mark.parametrize("max_norm", [float("nan"), -1.0, "1"])
def test_clip_grad_norm_refuses_a_max_norm_that_is_not_a_number_at_least_0(max_norm):
    p = param()
    p.grad = np.ones(2, np.float32)
    with pytest.raises(ValueError, match=f"max_norm must be a number >= 0.*got {max_norm!r}"):
        nn.utils.clip_grad_norm_([p], max_norm)
    assert np.array_equal(p.grad, [1, 1]), f"expected the gradient untouched; got {p.grad}"


def test_clip_grad_norm_with_an_infinite_max_norm_only_measures_as_torch():
    p = param()
    p.grad = np.full(2, 3.0, np.float32)
    total = nn.utils.clip_grad_norm_([p], float("inf"))
    assert abs(total - 18 ** 0.5) < 1e-5 and np.array_equal(p.grad, [3, 3]), (total, p.grad)


@pytest.mark.parametrize("dropout", [1.5, 1.0, -0.1, float("nan"), "0.1"])
def test_multihead_attention_dropout_must_be_in_0_1_as_dropout_p(dropout):
    with pytest.raises(ValueError, match=rf"dropout must be a number in \[0, 1\); "
                                         rf"got {re.escape(repr(dropout))}"):
        nn.MultiHeadAttention(8, 2, dropout=dropout)


def test_an_integer_attn_mask_is_refused_not_added_to_the_scores():
    # PyTorch refuses it too: 0/1 integers added to the scores would block nothing
    q = Tensor(np.ones((1, 2, 4)))
    mask = np.triu(np.ones((2, 2), dtype=np.int64), k=1)
    with pytest.raises(TypeError, match="attn_mask must be boolean .* or floating .*; "
                                        "got dtype int64"):
        nn.scaled_dot_product_attention(q, q, q, attn_mask=mask)
    with pytest.raises(TypeError, match="got dtype int64"):
        nn.MultiHeadAttention(4, 2)(q, attn_mask=mask)
    blocked, _ = nn.scaled_dot_product_attention(q, q, q, attn_mask=mask.astype(bool))
    added, _ = nn.scaled_dot_product_attention(q, q, q, attn_mask=np.where(mask, -np.inf, 0.0))
    np.testing.assert_allclose(blocked.data, added.data, err_msg="bool and float masks differ")
