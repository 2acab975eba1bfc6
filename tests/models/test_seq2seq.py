"""models.Seq2SeqTransformer: teacher-forced forward, padding, cached greedy decoding, a tiny copy
task learned."""
import numpy as np
import pytest

import microtensor as mt
import nn
from models.seq2seq import Seq2SeqConfig, Seq2SeqTransformer, sinusoidal_positions


def _model(seed=0, **overrides):
    mt.manual_seed(seed)
    settings = {"src_vocab_size": 11, "tgt_vocab_size": 9, "max_len": 12, "d_model": 16,
                "n_heads": 2, "n_encoder_layers": 2, "n_decoder_layers": 2, "d_ff": 32}
    return Seq2SeqTransformer(Seq2SeqConfig(**{**settings, **overrides})).eval()


SRC = np.array([[3, 4, 5, 6, 7], [8, 9, 10, 0, 0]])        # the second row padded (pad_id 0)
TGT_IN = np.array([[1, 3, 4, 5], [1, 6, 0, 0]])            # bos_id 1, then the target
TARGETS = np.array([[3, 4, 5, 2], [6, 2, 0, 0]])           # the target, then eos_id 2


def test_forward_gives_logits_b_t_tgt_v_and_a_scalar_loss():
    logits, loss = _model()(SRC, TGT_IN, TARGETS)
    assert logits.shape == (2, 4, 9), f"expected [B, T_tgt, V] = (2, 4, 9), got {logits.shape}"
    assert loss.shape == () and np.isfinite(loss.item()), f"loss: got {loss.shape} {loss.item()}"


def test_loss_leaves_out_padded_targets():
    model = _model()
    _, both = model(SRC, TGT_IN, TARGETS)
    _, first = model(SRC[:1], TGT_IN[:1], TARGETS[:1])
    _, second = model(SRC[1:, :3], TGT_IN[1:, :2], TARGETS[1:, :2])
    expected = (4 * first.item() + 2 * second.item()) / 6   # mean over the 6 real targets
    assert abs(both.item() - expected) < 1e-5, f"expected {expected}, got {both.item()}"


def test_padding_the_source_further_changes_no_logit():
    model = _model()
    short, _ = model(SRC[1:, :3], TGT_IN[1:])
    padded, _ = model(np.pad(SRC[1:], ((0, 0), (0, 4))), TGT_IN[1:])   # 7 pads instead of 0
    np.testing.assert_allclose(padded.data, short.data, atol=1e-5,
                               err_msg="logits depend on the amount of source padding")


def test_sinusoidal_positions_follow_the_paper_formula():
    pe = sinusoidal_positions(50, 8)
    pos, i = 7, 1                                           # columns 2i = 2 and 2i + 1 = 3
    angle = pos / 10000 ** (2 * i / 8)
    assert np.allclose(pe[pos, 2], np.sin(angle)) and np.allclose(pe[pos, 3], np.cos(angle)), (
        f"PE[7, 2:4]: expected {np.sin(angle), np.cos(angle)}, got {pe[pos, 2:4]}")


def test_embeddings_are_scaled_by_sqrt_d_model_before_the_positions_are_added():
    model = _model()
    x = model._embed(model.src_embed, SRC[:1])
    expected = model.src_embed.weight.data[SRC[0]] * 4.0 + sinusoidal_positions(12, 16)[:5]
    np.testing.assert_allclose(x.data[0], expected, rtol=1e-6, err_msg="E·√16 + PE")


def test_tied_output_projection_is_the_target_embedding_and_untied_has_its_own():
    tied, untied = _model(), _model(tie_output=False)
    assert not hasattr(tied, "out_proj") and untied.out_proj.weight.shape == (16, 9), (
        "tie_output=True reuses tgt_embed; False adds out_proj [D, V]")
    assert untied.num_parameters() == tied.num_parameters() + 16 * 9 + 9


def _trained_like(seed=0, **overrides):
    """A model far from its init, so that its logits differ from token to token."""
    model = _model(seed, **overrides)
    rng = np.random.default_rng(seed)
    for p in model.parameters():
        p.data = p.data + rng.normal(size=p.shape).astype(np.float32)
    return model


@pytest.fixture(scope="module")
def copier():
    """A 1 + 1-layer model trained for 150 steps to copy 4 digits (ids 3..12): about a second."""
    mt.manual_seed(0)
    model = Seq2SeqTransformer(Seq2SeqConfig(13, 13, 8, 32, 2, 1, 1, 64))
    optimizer = nn.optim.AdamW(model.parameters(), lr=1e-2, betas=(0.9, 0.98), weight_decay=0.0)
    rng = np.random.default_rng(0)
    for it in range(150):
        for group in optimizer.param_groups:   # 20 steps of warmup (post-norm needs it),
            # then a lower rate for the last 45 steps to settle
            group["lr"] = 1e-2 * min(1.0, (it + 1) / 20) * (1.0 if it < 105 else 0.3)
        _, loss = model(*_copy_batch(rng, 32))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model.eval()


def _copy_batch(rng, n):
    src = rng.integers(3, 13, size=(n, 4))                  # [n, 4]
    bos = np.ones((n, 1), dtype=np.int64)
    return src, np.concatenate([bos, src], 1), np.concatenate([src, 2 * bos], 1)  # [n, 5]


