"""Structure a caller passes in (KV caches, masks) is checked against the model: one line
naming what is wrong, never a silently mixed-up result (issue 16)."""
import numpy as np
import pytest

import microtensor as mt
import nn
from models import GPT, GPTConfig, Seq2SeqConfig, Seq2SeqTransformer


def _gpt():
    mt.manual_seed(0)
    return GPT(GPTConfig(vocab_size=7, block_size=8, n_layer=2, n_head=2, n_embd=8)).eval()


IDX = np.array([[1, 2, 3]])


@pytest.mark.parametrize("caches, error, words", [
    (lambda: [nn.KVCache()], ValueError, "expected one per layer, 2"),
    (lambda: [nn.KVCache()] * 2, ValueError, "already passed for another layer"),
    (lambda: [nn.KVCache(), None], TypeError, "must be an nn.KVCache"),
    (lambda: nn.KVCache(), TypeError, "must be a list"),
    (lambda: [], ValueError, "expected one per layer"),
])
def test_gpt_refuses_kv_caches_that_do_not_fit_its_blocks(caches, error, words):
    with pytest.raises(error, match=words):
        _gpt()(IDX, kv_caches=caches())


def test_gpt_refuses_caches_of_different_lengths():
    model, caches = _gpt(), [nn.KVCache(), nn.KVCache()]
    with mt.no_grad():
        model(IDX, kv_caches=caches)
        caches[1] = nn.KVCache()
        with pytest.raises(ValueError, match="different numbers of positions"):
            model(IDX[:, -1:], kv_caches=caches)


def test_gpt_with_one_cache_per_block_matches_the_full_forward():
    model, caches = _gpt(), [nn.KVCache(), nn.KVCache()]
    with mt.no_grad():
        model(IDX[:, :2], kv_caches=caches)
        step, _ = model(IDX[:, 2:], kv_caches=caches)
        full, _ = model(IDX)
    np.testing.assert_allclose(step.data[:, -1], full.data[:, -1], rtol=1e-5, atol=1e-6)


def test_seq2seq_decode_refuses_shared_or_miscounted_cache_pairs():
    mt.manual_seed(0)
    model = Seq2SeqTransformer(Seq2SeqConfig(5, 5, 8, 8, 2, 1, 2, 16)).eval()
    src = np.array([[3, 4, 2]])
    memory = model.encode(src)
    shared = nn.KVCache()
    for caches, words in (([(nn.KVCache(), nn.KVCache())], "expected one per layer, 2"),
                          ([(shared, nn.KVCache()), (shared, nn.KVCache())], "already passed"),
                          ([nn.KVCache(), nn.KVCache()], "pair")):
        with pytest.raises((ValueError, TypeError), match=words):
            model.decode(np.array([[1]]), memory, None, caches=caches)


@pytest.mark.parametrize("shape", [(3, 3, 3), (2, 1, 3, 3), (3, 4)])
def test_attention_refuses_an_attn_mask_that_does_not_broadcast_to_the_scores(shape):
    mha = nn.MultiHeadAttention(8, 2)
    x = mt.Tensor(np.zeros((1, 3, 8), np.float32))
    with pytest.raises(ValueError, match="does not broadcast to the scores"):
        mha(x, attn_mask=np.zeros(shape, bool))
    q = mt.Tensor(np.zeros((1, 2, 3, 4)))
    with pytest.raises(ValueError, match="does not broadcast to the scores"):
        nn.scaled_dot_product_attention(q, q, q, attn_mask=np.zeros(shape, bool))


def test_attention_refuses_a_key_padding_mask_of_the_wrong_shape():
    mha = nn.MultiHeadAttention(8, 2)
    x = mt.Tensor(np.zeros((2, 3, 8), np.float32))
    with pytest.raises(ValueError, match=r"key_padding_mask must be boolean \[B, T_k\]"):
        mha(x, key_padding_mask=np.zeros((3, 2), bool))


def test_cross_attention_refuses_a_context_of_another_batch_size():
    mha = nn.MultiHeadAttention(8, 2)
    x = mt.Tensor(np.zeros((2, 3, 8), np.float32))
    with pytest.raises(ValueError, match="context must be"):
        mha(x, context=mt.Tensor(np.zeros((1, 4, 8), np.float32)))
