"""GPT forward pass: shapes, errors, weight tying, GPT-2 initialisation, parameter count."""
import math

import numpy as np
import pytest

import microtensor
from models import GPT, GPTConfig


def small_config(**overrides):
    kwargs = dict(vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=16)
    kwargs.update(overrides)
    return GPTConfig(**kwargs)


def random_ids(shape, vocab=11, seed=0):
    return np.random.default_rng(seed).integers(0, vocab, size=shape).astype(np.int64)


def test_shapes_and_loss():
    microtensor.manual_seed(0)
    model = GPT(small_config())
    idx = random_ids((3, 8))
    logits, loss = model(idx)
    assert logits.shape == (3, 8, 11) and logits.dtype == np.float32
    assert loss is None
    logits, loss = model(idx[:, :5], random_ids((3, 5), seed=1))
    assert logits.shape == (3, 5, 11)
    assert loss.shape == () and abs(loss.item() - math.log(11)) < 0.5  # near uniform at init


def test_too_long_input_names_both_lengths():
    model = GPT(small_config())
    with pytest.raises(ValueError, match=r"9.*block_size 8"):
        model(random_ids((1, 9)))


@pytest.mark.parametrize("bad", [dict(n_embd=15), dict(n_layer=0), dict(dropout=1.0),
                                 dict(activation="tanh")])
def test_invalid_config(bad):
    with pytest.raises(ValueError):
        small_config(**bad)


def test_variants_run():
    for kwargs in (dict(bias=False), dict(norm_first=False), dict(activation="relu"),
                   dict(dropout=0.1)):
        logits, loss = GPT(small_config(**kwargs))(random_ids((2, 8)), random_ids((2, 8), seed=1))
        assert logits.shape == (2, 8, 11) and np.isfinite(loss.item())


def test_dropout_only_in_training_mode():
    microtensor.manual_seed(0)
    model = GPT(small_config(dropout=0.5))
    idx = random_ids((2, 8))
    assert not np.array_equal(model(idx)[0].data, model(idx)[0].data)
    model.eval()
    assert np.array_equal(model(idx)[0].data, model(idx)[0].data)


def test_lm_head_is_tied_to_token_embedding():
    model = GPT(small_config())
    names = [name for name, _ in model.named_parameters()]
    assert sum(p is model.wte.weight for p in model.parameters()) == 1
    assert not any("lm_head" in n for n in names)


def test_tied_weight_gradient_sums_both_uses():
    """Finite differences (float64) on wte entries: a token in the input is used twice
    (embedding lookup and output scores); one absent from the input only by the head."""
    microtensor.manual_seed(0)
    model = GPT(small_config())
    for p in model.parameters():
        p.data = p.data.astype(np.float64)
    idx, targets = random_ids((2, 8), vocab=5), random_ids((2, 8), vocab=11, seed=3)
    _, loss = model(idx, targets)
    loss.backward()
    grad = model.wte.weight.grad
    w = model.wte.weight.data
    eps = 1e-6
    for token in (int(idx[0, 0]), 9):                      # used twice, used by the head only
        for j in (0, 7):
            old = w[token, j]
            w[token, j] = old + eps
            up = model(idx, targets)[1].item()
            w[token, j] = old - eps
            down = model(idx, targets)[1].item()
            w[token, j] = old
            assert abs((up - down) / (2 * eps) - grad[token, j]) < 1e-6


def test_gpt2_initialisation():
    microtensor.manual_seed(0)
    n_layer = 4
    model = GPT(GPTConfig(vocab_size=256, block_size=64, n_layer=n_layer, n_head=4, n_embd=128))
    params = dict(model.named_parameters())
    assert abs(params["wte.weight"].data.std() - 0.02) < 1e-3
    assert abs(params["blocks.0.attn.q_proj.weight"].data.std() - 0.02) < 1e-3
    assert abs(params["blocks.0.mlp.fc.weight"].data.std() - 0.02) < 1e-3
    residual_std = 0.02 / math.sqrt(2 * n_layer)
    for name in ("blocks.1.attn.out_proj.weight", "blocks.1.mlp.proj.weight"):
        assert abs(params[name].data.std() - residual_std) < 5e-4
    assert not params["blocks.0.attn.q_proj.bias"].data.any()
    assert (params["ln_f.weight"].data == 1).all() and not params["ln_f.bias"].data.any()


def test_num_parameters():
    V, T, L, D = 11, 8, 2, 16
    model = GPT(small_config(bias=False))
    expected = V * D + T * D + L * (12 * D * D + 2 * D) + D  # no biases: LayerNorms have D each
    assert model.num_parameters() == expected
    assert model.num_parameters(non_embedding=True) == expected - T * D