def test_a_tiny_model_learns_to_copy_digit_strings(copier):
    src, _, targets = _copy_batch(np.random.default_rng(1), 50)
    out = copier.generate(src, 5)                           # [50, 5]: 4 digits and eos
    accuracy = np.mean(np.all(out == targets, axis=1))
    assert accuracy >= 0.9, f"copying 4 digits: expected >= 90% exact, got {accuracy:.0%}"


def test_cached_and_uncached_greedy_decoding_give_the_same_tokens(copier):
    src = np.random.default_rng(2).integers(3, 13, size=(20, 4))
    cached = copier.generate(src, 6, use_cache=True)
    uncached = copier.generate(src, 6, use_cache=False)
    np.testing.assert_array_equal(cached, uncached, err_msg="KV-cached vs recomputed decoding")


@pytest.mark.parametrize("norm_first", [False, True])
def test_cached_decoding_steps_give_the_logits_of_the_full_teacher_forced_forward(norm_first):
    model = _trained_like(norm_first=norm_first)
    full, _ = model(SRC, TGT_IN)                            # [B, 4, V]
    pad = SRC == 0
    memory = model.encode(SRC)
    caches = [(nn.KVCache(), nn.KVCache()) for _ in model.decoder]
    steps = [model.decode(TGT_IN[:, t:t + 1], memory, pad, caches=caches).data
             for t in range(4)]
    np.testing.assert_allclose(np.concatenate(steps, axis=1), full.data, rtol=1e-4, atol=1e-4,
                               err_msg="one cached step at a time vs all positions at once")


def test_generate_stops_at_eos_and_pads_the_rows_that_finished():
    model = _trained_like()
    out = model.generate(SRC, 12)
    assert out.shape[0] == 2 and out.shape[1] <= 12, f"expected [2, <= 12], got {out.shape}"
    for row in out:
        ends = np.flatnonzero(row == 2)
        if len(ends):
            assert np.all(row[ends[0] + 1:] == 0), f"after eos only pad_id expected: {row}"


def test_batched_decoding_equals_decoding_each_padded_source_alone():
    model = _trained_like()
    both = model.generate(SRC, 8)
    alone = model.generate(SRC[1:, :3], 8)
    np.testing.assert_array_equal(both[1, :alone.shape[1]], alone[0],
                                  err_msg="a padded source decodes differently in a batch")


def test_the_encoder_runs_once_and_memory_keys_are_projected_once_per_source():
    model = _trained_like()
    calls = {"enc": 0, "k_proj": 0}
    encode, k_proj = model.encode, model.decoder[0].multihead_attn.k_proj.forward

    def counting_encode(*args, **kwargs):
        calls["enc"] += 1
        return encode(*args, **kwargs)

    def counting_k_proj(*args, **kwargs):
        calls["k_proj"] += 1
        return k_proj(*args, **kwargs)

    model.encode = counting_encode
    model.decoder[0].multihead_attn.k_proj.forward = counting_k_proj
    steps = model.generate(SRC, 6).shape[1]
    assert steps > 1 and calls == {"enc": 1, "k_proj": 1}, (
        f"over {steps} decoding steps expected 1 encoder run and 1 key projection, got {calls}")


def test_config_round_trips_and_names_bad_fields():
    config = _model().config
    assert Seq2SeqConfig.from_dict(config.to_dict()) == config
    with pytest.raises(ValueError, match="unknown fields"):
        Seq2SeqConfig.from_dict({**config.to_dict(), "n_layer": 2})
    with pytest.raises(ValueError, match="d_model=10 must be divisible by n_heads=4"):
        Seq2SeqConfig(5, 5, 8, 10, 4, 1, 1, 8)


def test_bad_inputs_raise_one_line_errors():
    model = _model()
    with pytest.raises(ValueError, match="src must be integer ids"):
        model(SRC.astype(np.float32), TGT_IN)
    with pytest.raises(ValueError, match="src_padding_mask must be boolean"):
        model(SRC, TGT_IN, src_padding_mask=np.zeros((2, 4), dtype=bool))
    with pytest.raises(ValueError, match="exceed max_len"):
        model(np.ones((1, 13), dtype=np.int64), TGT_IN[:1])
    for n in (0, 2.5):
        with pytest.raises(ValueError, match=r"max_new_tokens must be an int in \[1, max_len=12\]"):
            model.generate(SRC, n)


def test_label_smoothing_is_cross_entropy_against_the_smoothed_targets_over_real_positions():
    model = _model()
    logits, smoothed = model(SRC, TGT_IN, TARGETS, label_smoothing=0.1)
    log_p = logits.data - np.log(np.exp(logits.data).sum(-1, keepdims=True))   # [B, T, V]
    q = np.full(log_p.shape, 0.1 / 9)
    np.put_along_axis(q, TARGETS[..., None], 0.9 + 0.1 / 9, axis=-1)          # (1−ε)·onehot + ε/V
    real = TARGETS != 0
    expected = -(q * log_p).sum(-1)[real].mean()
    assert abs(smoothed.item() - expected) < 1e-5, f"expected {expected}, got {smoothed.item()}"
