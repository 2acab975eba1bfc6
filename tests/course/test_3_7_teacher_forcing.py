"""Notes 3.7: why training runs in parallel and generation runs step by step.

Teacher forcing: for the training sequence [A, B, C, D] the input is [A, B, C] and the
labels are [B, C, D]; one causal forward gives all three predictions, each the same as
a separate forward over its prefix. Generation does not know the next token, so it
samples one token per forward. A KV cache reuses the keys and values of the past (it
knows nothing of the future) and gives the same logits as recomputing everything; the
prompt is known, so its prefill is one forward.
"""
import numpy as np
from mt_testing import check_close, np_softmax, to_float64

import microtensor as mt
import models
import nn

A, B, C, D = 3, 1, 4, 5


def _gpt(**overrides):
    kwargs = dict(vocab_size=7, block_size=12, n_layer=2, n_head=2, n_embd=16)
    kwargs.update(overrides)
    return to_float64(models.GPT(models.GPTConfig(**kwargs))).eval()


def test_one_causal_forward_equals_separate_forwards_over_each_prefix():
    gpt = _gpt()
    logits, _ = gpt(np.array([[A, B, C]]))
    for t, prefix in enumerate(([A], [A, B], [A, B, C])):
        alone, _ = gpt(np.array([prefix]))
        check_close(
            logits.data[0, t],
            alone.data[0, -1],
            f"position {t} of one forward over [A, B, C] vs a forward over {len(prefix)} tokens",
            atol=1e-10,
        )


def test_position_1_sees_a_and_b_but_not_c():
    gpt = _gpt()
    logits, _ = gpt(np.array([[A, B, C]]))
    other, _ = gpt(np.array([[A, B, D]]))
    check_close(
        other.data[0, :2], logits.data[0, :2], "positions 0, 1 after changing C", atol=1e-12
    )
    assert np.abs(other.data[0, 2] - logits.data[0, 2]).max() > 1e-4, \
        "position 2 reads its own token: changing C should change its logits"


def test_one_forward_trains_all_next_token_predictions_with_true_history():
    gpt = _gpt()
    inputs, labels = (
        np.array([[A, B, C]]),
        np.array([[B, C, D]]),
    )  # the labels: inputs shifted by one
    _, loss = gpt(inputs, labels)
    per_position = []
    for t in range(3):  # each prefix alone, with its true history
        logits, _ = gpt(inputs[:, :t + 1])
        per_position.append(-np.log(np_softmax(logits.data[0, -1])[labels[0, t]]))
    check_close(loss.item(), np.mean(per_position),
                "loss of one forward vs the mean of three prefix losses", atol=1e-10)


def test_generation_is_sequential_one_forward_per_new_token():
    gpt = _gpt()
    prompt, steps = np.array([[A, B]]), 4
    with mt.profile() as prof:
        out = gpt.generate(prompt, steps, top_k=1, use_cache=False)
    lengths = [r.out_shape[1] for r in prof.records if r.op == "embedding" and r.module == "wte"]
    assert lengths == [2, 3, 4, 5], \
        f"without a cache each step reads the whole context: expected [2, 3, 4, 5], got {lengths}"
    idx = prompt
    for _ in range(steps):  # the loop by hand: argmax, append, repeat
        logits, _ = gpt(idx)
        idx = np.concatenate([idx, logits.data[:, -1].argmax(axis=-1)[:, None]], axis=1)
    assert out.tolist() == idx.tolist(), (
        f"greedy generate vs the loop by hand: expected {idx}, got {out}"
    )


def test_kv_cache_decoding_gives_the_logits_of_full_recomputation():
    gpt = _gpt()
    idx = np.random.default_rng(0).integers(0, 7, size=(2, 9))
    full, _ = gpt(idx)
    caches = [nn.KVCache() for _ in gpt.blocks]
    steps = [gpt(idx[:, :4], kv_caches=caches)[0].data]       # prefill 4 known tokens
    sizes = [len(c) for c in caches]
    assert sizes == [4, 4], f"cache after prefill: expected 4 positions per block, got {sizes}"
    for t in range(4, 9):
        steps.append(gpt(idx[:, t:t + 1], kv_caches=caches)[0].data)
        assert len(caches[0]) == t + 1, \
            f"the cache grows one position per step: expected {t + 1}, got {len(caches[0])}"
    check_close(
        np.concatenate(steps, axis=1), full, "cached decoding vs one full forward", atol=1e-10
    )


def test_generate_with_and_without_cache_picks_the_same_tokens():
    gpt = _gpt()
    prompt = np.array([[A, B, C], [D, C, B]])
    greedy = [gpt.generate(prompt, 5, top_k=1, use_cache=c).tolist() for c in (True, False)]
    assert greedy[0] == greedy[1], f"greedy: with cache {greedy[0]}, without {greedy[1]}"
    sampled = []
    for use_cache in (True, False):
        mt.manual_seed(7)
        sampled.append(gpt.generate(prompt, 5, temperature=1.0, use_cache=use_cache).tolist())
    assert sampled[0] == sampled[1], (
        f"sampling with one seed: with cache {sampled[0]}, without {sampled[1]}"
    )


def test_prompt_prefill_is_one_forward_and_each_decode_step_reads_one_token():
    gpt = _gpt()
    prompt = np.array([[A, B, C, D, A]])
    with mt.profile() as prof:
        gpt.generate(prompt, 3, top_k=1, use_cache=True)
    lengths = [r.out_shape[1] for r in prof.records if r.op == "embedding" and r.module == "wte"]
    assert lengths == [5, 1, 1], (
        f"token positions embedded per forward: expected [5, 1, 1], got {lengths}"
    )


def test_a_cached_decode_step_costs_less_than_recomputing_the_context():
    gpt = _gpt()
    idx = np.random.default_rng(1).integers(0, 7, size=(1, 10))
    caches = [nn.KVCache() for _ in gpt.blocks]
    with mt.no_grad():
        gpt(idx[:, :9], kv_caches=caches)
        with mt.profile() as cached:
            gpt(idx[:, 9:], kv_caches=caches)
        with mt.profile() as full:
            gpt(idx)
    assert cached.flops(op="matmul") * 5 < full.flops(op="matmul"), (
        f"matmul FLOPs of one cached step vs a full forward over 10 tokens: expected < 1/5, "
        f"got {cached.flops(op='matmul'):,} vs {full.flops(op='matmul'):,}")
