"""Saving and loading a model's checkpoint in its --out directory (out_dir.py): the model's
parameters and the optimizer's buffers as arrays, the run's notes in config.json, as nanoGPT's
`train.py` keeps model, optimizer, model_args, iter_num and best_val_loss in its ckpt.pt.

A save writes its new files (each atomically), then config.json, then deletes what the old
config.json named: a crash leaves the old checkpoint or the new, never a mix. A model class names
its kind and config class (`GPT.kind`, `GPT.config_class`); the config has `to_dict()`,
`from_dict(d)`, and may have `schema()` and `num_elements()`, checked before the model is built.
"""
import json
import os
from dataclasses import dataclass, field

import numpy as np

from ..gpt import GPT
from ..schema import FileError, Object, check, shown
from ..seq2seq import Seq2SeqTransformer
from ..tokenizer import CharTokenizer
from ..tokenizer_choice import load_tokenizer
from .out_dir import (
    CONFIG_FILE,
    FORMAT,
    SNAPSHOT_NOTES,
    VERSION,
    VOCAB,
    CheckpointError,
    atomic_write,
    load_snapshot,
    our_files,
    read_manifest,
    sha256,
)

MODELS = {model.kind: model for model in (GPT, Seq2SeqTransformer)}  # kind -> model class

# --- saving --------------------------------------------------------------------------------

@dataclass
class Snapshot:
    """The best or latest of a checkpoint: {name: array} at iteration `iter`, its val_loss (None
    when not measured) and `state`, JSON notes for config.json (the training state)."""
    iter: int
    val_loss: object
    arrays: dict
    state: dict = field(default_factory=dict)

    def __post_init__(self):  # numpy's scalars (np.int64(7)) as the JSON numbers they hold
        self.iter, self.val_loss = (v.item() if isinstance(v, np.generic) else v
                                    for v in (self.iter, self.val_loss))


def model_arrays(model):
    """{"model/<parameter name>": array} of `model`'s state_dict, one array per parameter: a
    tied parameter under its first name only (as safetensors' save_model keeps one name of
    shared tensors); load_model_arrays reads it into each of its names. The arrays are views
    of the parameters (state_dict's): save them before the next step changes them."""
    state = model.state_dict()
    return {f"model/{name}": state[name] for name, _ in model.named_parameters()}


def optimizer_arrays(optimizer):
    """(arrays, param_groups) of `optimizer.state_dict()`: buffers as "optimizer/<i>/<name>"."""
    snapshot = optimizer.state_dict()
    arrays = {f"optimizer/{index}/{name}": np.asarray(value)
              for index, buffers in snapshot["state"].items() for name, value in buffers.items()}
    return arrays, snapshot["param_groups"]


def save_checkpoint(out_dir, model, info, best=None, latest=None, replace=False, files=()):
    """Write `model`'s checkpoint into out_dir (created if needed); returns its manifest.

    info: JSON-safe notes about the run (for a GPT: "vocab", the settings, the data).
    best, latest: `Snapshot`s; None keeps the one in out_dir (an evaluation that did not
    improve rewrites only the latest). replace=True keeps nothing of out_dir, even a broken
    checkpoint. files: other files of ours in out_dir (metrics.jsonl), recorded for
    open_out_dir. Deletes only what the old config.json named. Raises, before anything is
    written, TypeError for a model of no registered kind; CheckpointError for what load_model
    would refuse, a None snapshot with none to keep, or a broken config.json (unless replace).
    """
    out_dir = os.fspath(out_dir)
    path, kind = os.path.join(out_dir, CONFIG_FILE), getattr(type(model), "kind", None)
    if MODELS.get(kind) is not type(model):
        raise TypeError(f"save_checkpoint: {type(model).__name__} is no model kind of "
                        f"checkpoints ({sorted(MODELS)})")
    try:
        json.dumps(info, ensure_ascii=False).encode("utf-8")
    except (TypeError, ValueError) as error:
        raise CheckpointError(f"save_checkpoint: info cannot be written as UTF-8 JSON "
                              f"({error})") from None
    try:
        old = read_manifest(out_dir) or {}
    except CheckpointError:
        if not replace:
            raise
        old = {}
    for which, snapshot in (("best", best), ("latest", latest)):
        if snapshot is not None:
            check({"iter": snapshot.iter, "val_loss": snapshot.val_loss},
                  Object(SNAPSHOT_NOTES), path, which)
            check_model_arrays(model, snapshot.arrays, f"{path} ({which} snapshot)")
        elif replace or which not in old:
            raise CheckpointError(f"save_checkpoint: {out_dir} has no {which} snapshot to keep; "
                                  "pass one")
    _model_config(type(model).config_class, model.config.to_dict(), path)
    os.makedirs(out_dir, exist_ok=True)
    number = old.get("save", 0) + 1  # new file names, so the old checkpoint stays whole
    manifest = {"format": FORMAT, "version": VERSION, "save": number, "kind": kind,
                "model_config": model.config.to_dict(), "info": info, "files": sorted(files),
                "best": old.get("best"), "latest": old.get("latest")}
    for which, snapshot in (("best", best), ("latest", latest)):
        if snapshot is not None:
            name = f"{which}.{number}.npz"
            file = os.path.join(out_dir, name)
            atomic_write(file, lambda f, arrays=snapshot.arrays: np.savez(f, **arrays))
            manifest[which] = {"iter": snapshot.iter, "val_loss": snapshot.val_loss, "file": name,
                               "bytes": os.path.getsize(file), "sha256": sha256(file),
                               **snapshot.state}
    text = json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"
    atomic_write(path, lambda f: f.write(text.encode("utf-8")))
    keep = our_files(manifest) - {f"{w}.{number + 1}.npz" for w in ("best", "latest")}
    for name in sorted(our_files(old) - keep if old else ()):  # the old files, a crash's strays
        if os.path.isfile(os.path.join(out_dir, name)):
            os.remove(os.path.join(out_dir, name))
    return manifest


