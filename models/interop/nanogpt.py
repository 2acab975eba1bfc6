"""Our GPT as nanoGPT's `ckpt.pt` + `meta.pkl` (for its sample.py and train.py), and back.

nanoGPT's GPT is ours with norm_first=True and activation="gelu" (exact, `nn.GELU()`),
LayerNorm ε = 1e-5, the LM head tied to `transformer.wte`. Its `nn.Linear` stores
[out, in], the transpose of our `Linear` and of GPT-2's Conv1D, so the four matrices of
`names.LINEAR_WEIGHTS` are transposed both ways. Its AdamW state follows
`configure_optimizers`: group 0 holds the parameters with dim >= 2 (weight decay), group 1
the rest, each in `named_parameters()` order, numbered 0, 1, ... across both groups.
AdamW's moments are per element, so fusing Q, K, V into c_attn fuses their moments too.

`ckpt.pt` is written and read with PyTorch (`torch.load(weights_only=True)`: tensors and
plain data only); `meta.pkl` is written with pickle and read with `plain_pickle`.

References: Karpathy, nanoGPT `model.py`, `train.py`, `sample.py`,
`data/shakespeare_char/prepare.py`; Loshchilov & Hutter 2019 (AdamW).
"""
import math
import os
import pickle
import re

import numpy as np

from ..gpt import GPTConfig
from ..schema import (
    Bool,
    FileError,
    Int,
    Leaf,
    Map,
    Number,
    Object,
    Optional,
    Str,
    check,
    shown,
)
from ..tokenizer import CharTokenizer
from ..training.checkpoint import load_checkpoint, load_optimizer
from ..training.data import split_ids
from ..training.out_dir import CONFIG_FILE as CHECKPOINT_CONFIG_FILE
from ..training.out_dir import TRAINING_STATE, atomic_write, load_snapshot
from ..training.settings import TrainConfig
from .char_tokenizer_json import MAX_VOCAB
from .hf import check_gpt2_block
from .names import LINEAR_WEIGHTS, gpt2_parameter_names, load_gpt2_state, to_gpt2
from .optional import require
from .plain_pickle import load_plain, scan_torch_pickle

CHECKPOINT_FILE = "ckpt.pt"
META_FILE = "meta.pkl"
CONFIG_FILE = "nanogpt_config.py"
BIN_FILES = ("train.bin", "val.bin")
PREFIX = "transformer."
COMPILED_PREFIX = "_orig_mod."  # torch.compile's wrapper adds it to every name
NO_BEST_LOSS = 1e9  # nanoGPT's starting best_val_loss
# our TrainConfig fields that nanoGPT's train.py names the same (its config dict)
TRAIN_KEYS = ("batch_size", "block_size", "n_layer", "n_head", "n_embd", "dropout", "bias",
              "learning_rate", "max_iters", "weight_decay", "beta1", "beta2", "grad_clip",
              "warmup_iters", "lr_decay_iters", "min_lr", "eval_interval", "eval_iters")


def _torch(purpose):
    return require("torch", purpose, extra="torch")


def _is_linear(name):
    return name.endswith(LINEAR_WEIGHTS)


def nanogpt_state(model):
    """{nanoGPT name: float32 array} for our GPT, nanoGPT's layout ([out, in] Linear weights)."""
    c = model.config
    state = to_gpt2(model.state_dict(), c.n_layer)
    return {PREFIX + n: np.ascontiguousarray(a.T if _is_linear(n) else a)
            for n, a in state.items()}


def _train_config(train_state):
    """nanoGPT's `config` dict (logged, and read by sample.py for `dataset`) from our notes."""
    ours = (train_state or {}).get("train_config") or {}
    config = {k: ours[k] for k in TRAIN_KEYS if k in ours}
    if config.get("lr_decay_iters") is None and "max_iters" in config:
        config["lr_decay_iters"] = config["max_iters"]  # ours: None means max_iters
    config.update(gradient_accumulation_steps=1, decay_lr=True)
    return config


