"""Our `CharTokenizer` as a Hugging Face `tokenizer.json` (the `tokenizers` format) and back.

One token per character, exactly as `CharTokenizer`: a `WordLevel` model whose vocabulary is
the characters with our ids, no normalizer (no Unicode rewriting, no lower-casing), a
pre-tokenizer that cuts the text into single characters (newlines, spaces, tabs and
non-ASCII included), and the `Fuse` decoder, which joins tokens with nothing between them.
Reading back is structural (plain JSON, no `tokenizers` needed) and refuses any tokenizer
that is not one character per token: BPE merges, special tokens, a normalizer.

References: Hugging Face `tokenizers` documentation (models, pre-tokenizers, decoders);
Karpathy, nanoGPT `data/shakespeare_char/prepare.py` (the same character vocabulary).
"""
from ..schema import (
    Array,
    FileError,
    Int,
    Map,
    Nullable,
    Object,
    Optional,
    Str,
    read_json,
    shown,
)
from ..tokenizer import CharTokenizer
from .optional import require

TOKENIZER_FILE = "tokenizer.json"
TOKENIZER_CONFIG_FILE = "tokenizer_config.json"
# One match per character; "." would not match a newline.
CHAR_PATTERN = r"[\s\S]"
# An unknown character is an error, as in CharTokenizer: this token is not in the vocabulary
# (it is several characters long, so it cannot collide with one), so `tokenizers` raises.
UNK_TOKEN = "[UNK]"
MAX_VOCAB = 0x110000  # one token per Unicode code point at most


def tokenizer_json(tokenizer):
    """The `tokenizer.json` text for `tokenizer` (a CharTokenizer), built with `tokenizers`.

    Raises RuntimeError if `tokenizers` is not installed.
    """
    tk = require("tokenizers", "exporting the tokenizer to Hugging Face format")
    vocab = {ch: i for i, ch in enumerate(tokenizer.chars)}
    hf = tk.Tokenizer(tk.models.WordLevel(vocab, unk_token=UNK_TOKEN))
    hf.pre_tokenizer = tk.pre_tokenizers.Split(tk.Regex(CHAR_PATTERN), behavior="isolated")
    hf.decoder = tk.decoders.Fuse()
    return hf.to_str(pretty=True)


def tokenizer_config(block_size):
    """`tokenizer_config.json`: the fast tokenizer class, and no clean-up of spaces on decode.

    transformers' clean-up would turn " ." into "." in decoded text; a character model must
    decode every character it generated.
    """
    return {"tokenizer_class": "PreTrainedTokenizerFast", "clean_up_tokenization_spaces": False,
            "model_max_length": block_size}


# The fields of tokenizer.json that are read (models/schema.py). Its parts are checked as
# objects here; which kinds of parts a character tokenizer has, read_char_tokenizer decides.
ANY_OBJECT = Object({})
TOKENIZER = Object({
    "model": Object({"type": Str(), "vocab": Optional(
        Map(Str(), Int(0, MAX_VOCAB - 1), max_items=MAX_VOCAB), {})}),
    "normalizer": Optional(Nullable(ANY_OBJECT)),
    "added_tokens": Optional(Nullable(Array(ANY_OBJECT)), []),
    "pre_tokenizer": Optional(Nullable(ANY_OBJECT)),
    "decoder": Optional(Nullable(ANY_OBJECT)),
})


def read_char_tokenizer(path):
    """CharTokenizer from a `tokenizer.json` that maps one character to one token.

    Raises FileError (a ValueError) naming the file and the field: one of the wrong JSON
    type, or another kind of tokenizer (subword merges, special tokens, a normalizer,
    multi-character tokens, ids with gaps).
    """
    spec = read_json(path, TOKENIZER)
    model = spec["model"]

    def refuse(why):
        raise FileError(f"{path} is not a character-level tokenizer ({why}); microtensor's "
                        "GPT reads one character per token")

    if model["type"] != "WordLevel":
        refuse(f"its model is {model['type']!r}, not 'WordLevel'; a subword vocabulary "
               "such as GPT-2's BPE has no character map")
    if spec["normalizer"] is not None:
        refuse("it rewrites the text with a normalizer before splitting it")
    if spec["added_tokens"]:
        refuse(f"it has {len(spec['added_tokens'])} added or special tokens, e.g. "
               f"{shown(spec['added_tokens'][0].get('content'))}")
    pre = spec["pre_tokenizer"] or {}
    if pre.get("type") != "Split" or pre.get("pattern") != {"Regex": CHAR_PATTERN} \
            or pre.get("behavior") != "Isolated" or pre.get("invert") not in (None, False):
        refuse("its pre-tokenizer does not cut the text into single characters")
    if (spec["decoder"] or {}).get("type") != "Fuse":
        refuse("its decoder does not join the characters back with nothing between them")
    vocab = model["vocab"]
    long_tokens = [t for t in vocab if len(t) != 1]
    if long_tokens:
        refuse(f"token {shown(long_tokens[0])} is {len(long_tokens[0])} characters long")
    chars = sorted(vocab, key=vocab.get)
    if [vocab[ch] for ch in chars] != list(range(len(chars))):
        refuse("its ids are not 0 .. vocab_size-1 without gaps")
    if not chars:
        refuse("its vocabulary is empty")
    return CharTokenizer(chars)
