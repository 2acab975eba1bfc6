"""Hugging Face GPT-2: exact round trip, our logits and greedy text in transformers, and back.

Also: a GPT-2 made in transformers comes back; what we cannot hold is refused.
"""
import json

import numpy as np
import pytest

import microtensor
from models import GPT, CharTokenizer, GPTConfig
from models.interop import export_hf, import_hf
from models.interop.char_tokenizer_json import tokenizer_config, tokenizer_json

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("tokenizers")
pytest.importorskip("safetensors")

TEXT = "To be, or not to be?\r\nÇa va. 日本語 — ok\t😀 e\u0301\n"
PROMPT = "To be\nÇa 日"


def random_gpt(bias=True, activation="gelu", norm_first=True, seed=0):
    """A small GPT whose every parameter (biases, LayerNorms too) is random, so each one counts."""
    microtensor.manual_seed(seed)
    tok = CharTokenizer.from_text(TEXT)
    model = GPT(GPTConfig(vocab_size=tok.vocab_size, block_size=24, n_layer=2, n_head=2,
                          n_embd=16, bias=bias, activation=activation, norm_first=norm_first))
    rng = np.random.default_rng(seed)
    for p in model.parameters():
        p.data[...] = rng.normal(0.0, 0.3, p.shape)
    return model.eval(), tok


def hf_logits(hf_model, ids):
    with torch.no_grad():
        return hf_model(torch.tensor([ids])).logits[0].numpy()


@pytest.mark.parametrize("bias", [True, False])
def test_ours_to_hf_to_ours_gives_every_array_back(tmp_path, bias):
    model, tok = random_gpt(bias=bias)
    export_hf(model, tok, tmp_path)
    back, back_tok, _ = import_hf(tmp_path)
    assert back.config == model.config, f"expected {model.config}, got {back.config}"
    assert back_tok.chars == tok.chars
    ours, theirs = model.state_dict(), back.state_dict()
    assert list(theirs) == list(ours)
    for name in ours:
        np.testing.assert_array_equal(theirs[name], ours[name], err_msg=name)


@pytest.mark.parametrize("bias,activation", [(True, "gelu"), (False, "gelu"), (True, "relu")])
def test_transformers_gives_our_logits_and_greedy_text(tmp_path, bias, activation):
    model, tok = random_gpt(bias=bias, activation=activation)
    export_hf(model, tok, tmp_path)
    hf_model = transformers.AutoModelForCausalLM.from_pretrained(tmp_path).eval()
    hf_tok = transformers.AutoTokenizer.from_pretrained(tmp_path)
    ids = hf_tok(PROMPT)["input_ids"]
    assert ids == tok.encode(PROMPT), f"expected our ids {tok.encode(PROMPT)}, got {ids}"
    ours = model(np.array([ids]))[0].data[0]                       # [T, V]
    np.testing.assert_allclose(hf_logits(hf_model, ids), ours, rtol=0, atol=1e-5)
    n_new = model.config.block_size - len(ids)
    prompt = torch.tensor([ids])
    with torch.no_grad():
        hf_out = hf_model.generate(prompt, attention_mask=torch.ones_like(prompt),
                                   max_new_tokens=n_new, do_sample=False)
    ours_out = model.generate(np.array([ids]), n_new, top_k=1)
    assert hf_tok.decode(hf_out[0]) == tok.decode(ours_out[0]), (
        f"expected {tok.decode(ours_out[0])!r}, got {hf_tok.decode(hf_out[0])!r}")


def test_tokenizer_is_byte_exact_with_newlines_and_non_ascii(tmp_path):
    model, tok = random_gpt()
    export_hf(model, tok, tmp_path)
    hf_tok = transformers.AutoTokenizer.from_pretrained(tmp_path)
    ids = hf_tok(TEXT)["input_ids"]
    assert ids == tok.encode(TEXT), f"expected {tok.encode(TEXT)}, got {ids}"
    assert hf_tok.decode(ids) == TEXT                # no space clean-up, no normalisation


def hf_gpt2(tmp_path, vocab="abcdefgh \n", **config):
    """A random-init transformers GPT2LMHeadModel with a character tokenizer, saved to tmp_path."""
    torch.manual_seed(0)
    tok = CharTokenizer(list(vocab))
    settings = {"vocab_size": tok.vocab_size, "n_positions": 16, "n_embd": 16, "n_layer": 2,
                "n_head": 4, "activation_function": "gelu", "bos_token_id": None,
                "eos_token_id": None}
    hf_model = transformers.GPT2LMHeadModel(transformers.GPT2Config(**{**settings, **config}))
    with torch.no_grad():                             # GPT-2's init leaves biases at 0
        for p in hf_model.parameters():
            p.add_(0.1 * torch.randn_like(p))
    hf_model.eval().save_pretrained(tmp_path)
    (tmp_path / "tokenizer.json").write_text(tokenizer_json(tok), encoding="utf-8")
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(tokenizer_config(16)))
    return hf_model, tok