def _moments(model, optimizer):
    """({our parameter name: AdamW state}, hyper-parameters) of our `optimizer` over `model`."""
    names = {id(p): name for name, p in model.named_parameters()}
    moments = {names[id(p)]: state for p, state in optimizer.state.items() if id(p) in names}
    group = optimizer.param_groups[0]
    decay = [g["weight_decay"] for g in optimizer.param_groups
             if any(p.ndim >= 2 for p in g["params"])]
    hyper = {"lr": group["lr"], "betas": group["betas"], "eps": group["eps"],
             "weight_decay": decay[0] if decay else group["weight_decay"]}
    return moments, hyper


def optimizer_state_dict(model, optimizer, hyper):
    """torch.optim.AdamW's state_dict for nanoGPT's parameter groups, holding our AdamW's moments.

    optimizer: our nn.optim.AdamW over `model`'s parameters (any grouping), or None for a
    fresh state with the hyper-parameters `hyper` (lr, betas, eps, weight_decay).
    The param_groups come from a real torch AdamW, so they carry every key the installed
    PyTorch expects. Raises ValueError if parameters were stepped a different number of times.
    """
    torch = _torch("the nanoGPT format")
    c = model.config
    moments = {}
    if optimizer is not None:
        moments, hyper = _moments(model, optimizer)
    shapes = {n: a.shape for n, a in nanogpt_state(model).items()}
    names = [PREFIX + n for n in gpt2_parameter_names(c.n_layer, c.bias)]
    decay = [n for n in names if len(shapes[n]) >= 2]
    no_decay = [n for n in names if len(shapes[n]) < 2]
    groups = [{"params": [torch.empty(0) for _ in decay], "weight_decay": hyper["weight_decay"]},
              {"params": [torch.empty(0) for _ in no_decay], "weight_decay": 0.0}]
    template = torch.optim.AdamW(groups, lr=hyper["lr"], betas=tuple(hyper["betas"]),
                                 eps=hyper["eps"]).state_dict()
    state = {}
    if moments:
        steps = {m["step"] for m in moments.values()}
        if len(steps) != 1:
            raise ValueError(f"optimizer state: parameters were stepped {sorted(steps)} times; "
                             "nanoGPT's AdamW needs one step count")
        fused = {kind: to_gpt2({n: m[kind] for n, m in moments.items()}, c.n_layer)
                 for kind in ("exp_avg", "exp_avg_sq")}
        step = torch.tensor(float(steps.pop()))  # torch keeps the step as a float tensor
        for index, name in enumerate(decay + no_decay):
            short = name[len(PREFIX):]
            if short in fused["exp_avg"]:
                state[index] = {"step": step.clone(), **{
                    kind: torch.from_numpy(np.ascontiguousarray(
                        a[short].T if _is_linear(short) else a[short]).astype(np.float32))
                    for kind, a in fused.items()}}
    return {"state": state, "param_groups": template["param_groups"]}


def check_nanogpt(config):
    """Raise ValueError if `config` (a GPTConfig) is a GPT that nanoGPT cannot express."""
    check_gpt2_block(config, "nanoGPT")
    if config.activation != "gelu":
        raise ValueError(f"nanoGPT's MLP uses GELU; this model uses {config.activation!r}, "
                         "which the nanoGPT format cannot express")


