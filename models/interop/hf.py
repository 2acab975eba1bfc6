"""Our GPT as a Hugging Face GPT-2 directory (config, safetensors, character tokenizer), and back.

`transformers`' `GPT2LMHeadModel` is the same network as our GPT with norm_first=True:
pre-norm blocks, learned positions, attention scaled by 1/√d, a 4·D MLP, LayerNorm
ε = 1e-5, the LM head tied to the token embedding. Its `Conv1D` stores weights [in, out]
as our `Linear` does, so no matrix is transposed; Q, K, V are fused into `c_attn`
(names.py). Its activation "gelu" is the exact x·Φ(x), ours; "gelu_new" is the tanh
approximation. Every GPT-2 layer has biases, so a bias-free model exports zero biases,
and config.json records bias=False so that the import gives the bias-free model back.

The weights are written with `safetensors`' numpy API: exporting needs neither PyTorch nor
transformers. Importing reads only safetensors and JSON, never a pickle.

References: Radford et al. 2019 (GPT-2); Hugging Face transformers `GPT2Config`,
`GPT2LMHeadModel`; safetensors documentation.
"""
import dataclasses
import json
import math
import os

import numpy as np

from ..bpe import BPETokenizer
from ..gpt import GPTConfig
from ..schema import Bool, FileError, Int, Nullable, Number, Object, Optional, Str, read_json
from ..training.out_dir import atomic_write
from .bpe_tokenizer_json import (
    bpe_tokenizer_json,
    read_bpe_tokenizer_json,
    read_vocab_and_merges_files,
)
from .char_tokenizer_json import (
    MAX_VOCAB,
    TOKENIZER_CONFIG_FILE,
    TOKENIZER_FILE,
    read_char_tokenizer,
    tokenizer_config,
    tokenizer_json,
)
from .names import load_gpt2_state, to_gpt2
from .optional import require

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
PICKLED_WEIGHTS_FILE = "pytorch_model.bin"
FILES = (CONFIG_FILE, WEIGHTS_FILE, TOKENIZER_FILE, TOKENIZER_CONFIG_FILE)
# our activation -> its name in transformers' ACT2FN
ACTIVATIONS = {"gelu": "gelu", "relu": "relu"}
LAYER_NORM_EPS = 1e-5  # our nn.LayerNorm's default, which GPT uses
PREFIX = "transformer."
# the bias our config.json adds, so that a bias-free model comes back bias-free
BIAS_KEY = "microtensor_bias"


def check_gpt2_block(config, target):
    """Raise ValueError if `config` (a GPTConfig) has a block that GPT-2 cannot express."""
    if not config.norm_first:
        raise ValueError(f"the {target} format holds GPT-2's pre-norm blocks; this model is "
                         "post-norm (norm_first=False), which it cannot express")


def hf_config(config):
    """GPT-2's config.json (a dict) for our GPTConfig: sizes, activation, dropout, tied head."""
    check_gpt2_block(config, "Hugging Face GPT-2")
    return {
        "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2",
        "vocab_size": config.vocab_size, "n_positions": config.block_size,
        "n_embd": config.n_embd, "n_layer": config.n_layer, "n_head": config.n_head,
        "n_inner": None,  # None is 4 * n_embd, as ours
        "activation_function": ACTIVATIONS[config.activation],
        "resid_pdrop": config.dropout, "embd_pdrop": config.dropout,
        "attn_pdrop": config.dropout, "layer_norm_epsilon": LAYER_NORM_EPS,
        "initializer_range": 0.02, "scale_attn_weights": True,
        "scale_attn_by_inverse_layer_idx": False, "reorder_and_upcast_attn": False,
        "tie_word_embeddings": True, "add_cross_attention": False,
        # GPT-2's default special ids (50256) lie outside a character vocabulary
        "bos_token_id": None, "eos_token_id": None, "pad_token_id": None,
        "use_cache": True, "dtype": "float32", BIAS_KEY: config.bias,
    }