def test_a_gpt2_made_in_transformers_comes_back_with_its_logits_and_greedy_text(tmp_path):
    hf_model, tok = hf_gpt2(tmp_path)
    model, back_tok, _ = import_hf(tmp_path)
    ids = tok.encode("bad cab\nfed")
    np.testing.assert_allclose(model(np.array([ids]))[0].data[0], hf_logits(hf_model, ids),
                               rtol=0, atol=1e-5)
    prompt = torch.tensor([ids])
    with torch.no_grad():
        hf_out = hf_model.generate(prompt, attention_mask=torch.ones_like(prompt),
                                   max_new_tokens=5, do_sample=False)[0].tolist()
    ours = model.generate(np.array([ids]), 5, top_k=1)[0].tolist()
    assert back_tok.decode(ours) == tok.decode(hf_out), (
        f"expected {tok.decode(hf_out)!r}, got {back_tok.decode(ours)!r}")


def test_conv1d_weight_is_our_linear_weight_unchanged(tmp_path):
    """Conv1D computes x @ weight + bias with weight [in, out]: our Linear, no transpose."""
    from transformers.pytorch_utils import Conv1D

    model, tok = random_gpt()
    export_hf(model, tok, tmp_path)
    hf_model = transformers.AutoModelForCausalLM.from_pretrained(tmp_path)
    fc = hf_model.transformer.h[0].mlp.c_fc
    assert isinstance(fc, Conv1D)
    x = np.random.default_rng(1).normal(size=(3, 16)).astype(np.float32)
    ours = model.blocks[0].mlp.fc(microtensor.Tensor(x)).data
    with torch.no_grad():
        np.testing.assert_allclose(fc(torch.from_numpy(x)).numpy(), ours, rtol=1e-6, atol=1e-6)
    q, k, v = hf_model.transformer.h[0].attn.c_attn(torch.from_numpy(x)).detach().split(16, dim=-1)
    for got, layer in zip((q, k, v), ("q_proj", "k_proj", "v_proj")):    # fused in Q, K, V order
        want = getattr(model.blocks[0].attn, layer)(microtensor.Tensor(x)).data
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-6, err_msg=layer)


def test_post_norm_cannot_be_exported(tmp_path):
    model, tok = random_gpt(norm_first=False)
    with pytest.raises(ValueError, match="post-norm"):
        export_hf(model, tok, tmp_path)


def test_pytorch_model_bin_is_refused_unopened(tmp_path):
    (tmp_path / "pytorch_model.bin").write_bytes(b"not opened")
    with pytest.raises(FileNotFoundError, match="pickle that importing never opens"):
        import_hf(tmp_path)


@pytest.mark.parametrize("change,why", [
    (lambda s: s["model"].update(type="BPE", merges=[]), "BPE"),
    (lambda s: s.update(added_tokens=[{"id": 10, "content": "<|endoftext|>"}]), "special"),
    (lambda s: s.update(normalizer={"type": "NFC"}), "normalizer"),
    (lambda s: s["model"]["vocab"].update({"ab": 10}), "2 characters long"),
])
def test_a_tokenizer_without_a_character_map_is_refused(tmp_path, change, why):
    hf_gpt2(tmp_path)
    path = tmp_path / "tokenizer.json"
    spec = json.loads(path.read_text(encoding="utf-8"))
    change(spec)
    path.write_text(json.dumps(spec), encoding="utf-8")
    with pytest.raises(ValueError, match=why):
        import_hf(tmp_path)


@pytest.mark.parametrize("config,why", [
    ({"activation_function": "gelu_new"}, "gelu_new"),
    ({"layer_norm_epsilon": 1e-6}, "layer_norm_epsilon"),
    ({"vocab_size": 12}, "every id needs a character"),
    ({"tie_word_embeddings": False}, "tie_word_embeddings"),
])
def test_a_gpt2_we_cannot_hold_is_refused(tmp_path, config, why):
    hf_gpt2(tmp_path, **config)
    with pytest.raises(ValueError, match=why):
        import_hf(tmp_path)
