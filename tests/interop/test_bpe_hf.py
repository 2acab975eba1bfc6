"""Our byte-level BPE against an independent implementation, Hugging Face `tokenizers`: the
same merges loaded into its BPE model (ByteLevel pre-tokenizer and decoder) give the same ids."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.bpe import BPETokenizer
from models.interop.bpe_tokenizer_json import (
    byte_to_char,
    from_vocab_and_merges,
    hf_tokenizer,
    vocab_and_merges,
)

pytest.importorskip("tokenizers")


def shipped_text():
    from pydoc_data.topics import topics
    return "".join(topics[k] for k in sorted(topics))


@pytest.fixture(scope="module")
def pair():
    text = shipped_text()
    tok = BPETokenizer.train(text[:150_000], 1024)  # trained on the first part only
    return tok, hf_tokenizer(tok), text


def first_difference(a, b):
    k = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return f"first difference at {k}: ours {a[k:k + 5]}, tokenizers {b[k:k + 5]}"


def test_same_ids_as_tokenizers_on_the_whole_shipped_text(pair):
    tok, hf, text = pair
    assert len(text.encode()) > 400_000, "the shipped text is shorter than this test assumes"
    ours, theirs = tok.encode(text), hf.encode(text).ids
    assert ours == theirs, first_difference(ours, theirs)


HOSTILE = {
    "every plane": "".join(chr(c) for c in (0x41, 0xE9, 0x4E2D, 0x1D518, 0x20000, 0x30000,
                                            0xE0041, 0xF0000, 0x10FFFD)),
    "emoji": "👩‍👩‍👧 🇫🇷 🙂🙂 ✌🏽",
    "crlf": "line one\r\nline two\r\n\r\n  \r\n",
    "nul": "a\x00b \x00\x00 c",
    "spaces": "   x  \t\t y\n\n\n z   ",
    "contractions": "don't I'll we've they're he'd 'S 'LL",
    "digits": "12345 3.14159 x2 ²³ ٣",
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_same_ids_as_tokenizers_on_hostile_text(pair, name):
    tok, hf, _ = pair
    text = HOSTILE[name]
    ours, theirs = tok.encode(text), hf.encode(text).ids
    assert ours == theirs, first_difference(ours, theirs)
    assert hf.decode(theirs) == text == tok.decode(ours)


def test_invalid_utf8_compares_after_replacement(pair):
    # tokenizers takes str, so raw invalid bytes cannot reach it: compare on the text decoded
    # with errors="replace" (what `sample` shows), and check the bytes-level round trip alone
    tok, hf, _ = pair
    data = b"ok \xff\xfe broken \xc3 half \xed\xa0\x80 surrogate"
    text = data.decode("utf-8", errors="replace")
    assert tok.encode(text) == hf.encode(text).ids
    assert tok.decode_bytes(tok.encode(data)) == data


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_same_ids_as_tokenizers_on_any_string(pair, text):
    tok, hf, _ = pair
    assert tok.encode(text) == hf.encode(text).ids


def test_byte_table_is_gpt2s():
    table = byte_to_char()
    assert len(set(table.values())) == 256
    assert table[ord("A")] == "A" and table[ord(" ")] == "Ġ" and table[ord("\n")] == "Ċ"


def test_vocab_and_merges_read_back(pair):
    tok, _, _ = pair
    back = from_vocab_and_merges(*vocab_and_merges(tok))
    assert back.merges == tok.merges


def test_a_vocabulary_in_another_byte_order_is_refused(pair):
    tok, _, _ = pair
    vocab, merges = vocab_and_merges(tok)
    vocab = {**vocab, "A": 0, "!": ord("A")}
    with pytest.raises(ValueError, match=r"the byte 33 .* has id 65; expected 33"):
        from_vocab_and_merges(vocab, merges, "vocab.json")


# --- a GPT with a BPE tokenizer, exported to transformers and imported back ------------------

def bpe_gpt(tmp_path):
    import numpy as np

    import microtensor
    from models import GPT, GPTConfig
    microtensor.manual_seed(0)
    tok = BPETokenizer.train(shipped_text()[:40_000], 300)
    model = GPT(GPTConfig(vocab_size=tok.vocab_size, block_size=24, n_layer=2, n_head=2,
                          n_embd=16))
    rng = np.random.default_rng(0)
    for p in model.parameters():
        p.data[...] = rng.normal(0.0, 0.3, p.shape)
    return model.eval(), tok


def test_exported_bpe_gpt_gives_the_same_ids_and_greedy_text_in_transformers(tmp_path):
    import numpy as np
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from models.interop import export_hf
    model, tok = bpe_gpt(tmp_path)
    export_hf(model, tok, tmp_path)
    hf_tok = transformers.AutoTokenizer.from_pretrained(tmp_path)
    for text in HOSTILE.values():
        assert hf_tok(text)["input_ids"] == tok.encode(text), f"ids differ on {text!r}"
    ids = tok.encode("The function returns")
    hf_model = transformers.AutoModelForCausalLM.from_pretrained(tmp_path).eval()
    prompt = torch.tensor([ids])
    with torch.no_grad():
        hf_out = hf_model.generate(prompt, attention_mask=torch.ones_like(prompt),
                                   max_new_tokens=8, do_sample=False)
    ours = model.generate(np.array([ids]), 8, top_k=1)[0].tolist()
    assert hf_out[0].tolist() == ours, f"expected our ids {ours}, got {hf_out[0].tolist()}"


def test_bpe_gpt_comes_back_from_tokenizer_json_and_from_vocab_and_merges(tmp_path):
    import json
    pytest.importorskip("safetensors")
    from models.interop import export_hf, import_hf
    model, tok = bpe_gpt(tmp_path)
    export_hf(model, tok, tmp_path)
    _, back, _ = import_hf(tmp_path)
    assert back.merges == tok.merges
    vocab, merges = vocab_and_merges(tok)  # GPT-2's two files instead of tokenizer.json
    (tmp_path / "tokenizer.json").unlink()
    (tmp_path / "vocab.json").write_text(json.dumps(vocab))
    (tmp_path / "merges.txt").write_text("#version: 0.2\n" + "".join(f"{a} {b}\n"
                                                                    for a, b in merges))
    _, back, _ = import_hf(tmp_path)
    assert back.merges == tok.merges


@pytest.mark.parametrize("change, why", [
    (lambda s: s["model"].update(type="Unigram"), "its model is 'Unigram', not 'BPE'"),
    (lambda s: s.update(normalizer={"type": "NFC"}), "normalizer"),
    (lambda s: s["pre_tokenizer"].update(add_prefix_space=True), "pre-tokenizer is not"),
    (lambda s: s.update(added_tokens=[{"content": "<|endoftext|>"}]), "1 added or special"),
    (lambda s: s["model"]["merges"].append("Ġ t h"), r"merges\[44\] is 'Ġ t h'|not two tokens"),
    (lambda s: s["model"]["merges"].__setitem__(0, 7), r"merges\[0\] is 7"),
    (lambda s: s["model"]["vocab"].update({"x": 5}), r"the byte 120 .* has id 5"),
    (lambda s: s["model"]["merges"].pop(), "tokens for"),
])
def test_hostile_bpe_tokenizer_json_is_refused_in_one_line(tmp_path, change, why):
    import json

    from models.interop.bpe_tokenizer_json import bpe_tokenizer_json, read_bpe_tokenizer_json
    from models.schema import FileError
    tok = BPETokenizer.train("the cat sat on the mat " * 20, 300)
    spec = json.loads(bpe_tokenizer_json(tok))
    change(spec)
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(spec))
    with pytest.raises(FileError, match=why) as info:
        read_bpe_tokenizer_json(path)
    assert "\n" not in str(info.value)