def save_model(out_dir, model, tokenizer, iter=0, info=None):
    """A GPT checkpoint of `model` alone, its best and latest these weights, without training
    state (an imported model): `sample`, `graph` and `export` read it, `train --resume` cannot.
    Replaces a checkpoint in out_dir."""
    snapshot = Snapshot(iter, None, model_arrays(model))
    return save_checkpoint(out_dir, model, {**tokenizer.to_info(), **(info or {})},
                           best=snapshot, latest=snapshot, replace=True)


# --- loading -------------------------------------------------------------------------------

def _model_config(config_class, d, path):
    """config_class.from_dict(d), its JSON types checked first when it has a schema()."""
    if hasattr(config_class, "schema"):
        check(d, config_class.schema(), path, "model_config")
    try:
        return config_class.from_dict(d)
    except FileError:
        raise
    except (ValueError, TypeError) as error:
        raise CheckpointError(f"{path}: model_config is not valid: {error}") from None


def check_model_arrays(model, arrays, path):
    """The "model/..." arrays as {parameter name: array}, checked against `model`:
    CheckpointError naming `path` for a missing, extra, misshapen, non-float or non-finite one."""
    weights = {name[len("model/"):]: a for name, a in arrays.items() if name.startswith("model/")}
    expected = dict(model.named_parameters())
    missing, extra = sorted(set(expected) - set(weights)), sorted(set(weights) - set(expected))
    if missing or extra:
        raise CheckpointError(f"{path} does not fit its model_config: missing arrays "
                              f"{missing[:3]}, unexpected arrays {extra[:3]}")
    for name, array in weights.items():
        if array.shape != expected[name].shape or array.dtype.kind != "f":
            raise CheckpointError(f"{path}: {name} is {array.dtype} of shape {array.shape}; "
                                  f"its model_config needs floats of shape {expected[name].shape}")
        if not np.isfinite(array).all():  # training never saves these; sampling would be noise
            raise CheckpointError(f"{path}: {name} holds NaN or infinite values")
    return weights


def load_model_arrays(model, arrays, path):
    """Copy the "model/..." arrays into `model`, checked (check_model_arrays); a tied
    parameter's array, saved under its first name, goes to each of its names."""
    weights = check_model_arrays(model, arrays, path)
    first = {id(p): name for name, p in model.named_parameters()}
    model.load_state_dict({name: weights[first[id(p)]]
                           for name, p in model.named_parameters(remove_duplicate=False)})


def _grouping(sizes):
    """Groups of these sizes in words: "2 parameter groups (12 and 8 parameters)"."""
    if len(sizes) == 1:
        return f"1 parameter group of {sizes[0]} parameters"
    return (f"{len(sizes)} parameter groups ({', '.join(map(str, sizes[:-1]))} and {sizes[-1]} "
            "parameters)")


