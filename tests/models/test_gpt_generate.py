"""GPT.generate: KV-cache decoding matches recomputation, and sampling is seeded.

The window also slides past block_size.
"""
import numpy as np
import pytest

import microtensor
import nn
from microtensor import Tensor
from models import GPT, GPTConfig
from models.gpt import sample_next


def make_model(block_size=8, seed=0, **overrides):
    microtensor.manual_seed(seed)
    kwargs = dict(vocab_size=13, block_size=block_size, n_layer=2, n_head=2, n_embd=16)
    kwargs.update(overrides)
    return GPT(GPTConfig(**kwargs)).eval()


def prompt(batch, length, seed=0):
    return np.random.default_rng(seed).integers(0, 13, size=(batch, length)).astype(np.int64)


def test_cached_logits_match_full_forward():
    model = make_model()
    idx = prompt(2, 8)
    with microtensor.no_grad():
        full = model(idx)[0].data                           # [2, 8, V]
        caches = [nn.KVCache() for _ in model.blocks]
        steps = [model(idx[:, :3], kv_caches=caches)[0].data]   # prefill 3 positions
        for t in range(3, 8):
            steps.append(model(idx[:, t:t + 1], kv_caches=caches)[0].data)
    np.testing.assert_allclose(np.concatenate(steps, axis=1), full, atol=1e-5)


@pytest.mark.parametrize("norm_first", [True, False])
def test_last_only_gives_the_last_row_of_the_full_logits_with_less_work(norm_first):
    model = make_model(norm_first=norm_first)
    idx = prompt(2, 8)
    with microtensor.no_grad():
        full = model(idx)[0].data                           # [2, 8, V]
        with microtensor.profile() as prof:
            last = model(idx, last_only=True)[0].data       # [2, 1, V]
        caches = [nn.KVCache() for _ in model.blocks]
        prefill = model(idx[:, :5], kv_caches=caches, last_only=True)[0].data
        step = model(idx[:, 5:6], kv_caches=caches)[0].data     # the cache holds all 5
    assert last.shape == (2, 1, 13), f"expected logits (2, 1, 13), got {last.shape}"
    np.testing.assert_allclose(last, full[:, -1:], atol=1e-5)
    np.testing.assert_allclose(prefill, model(idx[:, :5])[0].data[:, -1:], atol=1e-5)
    np.testing.assert_allclose(step, full[:, 5:6], atol=1e-5)
    with microtensor.profile() as full_prof:
        model(idx)
    assert prof.flops() < 0.8 * full_prof.flops(), (
        f"last-position FLOPs: expected < 0.8 x {full_prof.flops()}, got {prof.flops()}")


def test_last_only_refuses_a_cache_that_already_holds_positions():
    model = make_model()
    caches = [nn.KVCache() for _ in model.blocks]
    with microtensor.no_grad():
        model(prompt(1, 3), kv_caches=caches)
        with pytest.raises(ValueError, match="empty"):
            model(prompt(1, 2), kv_caches=caches, last_only=True)


@pytest.mark.parametrize("norm_first", [True, False])
def test_greedy_same_with_and_without_cache(norm_first):
    model = make_model(norm_first=norm_first)
    idx = prompt(3, 3)
    with_cache = model.generate(idx, 4, top_k=1, use_cache=True)      # stays inside block_size
    without = model.generate(idx, 4, top_k=1, use_cache=False)
    np.testing.assert_array_equal(with_cache, without)
    long_cache = model.generate(idx, 20, top_k=1, use_cache=True)     # slides past block_size 8
    long_plain = model.generate(idx, 20, top_k=1, use_cache=False)
    np.testing.assert_array_equal(long_cache, long_plain)
    np.testing.assert_array_equal(long_cache[:, :7], with_cache)


def test_output_shape_type_and_prompt_kept():
    model = make_model()
    idx = prompt(2, 5)
    out = model.generate(idx, 6)
    assert out.shape == (2, 11) and out.dtype == np.int64
    np.testing.assert_array_equal(out[:, :5], idx)
    assert ((0 <= out) & (out < 13)).all()
    assert isinstance(model.generate(Tensor(idx), 2), Tensor)
    assert model.generate(idx, 0).shape == (2, 5)


def test_prompt_longer_than_block_size():
    model = make_model()
    idx = prompt(1, 12)
    a = model.generate(idx, 3, top_k=1, use_cache=True)
    b = model.generate(idx, 3, top_k=1, use_cache=False)
    assert a.shape == (1, 15)
    np.testing.assert_array_equal(a, b)


def test_sampling_is_repeatable_under_manual_seed():
    model = make_model()
    idx = prompt(2, 3)
    microtensor.manual_seed(5)
    a = model.generate(idx, 10, temperature=1.5)
    microtensor.manual_seed(5)
    b = model.generate(idx, 10, temperature=1.5)
    np.testing.assert_array_equal(a, b)


def test_generate_records_no_graph():
    model = make_model()
    model.generate(prompt(1, 3), 3)
    assert all(p.grad is None for p in model.parameters())
    assert microtensor.is_grad_enabled()


@pytest.mark.parametrize("kwargs", [dict(temperature=0.0), dict(top_k=0)])
def test_bad_sampling_arguments(kwargs):
    with pytest.raises(ValueError):
        make_model().generate(prompt(1, 3), 2, **kwargs)


def test_empty_prompt_rejected():
    with pytest.raises(ValueError, match="T >= 1"):
        make_model().generate(np.zeros((1, 0), dtype=np.int64), 2)


def test_sample_next_follows_the_softmax():
    microtensor.manual_seed(0)
    p = np.array([0.1, 0.6, 0.0, 0.3])
    logits = np.tile(np.log(p + 1e-30), (20000, 1))
    counts = np.bincount(sample_next(logits), minlength=4) / 20000
    np.testing.assert_allclose(counts, p, atol=0.015)
    top2 = np.bincount(sample_next(logits, top_k=2), minlength=4) / 20000
    np.testing.assert_allclose(top2, [0, 2 / 3, 0, 1 / 3], atol=0.015)
    assert (sample_next(logits[:3], top_k=1) == 1).all()


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_sample_next_refuses_nan_or_inf_logits_instead_of_returning_token_0(bad):
    logits = np.array([[0.0, 1.0, 2.0], [bad, 1.0, 2.0]], np.float32)
    for top_k in (None, 2, 1):
        with pytest.raises(ValueError, match="row 1 are not finite") as error:
            ids = sample_next(logits, top_k=top_k)
            pytest.fail(f"top_k={top_k}: expected a ValueError for a {bad} logit, got ids {ids}")
        assert "token 0" in str(error.value), f"the message should name the token: {error.value}"
    blocked = np.array([[-np.inf, -np.inf, -np.inf]], np.float32)
    with pytest.raises(ValueError, match="not finite"):
        sample_next(blocked)
    assert sample_next(np.array([[-np.inf, 0.0, -np.inf]], np.float32))[0] == 1, \
        "a −inf logit only blocks its token: expected the one finite token, 1"


def test_generate_of_a_model_with_nan_weights_raises():
    microtensor.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=7, block_size=4, n_layer=1, n_head=1, n_embd=4)).eval()
    for p in model.parameters():
        p.data[...] = np.nan
    with pytest.raises(ValueError, match="not finite"):
        out = model.generate(np.array([[1]]), 3)
        pytest.fail(f"expected a ValueError for NaN weights, got {out.tolist()}")