def export_hf(model, tokenizer, export_dir):
    """Write `model` (our GPT) and `tokenizer` as a Hugging Face GPT-2 directory; returns the paths.

    Files: config.json, model.safetensors (float32, Conv1D layout, names `transformer.*`),
    tokenizer.json, tokenizer_config.json; each written atomically.
    Raises ValueError for a model GPT-2 cannot express, RuntimeError if safetensors or
    tokenizers is missing.
    """
    st = require("safetensors.numpy", "the Hugging Face format")
    config = hf_config(model.config)
    c = model.config
    state = to_gpt2(model.state_dict(), c.n_layer, zero_biases=True)
    weights = {PREFIX + name: array.astype(np.float32) for name, array in state.items()}
    texts = {CONFIG_FILE: json.dumps(config, indent=2) + "\n",
             TOKENIZER_FILE: (bpe_tokenizer_json(tokenizer) if isinstance(tokenizer, BPETokenizer)
                              else tokenizer_json(tokenizer)),
             TOKENIZER_CONFIG_FILE: json.dumps(tokenizer_config(c.block_size), indent=2) + "\n"}
    blob = st.save(weights, metadata={"format": "pt"})  # "pt": transformers expects it
    os.makedirs(export_dir, exist_ok=True)
    atomic_write(os.path.join(export_dir, WEIGHTS_FILE), lambda f: f.write(blob))
    for name, text in texts.items():
        atomic_write(os.path.join(export_dir, name),
                     lambda f, text=text: f.write(text.encode("utf-8")))
    paths = [os.path.join(export_dir, name) for name in FILES]
    return paths


DROPOUT = Optional(Number(0, 1, high_open=True), 0.1)  # GPT-2's default rate
# The fields of config.json that import reads (models/schema.py), with transformers' defaults;
# whether our GPT can hold their values is _gpt_config_from_hf's question.
HF_CONFIG = Object({
    "model_type": Str(), "vocab_size": Int(1, MAX_VOCAB), "n_positions": Int(1),
    "n_layer": Int(1), "n_head": Int(1), "n_embd": Optional(Int(1), 768),
    "n_inner": Optional(Nullable(Int(1))), "activation_function": Optional(Str(), "gelu_new"),
    "layer_norm_epsilon": Optional(Number(0), LAYER_NORM_EPS),
    "scale_attn_weights": Optional(Bool(), True),
    "scale_attn_by_inverse_layer_idx": Optional(Bool(), False),
    "add_cross_attention": Optional(Bool(), False), "tie_word_embeddings": Optional(Bool(), True),
    "resid_pdrop": DROPOUT, "embd_pdrop": DROPOUT, "attn_pdrop": DROPOUT,
    BIAS_KEY: Optional(Bool(), True),
})


def _gpt_config_from_hf(hf, where):
    """Our GPTConfig for a GPT-2 config.json dict checked by HF_CONFIG; FileError for what
    our GPT cannot hold."""
    def refuse(why):
        raise FileError(f"{where}: {why}, which microtensor's GPT cannot hold")

    if hf["model_type"] != "gpt2":
        refuse(f"model_type is {hf['model_type']!r}, not 'gpt2'")
    by_name = {v: k for k, v in ACTIVATIONS.items()}
    activation = hf["activation_function"]
    if activation not in by_name:
        refuse(f"activation_function is {activation!r} (gelu_new is GPT-2's tanh "
               f"approximation); ours are {sorted(by_name)}")
    n_embd = hf["n_embd"]
    if hf["n_inner"] not in (None, 4 * n_embd):
        refuse(f"n_inner is {hf['n_inner']}, not 4 * n_embd = {4 * n_embd}")
    eps = hf["layer_norm_epsilon"]
    if not math.isclose(eps, LAYER_NORM_EPS, rel_tol=1e-9):
        refuse(f"layer_norm_epsilon is {eps}, not {LAYER_NORM_EPS}")
    for key, want in (("scale_attn_weights", True), ("scale_attn_by_inverse_layer_idx", False),
                      ("add_cross_attention", False), ("tie_word_embeddings", True)):
        if hf[key] != want:
            refuse(f"{key} is {json.dumps(hf[key])}")
    dropouts = {hf[k] for k in ("resid_pdrop", "embd_pdrop", "attn_pdrop")}
    if len(dropouts) != 1:
        refuse(f"resid_pdrop, embd_pdrop, attn_pdrop differ ({sorted(dropouts)}); ours is one "
               "dropout rate")
    try:
        return GPTConfig(vocab_size=hf["vocab_size"], block_size=hf["n_positions"],
                         n_layer=hf["n_layer"], n_head=hf["n_head"], n_embd=n_embd,
                         dropout=dropouts.pop(), bias=hf[BIAS_KEY],
                         activation=by_name[activation])
    except ValueError as error:  # n_embd not divisible by n_head
        raise FileError(f"{where}: {error}") from None