def load_optimizer(optimizer, arrays, param_groups, path):
    """Inverse of `optimizer_arrays`: restore `optimizer` from the arrays read from `path`,
    checked to be as our optimizers write them: the same buffers for every parameter, "step"
    a 0-d integer count >= 0, the others finite floats of their parameter's shape (a 0-d one would
    broadcast silently), for parameter groups of the same sizes and hyper-parameters (but lr)
    as `optimizer`'s, which the run's settings made."""
    saved, ours = ([len(group["params"]) for group in groups]
                   for groups in (param_groups, optimizer.param_groups))
    if saved != ours:
        raise CheckpointError(f"{path}: the optimizer state has {_grouping(saved)}; this run's "
                              f"optimizer has {_grouping(ours)}: it was written by another "
                              "version; start afresh with --overwrite")
    for i, (saved_group, group) in enumerate(zip(param_groups, optimizer.param_groups)):
        for key in sorted(group.keys() - {"params", "lr"}):  # lr is set at each step
            ours = list(group[key]) if isinstance(group[key], tuple) else group[key]  # as JSON
            if saved_group.get(key) is not None and saved_group[key] != ours:
                raise CheckpointError(
                    f"{os.path.join(os.path.dirname(path), CONFIG_FILE)}: latest.param_groups[{i}]."
                    f"{key} is {shown(saved_group[key])}; its settings (info.train_config) give "
                    f"{ours}, and they say how the state trains on")
    params = [p for group in optimizer.param_groups for p in group["params"]]
    state = {}
    for name, array in arrays.items():
        if not name.startswith("optimizer/"):
            continue
        index, _, key = name[len("optimizer/"):].partition("/")
        if not index.isdigit() or not key:
            raise CheckpointError(f"{path}: unexpected array {name!r}; expected "
                                  "optimizer/<index>/<buffer>")
        index, step = int(index), key == "step"
        shape = () if step else params[index].shape if index < len(params) else array.shape
        if (array.shape != shape or array.dtype.kind not in ("iu" if step else "f")
                or not np.isfinite(array).all() or (step and array < 0)):
            raise CheckpointError(f"{path}: {name} is {array.dtype} of shape {array.shape}; "
                                  "expected " + ("a count >= 0 (a 0-d integer)" if step else
                                                 f"floats of its parameter's shape {shape}"))
        state.setdefault(index, {})[key] = array
    names = {frozenset(buffers) for buffers in state.values()}
    if len(names) > 1:
        raise CheckpointError(f"{path}: the parameters' optimizer buffers differ "
                              f"({sorted(sorted(n) for n in names)}); expected the same for each")
    try:
        optimizer.load_state_dict({"state": state, "param_groups": param_groups})
    except (ValueError, KeyError, TypeError) as error:
        raise CheckpointError(f"{path}: the optimizer state does not fit the model: "
                              f"{error}") from None


def load_model(out_dir, which="best", kind=None):
    """(model, manifest): the "best" (default) or "latest" model in out_dir, in eval mode.

    kind: the model kind the caller needs ("gpt", ...), or None for any registered one. Raises
    FileNotFoundError when there is no checkpoint, CheckpointError when it is broken (a
    model_config far larger than the snapshot included, before anything is allocated).
    """
    out_dir = os.fspath(out_dir)
    manifest = read_manifest(out_dir) if os.path.isdir(out_dir) else None
    if manifest is None:
        raise FileNotFoundError(f"no checkpoint in {out_dir} ("
                                + (f"no {CONFIG_FILE}" if os.path.isdir(out_dir) else
                                   "a file" if os.path.exists(out_dir) else "it does not exist")
                                + "): train one with `microtensor train --out DIR`")
    arrays, snapshot_path = load_snapshot(out_dir, which, manifest)
    path, found = os.path.join(os.fspath(out_dir), CONFIG_FILE), manifest["kind"]
    if kind is not None and found != kind:
        raise CheckpointError(f"{path} holds a {shown(found)} model, not a {kind!r} one")
    if found not in MODELS:
        raise CheckpointError(f"{path}: unknown model kind {shown(found)}; known: {sorted(MODELS)}")
    config = _model_config(MODELS[found].config_class, manifest["model_config"], path)
    elements = sum(a.size for name, a in arrays.items() if name.startswith("model/"))
    if hasattr(config, "num_elements") and config.num_elements() > 2 * elements + (1 << 20):
        raise CheckpointError(f"{path}: model_config describes a model of "
                              f"{config.num_elements():,} numbers; the snapshot holds "
                              f"{elements:,}")
    model = MODELS[found](config)
    load_model_arrays(model, arrays, snapshot_path)
    return model.eval(), manifest


def load_vocabularies(out_dir, model, manifest, tokenizer_class, **sizes):
    """{info field: tokenizer_class(its vocabulary)} for each `sizes` {info field: the
    model_config field of its size}; CheckpointError naming config.json for a vocabulary that is
    not one (VOCAB, or a repeated character) or does not fit the model."""
    path = os.path.join(os.fspath(out_dir), CONFIG_FILE)
    info = check(manifest["info"], Object({name: VOCAB for name in sizes}), path, "info")
    tokenizers = {}
    for name, size in sizes.items():
        try:
            tokenizers[name] = tokenizer_class(info[name])
        except ValueError as error:
            raise CheckpointError(f"{path}: info.{name}: {error}") from None
        if tokenizers[name].vocab_size != getattr(model.config, size):
            raise CheckpointError(f"{path}: info.{name} has {tokenizers[name].vocab_size} "
                                  f"characters but model_config.{size} is "
                                  f"{getattr(model.config, size)}")
    return tokenizers


def load_checkpoint(out_dir, which="best"):
    """(GPT, CharTokenizer, manifest) of a GPT checkpoint (by default its best model)."""
    model, manifest = load_model(out_dir, which, kind="gpt")
    tokenizer = load_tokenizer(out_dir, model, manifest, lambda: load_vocabularies(
        out_dir, model, manifest, CharTokenizer, vocab="vocab_size")["vocab"])
    return model, tokenizer, manifest