def training_state(out_dir):
    """(model, tokenizer, train_state, optimizer): the latest training state in out_dir.

    That is what nanoGPT resumes from: the latest weights with their AdamW moments (our
    `nn.optim.AdamW`, grouped as `models.training.run.configure_optimizer` groups it), the step
    and the best validation loss so far. optimizer is None for a checkpoint without
    training state (e.g. an imported model).
    """
    from ..training.run import configure_optimizer  # the training loop, only when exporting one

    model, tokenizer, manifest = load_checkpoint(out_dir, which="latest")
    path = os.path.join(os.fspath(out_dir), CHECKPOINT_CONFIG_FILE)
    latest, info = manifest["latest"], manifest["info"]
    for section, key in (("latest", "param_groups"), ("latest", "best_val_loss"),
                         ("info", "train_config")):  # what --resume checks too
        if key in manifest[section]:
            check(manifest[section][key], TRAINING_STATE[key], path, f"{section}.{key}")
    settings = info.get("train_config")
    best = latest.get("best_val_loss", manifest["best"]["val_loss"])
    train_state = {"iter": latest["iter"], "best_val_loss": best, "train_config": settings}
    optimizer = None
    if settings and "param_groups" in latest:
        try:
            config = TrainConfig.from_dict(settings, path, "info.train_config")
            config.validate()
        except ValueError as error:  # a range, from the settings' checks
            raise FileError(f"{path}: info.train_config: {error}") from None
        optimizer = configure_optimizer(model, config)
        arrays, path = load_snapshot(out_dir, "latest", manifest)
        load_optimizer(optimizer, arrays, latest["param_groups"], path)
    return model, tokenizer, train_state, optimizer


def export_nanogpt(model, tokenizer, export_dir, train_state=None, optimizer=None,
                   dataset="microtensor_char", text=None):
    """Write ckpt.pt, meta.pkl and nanogpt_config.py into export_dir; returns the paths written.

    train_state: our checkpoint's notes (iter, best_val_loss, train_config) -> iter_num,
    best_val_loss, config. optimizer: our AdamW over `model`, whose moments and step count
    go into ckpt.pt; None writes a fresh optimizer state. dataset: the name nanoGPT's
    sample.py looks for in data/<dataset>/meta.pkl; nanogpt_config.py sets
    out_dir = "out-<dataset>". text: if given, also write train.bin and val.bin (uint16
    ids, first 90% / last 10%, as nanoGPT's prepare.py) for train.py to continue on.
    Raises ValueError for a model nanoGPT cannot express or a tokenizer that is not a
    CharTokenizer (meta.pkl maps characters), RuntimeError without PyTorch.
    """
    if not isinstance(tokenizer, CharTokenizer):
        raise ValueError(f"tokenizer is a {type(tokenizer).__name__}; nanoGPT's meta.pkl holds "
                         "a character vocabulary only: export a BPE model with --format hf")
    torch = _torch("the nanoGPT format")
    c = model.config
    check_nanogpt(c)
    train_state = train_state or {}
    config = dict(_train_config(train_state), dataset=dataset, out_dir=f"out-{dataset}",
                  init_from="resume")
    hyper = {"lr": config.get("learning_rate", 1e-3), "eps": 1e-8,
             "betas": (config.get("beta1", 0.9), config.get("beta2", 0.99)),
             "weight_decay": config.get("weight_decay", 0.1)}
    weights = {n: torch.from_numpy(a) for n, a in nanogpt_state(model).items()}
    weights["lm_head.weight"] = weights[PREFIX + "wte.weight"]  # tied: one tensor, two names
    best = train_state.get("best_val_loss")
    checkpoint = {
        "model": weights,
        "optimizer": optimizer_state_dict(model, optimizer, hyper),
        "model_args": {"n_layer": c.n_layer, "n_head": c.n_head, "n_embd": c.n_embd,
                       "block_size": c.block_size, "bias": c.bias,
                       "vocab_size": c.vocab_size, "dropout": c.dropout},
        "iter_num": int(train_state.get("iter", 0)),
        "best_val_loss": float(best) if best is not None and math.isfinite(best) else NO_BEST_LOSS,
        "config": config,
    }
    # the text is encoded before any file is written: a character outside the vocabulary
    # must leave EXPORT_DIR as it was
    splits = _bin_splits(tokenizer, text, c.block_size) if text is not None else ()
    os.makedirs(export_dir, exist_ok=True)
    paths = [os.path.join(export_dir, n) for n in (CHECKPOINT_FILE, META_FILE, CONFIG_FILE)]
    atomic_write(paths[0], lambda f: torch.save(checkpoint, f))
    atomic_write(paths[1], lambda f: pickle.dump(meta(tokenizer), f))
    lines = ["# nanoGPT settings of the exported microtensor run (for nanoGPT's config/)",
             *(f"{k} = {v!r}" for k, v in config.items())]
    atomic_write(paths[2], lambda f: f.write(("\n".join(lines) + "\n").encode("utf-8")))
    for name, split in zip(BIN_FILES, splits):
        paths.append(os.path.join(export_dir, name))
        atomic_write(paths[-1], lambda f, split=split: f.write(split.tobytes()))
    return paths


