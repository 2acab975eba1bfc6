"""Each sampling argument at its edge (issue 25 #10): a subnormal, huge or zero temperature and
top_k at 0, 1, V and beyond V, through `GPT.generate`, `sample_next` and `microtensor sample`.

The rule for temperature: a finite number >= float32's smallest normal (1.18e-38), so that
float32 logits / temperature stay finite in float64; a subnormal such as 1e-310 overflowed them
to inf, softmax to NaN, and every step sampled token 0.
"""
import numpy as np
import pytest

import microtensor
from models.gpt import GPT, TEMPERATURE_MIN, GPTConfig, sample_next


def tiny_gpt():
    microtensor.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=7, block_size=8, n_layer=1, n_head=2, n_embd=8))
    model.eval()
    return model


@pytest.mark.parametrize("temperature", [1e-310, 5e-324, 1e-39, 0.0, -0.0, -1.0,
                                         float("inf"), float("nan")])
def test_generate_refuses_a_temperature_below_float32_tiny_or_not_finite(temperature):
    with pytest.raises(ValueError, match=r"temperature must be a finite number >= 1\.175e-38"):
        tiny_gpt().generate(np.zeros((1, 1), dtype=np.int64), 3, temperature=temperature)


def test_the_smallest_allowed_temperature_samples_the_argmax_not_token_0():
    """At temperature = TEMPERATURE_MIN softmax is one-hot on the largest logit (as greedy)."""
    logits = np.array([[-3.0, 1.0, 9.5, 2.0], [40.0, -1.0, 0.0, 41.0]], dtype=np.float32)
    microtensor.manual_seed(1)
    for _ in range(20):
        got = sample_next(logits, temperature=TEMPERATURE_MIN)
        assert got.tolist() == [2, 3], f"expected the argmax [2, 3], got {got.tolist()}"


def test_a_subnormal_temperature_did_sample_token_0_which_is_why_it_is_refused():
    """The failure the rule prevents: logits / 1e-310 overflow, softmax is NaN, token 0 wins."""
    logits = np.array([[-3.0, 1.0, 9.5, 2.0]], dtype=np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        z = logits.astype(np.float64) / 1e-310
        p = np.exp(z - z.max(axis=-1, keepdims=True))
    assert np.isnan(p).any(), f"expected NaN probabilities at 1e-310, got {p}"


def test_a_huge_temperature_samples_uniformly():
    """logits / 1e300 are ~0: every token about 1/V (chi-square bound, 4 tokens, 8000 draws)."""
    logits = np.tile(np.array([[-3.0, 1.0, 9.5, 2.0]], dtype=np.float32), (8000, 1))
    microtensor.manual_seed(2)
    counts = np.bincount(sample_next(logits, temperature=1e300), minlength=4)
    chi2 = ((counts - 2000.0) ** 2 / 2000.0).sum()
    assert chi2 < 16.3, f"expected ~2000 of each token (chi2 < 16.3, p=0.001), got {counts}"


def test_top_k_1_is_greedy_and_top_k_at_or_beyond_v_keeps_every_token():
    logits = np.tile(np.array([[0.0, 0.1, 0.2, 0.3]], dtype=np.float32), (4000, 1))
    assert sample_next(logits[:2], top_k=1).tolist() == [3, 3]
    for top_k in (4, 5, 10**9):
        microtensor.manual_seed(3)
        seen = set(sample_next(logits, top_k=top_k).tolist())
        assert seen == {0, 1, 2, 3}, f"top_k={top_k}: expected all 4 tokens drawn, got {seen}"
    microtensor.manual_seed(3)
    seen = set(sample_next(logits, top_k=2).tolist())
    assert seen == {2, 3}, f"top_k=2: expected only the two largest {{2, 3}}, got {seen}"


@pytest.mark.parametrize("top_k", [0, -1, 2.0, True, "3"])
def test_generate_refuses_top_k_not_an_int_at_least_1(top_k):
    with pytest.raises(ValueError, match="top_k must be an int >= 1"):
        tiny_gpt().generate(np.zeros((1, 1), dtype=np.int64), 2, top_k=top_k)


def test_microtensor_sample_refuses_a_subnormal_temperature_in_one_line(tmp_path, capsys):
    from models.cli.main import main
    corpus = tmp_path / "c.txt"
    corpus.write_text("abcabcabd\n" * 30, encoding="utf-8")
    out = tmp_path / "out"
    assert main(["train", "--data", str(corpus), "--out", str(out), "--max-iters", "1",
                 "--eval-interval", "1", "--eval-iters", "1", "--batch-size", "2",
                 "--block-size", "8", "--n-layer", "1", "--n-head", "1", "--n-embd", "8",
                 "--quiet"]) == 0
    capsys.readouterr()
    assert main(["sample", "--out", str(out), "--temperature", "1e-310",
                 "--num-chars", "5"]) != 0
    err = capsys.readouterr().err.strip()
    assert "temperature" in err and "1e-310" in err and len(err.splitlines()) == 1, \
        f"expected one line naming temperature and 1e-310, got {err!r}"