def _read_weights(path):
    """{GPT-2 name without prefix: float32 array} from model.safetensors (buffers dropped).

    FileError naming the file for one that safetensors cannot read, and the tensor for one
    that does not hold floats.
    """
    st = require("safetensors.numpy", "importing a Hugging Face model")
    safetensors = require("safetensors", "importing a Hugging Face model")
    try:
        raw = st.load_file(path)
    except (OSError, ValueError, TypeError, KeyError, MemoryError,
            safetensors.SafetensorError) as error:
        raise FileError(f"{path} is not a readable safetensors file ({error})") from None
    state = {}
    for name, array in raw.items():
        short = name.removeprefix(PREFIX)
        if short.endswith((".attn.bias", ".attn.masked_bias")):  # causal-mask buffers
            continue
        if array.dtype.kind != "f":
            raise FileError(f"{path}: tensor {name!r} holds {array.dtype}; expected floats")
        state[short] = array.astype(np.float32)
    return state


def _model_type(path):
    """tokenizer.json's model.type ('BPE', 'WordLevel', ...), None if it has none."""
    spec = read_json(path)
    model = spec.get("model") if isinstance(spec, dict) else None
    return model.get("type") if isinstance(model, dict) else None


def import_hf(directory):
    """(model, tokenizer, notes) from a Hugging Face GPT-2 directory with a character tokenizer
    or a byte-level BPE in our layout (tokenizer.json, or GPT-2's vocab.json + merges.txt).

    Reads config.json, model.safetensors and tokenizer.json. Raises FileNotFoundError for a
    missing file (and for a pytorch_model.bin alone: a pickle, never opened), FileError (a
    ValueError) naming the file and the field that our GPT cannot hold (a field of the wrong
    type or range, another architecture or tokenizer, an untied head, NaN weights).
    """
    paths = {name: os.path.join(directory, name) for name in FILES}
    if not os.path.isfile(paths[WEIGHTS_FILE]):
        if os.path.isfile(os.path.join(directory, PICKLED_WEIGHTS_FILE)):
            raise FileNotFoundError(
                f"{directory!r} holds {PICKLED_WEIGHTS_FILE}, a pickle that importing never "
                f"opens (it can run code); save the model as {WEIGHTS_FILE} first, e.g. "
                "model.save_pretrained(dir) in transformers")
        raise FileNotFoundError(f"{directory!r} has no {WEIGHTS_FILE}")
    gpt2_files = [os.path.join(directory, n) for n in ("vocab.json", "merges.txt")]
    byte_level = not os.path.isfile(paths[TOKENIZER_FILE]) and all(map(os.path.isfile, gpt2_files))
    for name in (CONFIG_FILE,) + (() if byte_level else (TOKENIZER_FILE,)):
        if not os.path.isfile(paths[name]):
            raise FileNotFoundError(f"{directory!r} has no {name}; a GPT-2 directory for "
                                    "microtensor holds config.json, model.safetensors and a "
                                    "character-level tokenizer.json")
    hf = read_json(paths[CONFIG_FILE], HF_CONFIG)
    config = _gpt_config_from_hf(hf, paths[CONFIG_FILE])
    tokenizer = (read_vocab_and_merges_files(*gpt2_files) if byte_level
                 else read_bpe_tokenizer_json(paths[TOKENIZER_FILE])
                 if _model_type(paths[TOKENIZER_FILE]) == "BPE"
                 else read_char_tokenizer(paths[TOKENIZER_FILE]))
    if tokenizer.vocab_size != config.vocab_size:
        raise FileError(f"{paths[TOKENIZER_FILE]}: the tokenizer has {tokenizer.vocab_size} "
                        f"characters but the model {config.vocab_size} token ids; every id "
                        "needs a character for microtensor's GPT")
    state = _read_weights(paths[WEIGHTS_FILE])
    head = state.pop("lm_head.weight", None)
    if head is not None and not np.array_equal(head, state.get("wte.weight")):
        raise FileError(f"{paths[WEIGHTS_FILE]}: lm_head.weight differs from wte.weight; "
                         "microtensor's GPT ties its head to the token embedding")
    if not config.bias and any(np.any(a) for n, a in state.items() if n.endswith(".bias")):
        config = dataclasses.replace(config, bias=True)  # trained on with biases: keep them
    model = load_gpt2_state(config, state, paths[WEIGHTS_FILE])
    return model, tokenizer, {"imported_from": "Hugging Face GPT-2"}