def meta(tokenizer):
    """nanoGPT's meta.pkl content: {"vocab_size": V, "itos": {id: char}, "stoi": {char: id}}."""
    return {"vocab_size": tokenizer.vocab_size, "itos": dict(enumerate(tokenizer.chars)),
            "stoi": dict(tokenizer.stoi)}


def _bin_splits(tokenizer, text, block_size):
    """The train and val ids [N] uint16 of `text` (90/10), as nanoGPT's prepare.py writes them."""
    if tokenizer.vocab_size > 2 ** 16:
        raise ValueError(f"nanoGPT's .bin files hold uint16 ids; the vocabulary has "
                         f"{tokenizer.vocab_size} characters")
    return split_ids(np.array(tokenizer.encode(text), dtype=np.uint16), block_size)


# What we read from meta.pkl and ckpt.pt (models/schema.py); other keys are not looked at.
META = Object({"vocab_size": Optional(Int(1, MAX_VOCAB)),
               "itos": Map(Int(0, MAX_VOCAB - 1), Str(length=1), max_items=MAX_VOCAB),
               "stoi": Optional(Map(Str(length=1), Int(0, MAX_VOCAB - 1)))})
MODEL_ARGS = Object({"vocab_size": Int(1, MAX_VOCAB), "block_size": Int(1),
                     "n_layer": Int(1), "n_head": Int(1), "n_embd": Int(1),
                     "dropout": Optional(Number(0, 1, high_open=True), 0.0),
                     "bias": Optional(Bool(), True)})


def checkpoint_schema(torch):
    """What import reads from ckpt.pt (torch is imported only when it is needed)."""
    tensor = Leaf("a torch.Tensor", lambda v: isinstance(v, torch.Tensor))
    return Object({"model": Map(Str(), tensor), "model_args": MODEL_ARGS,
                   "iter_num": Optional(Int(0), 0),
                   "best_val_loss": Optional(Number(0), NO_BEST_LOSS)})


def read_meta(path):
    """CharTokenizer from nanoGPT's meta.pkl (plain data only); FileError saying why not."""
    meta = check(load_plain(path), META, path)
    itos, stoi = meta["itos"], meta["stoi"]
    if sorted(itos) != list(range(len(itos))):
        raise FileError(f"{path}: itos maps the ids {shown(sorted(itos))}; expected 0 .. "
                        f"{len(itos) - 1} without gaps")
    chars = [itos[i] for i in range(len(itos))]
    if stoi is not None and stoi != {ch: i for i, ch in enumerate(chars)}:
        raise FileError(f"{path}: stoi is not the inverse of itos")
    if meta["vocab_size"] not in (None, len(chars)):
        raise FileError(f"{path}: vocab_size is {meta['vocab_size']} but itos maps "
                        f"{len(chars)} ids")
    try:
        return CharTokenizer(chars)
    except ValueError as error:  # a repeated character
        raise FileError(f"{path}: itos: {error}") from None


def _torch_reason(error):
    """The line of torch.load's (many-line) message that says what was refused."""
    lines = [ln.strip() for ln in str(error).splitlines() if ln.strip()] or [type(error).__name__]
    why = next((ln for ln in lines if "WeightsUnpickler error" in ln), lines[0])
    return re.sub(r"\x1b\[[0-9;]*m", "", why)[:300]


def _read_checkpoint(torch, path):
    """ckpt.pt's fields, checked (checkpoint_schema), its 0-d tensors made Python numbers."""
    scan_torch_pickle(path)
    try:
        checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, OSError, EOFError, ValueError, TypeError,
            KeyError, AttributeError, IndexError, MemoryError) as error:
        raise FileError(f"{path} is not a readable nanoGPT checkpoint "
                        f"({_torch_reason(error)})") from None
    if type(checkpoint) is dict:  # nanoGPT saves best_val_loss as a 0-d tensor
        for key in ("iter_num", "best_val_loss"):
            value = checkpoint.get(key)
            if isinstance(value, torch.Tensor) and value.numel() == 1:
                checkpoint[key] = value.item()
    return check(checkpoint, checkpoint_schema(torch), path)


def _to_numpy(torch, tensor, name, path):
    """`tensor` as a float32 numpy array; FileError unless it is a dense float tensor with
    no more elements than its storage holds (so the copy is at most twice the file's bytes)."""
    if (tensor.layout != torch.strided or not tensor.is_floating_point()
            or tensor.is_complex()):
        raise FileError(f"{path}: model[{name!r}] is a {tensor.layout} {tensor.dtype} tensor; "
                        "expected dense floats")
    if tensor.numel() * tensor.element_size() > tensor.untyped_storage().nbytes():
        raise FileError(f"{path}: model[{name!r}] has shape {tuple(tensor.shape)}, more "
                        "elements than its storage holds (strides that repeat them)")
    return tensor.detach().to(torch.float32).numpy()


def import_nanogpt(path, meta_path=None):
    """(model, tokenizer, train_state) from nanoGPT's ckpt.pt and meta.pkl (default: next to it).

    Reads with torch.load(weights_only=True), which refuses anything but tensors and plain
    data, after a scan of its pickle (scan_torch_pickle). Every field used is checked
    (checkpoint_schema, META) before the model is built. Raises FileNotFoundError for a missing
    file, FileError (a ValueError) naming the file and the field that our GPT cannot hold.
    """
    torch = _torch("reading a nanoGPT ckpt.pt")
    meta_path = meta_path or os.path.join(os.path.dirname(path), META_FILE)
    if not os.path.isfile(meta_path):
        raise FileNotFoundError(
            f"no {META_FILE} at {meta_path!r}: without its character map a nanoGPT model "
            "uses GPT-2's BPE tokens, which microtensor's character GPT cannot hold (nanoGPT "
            "keeps it in data/<dataset>/meta.pkl; give it with --meta)")
    checkpoint = _read_checkpoint(torch, path)
    args = checkpoint["model_args"]
    try:
        config = GPTConfig(**args)
    except ValueError as error:  # n_embd not divisible by n_head
        raise FileError(f"{path}: model_args: {error}") from None
    tokenizer = read_meta(meta_path)
    if tokenizer.vocab_size != config.vocab_size:
        raise FileError(f"{path} has vocab_size {config.vocab_size} but {meta_path!r} maps "
                        f"{tokenizer.vocab_size} characters; every id needs exactly one")
    state = {}
    for name, tensor in checkpoint["model"].items():
        short = name.removeprefix(COMPILED_PREFIX)
        if short.endswith(".attn.bias"):  # the causal-mask buffer of older nanoGPT versions
            continue
        short = short.removeprefix(PREFIX)
        array = _to_numpy(torch, tensor, name, path)
        state[short] = np.ascontiguousarray(array.T if _is_linear(short) else array)
    head = state.pop("lm_head.weight", None)
    if head is not None and not np.array_equal(head, state.get("wte.weight")):
        raise FileError(f"{path}: lm_head.weight differs from transformer.wte.weight; "
                        "microtensor's GPT ties its head to the token embedding")
    model = load_gpt2_state(config, state, path)
    best = checkpoint["best_val_loss"]
    train_state = {"iter": checkpoint["iter_num"],
                   "best_val_loss": best if best < NO_BEST_LOSS else None,
                   "imported_from": "nanoGPT"}
    return model, tokenizer, train_state
