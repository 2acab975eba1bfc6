"""Loader fuzz (issue 16): every loader, given valid files with fields replaced by other JSON
types, nested, blown up, truncated or corrupted, ends within TIME_LIMIT seconds, either with a
model that passes the checks `sample` makes, or with one `FileError` line naming the file.

Loaders: our checkpoints (config.json + .npz), Hugging Face GPT-2 directories (config.json,
tokenizer.json, model.safetensors) and nanoGPT (ckpt.pt + meta.pkl). Each case runs in a
forked child (mt_testing.run_bounded), so the time limit is enforced (the kernel stops a child
past TIME_LIMIT seconds of CPU time) and a crash or a memory blow-up (the child's address
space is capped) is a failure, not a lost test run.
"""
import contextlib
import copy
import json
import os
import pickle
import shutil
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mt_testing import TIME_LIMIT, run_bounded

import microtensor
from models import GPT, CharTokenizer, GPTConfig
from models.training.checkpoint import load_checkpoint, save_model

torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")
pytest.importorskip("tokenizers")

from models.interop import export_hf, export_nanogpt, import_hf, import_nanogpt  # noqa: E402

CASES = 80                        # hypothesis examples per file kind
FUZZ = settings(max_examples=CASES, deadline=None, derandomize=True,
                suppress_health_check=list(HealthCheck))
COUNTS = {}                       # loader -> {outcome: cases}, printed at the end


def record(loader, result, where):
    """Assert the case ended well; count its outcome."""
    outcome = result[0] if result[0] != "error" else "refused"
    COUNTS.setdefault(loader, {}).setdefault(outcome, 0)
    COUNTS[loader][outcome] += 1
    assert result[0] in ("ok", "error"), \
        f"{loader}: expected a result within {TIME_LIMIT} s of CPU time, got {result}"
    if result[0] == "error":
        _, cls, message, ours = result
        assert ours, f"{loader}: expected a FileError, got {cls}: {message}"
        assert "\n" not in message, f"{loader}: expected one line, got {message!r}"
        assert where in message, f"{loader}: expected the message to name {where}: {message!r}"


def sample_check(model, tokenizer):
    """What `sample` does with a checkpoint: generate a few characters."""
    out = model.generate(np.array([[0]]), max_new_tokens=3, top_k=1)
    return tokenizer.decode(out[0])


def import_round_trip(load, source, out):
    """Import, write our checkpoint, read it back as `sample` does and generate."""
    model, tokenizer, notes = load(source)
    save_model(out, model, tokenizer, iter=notes.pop("iter", 0), info=notes)
    model, tokenizer, _ = load_checkpoint(out)
    return sample_check(model, tokenizer)


# --- the valid files, made once -------------------------------------------------------------

@pytest.fixture(scope="module")
def originals(tmp_path_factory):
    root = tmp_path_factory.mktemp("originals")
    microtensor.manual_seed(0)
    tok = CharTokenizer.from_text("abcdefg \n")
    model = GPT(GPTConfig(vocab_size=tok.vocab_size, block_size=8, n_layer=1, n_head=2,
                          n_embd=8)).eval()
    export_hf(model, tok, root / "hf")
    export_nanogpt(model, tok, root / "nanogpt", train_state={"iter": 5, "best_val_loss": 2.0})
    save_model(root / "ours", model, tok, iter=5)
    return root


def fresh(originals, tmp_path_factory, kind):
    case = tmp_path_factory.mktemp("case")
    shutil.copytree(originals / kind, case / kind)
    return case / kind


# --- what the fuzz puts in place of a value ------------------------------------------------

SCALARS = (st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70)
           | st.sampled_from([0, 1, -1, -5, 2 ** 31, 10 ** 9, 0.5, 1e300, "false", "true",
                              "", "12", "gpt2", "gelu", 10 ** 400])
           | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=4))
JSON_VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=3), inner, max_size=3),
                           max_leaves=6)


def paths_of(value, prefix=()):
    """Every path (a tuple of keys) into a JSON value, the root included."""
    yield prefix
    items = value.items() if isinstance(value, dict) else (
        enumerate(value) if isinstance(value, list) else ())
    for key, item in items:
        if len(prefix) < 4:
            yield from paths_of(item, prefix + (key,))


def nested(value, depth):
    for _ in range(depth):
        value = [value]
    return value


def mutate_value(value, data):
    """A copy of `value` with one place replaced, deleted, nested deep or blown up."""
    value = copy.deepcopy(value)
    paths = list(paths_of(value))
    path = data.draw(st.sampled_from(paths[:200]), label="path")
    how = data.draw(st.sampled_from(["replace", "replace", "delete", "nest", "blow up"]),
                    label="how")
    if not path:
        return data.draw(JSON_VALUES) if how == "replace" else nested(value, 3)
    parent = value
    for key in path[:-1]:
        parent = parent[key]
    key, old = path[-1], parent[path[-1]]
    if how == "delete":
        del parent[key]
    elif how == "nest":
        parent[key] = nested(old, data.draw(st.sampled_from([2, 40, 5000]), label="depth"))
    elif how == "blow up":
        parent[key] = ({f"k{i}": i for i in range(100_000)} if isinstance(old, dict)
                       else ("x" * 1_000_000 if isinstance(old, str) else [old] * 100_000))
    else:
        parent[key] = data.draw(JSON_VALUES, label="new value")
    return value


def mutate_bytes(path, data):
    """Truncate, overwrite a few bytes of, or append to the file at `path`."""
    raw = bytearray(path.read_bytes())
    how = data.draw(st.sampled_from(["truncate", "overwrite", "append"]), label="bytes")
    at = data.draw(st.integers(0, max(len(raw) - 1, 0)), label="at")
    if how == "truncate":
        raw = raw[:at]
    elif how == "overwrite":
        for i in range(data.draw(st.integers(1, 8), label="n")):
            raw[(at + i * 97) % len(raw)] = data.draw(st.integers(0, 255), label="byte")
    else:
        raw += bytes(data.draw(st.binary(min_size=1, max_size=64), label="tail"))
    path.write_bytes(bytes(raw))


@contextlib.contextmanager
def deep_recursion():
    """Let json and pickle write the 5000-deep values (the test's writers recurse)."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(30_000)
    try:
        yield
    finally:
        sys.setrecursionlimit(limit)


def mutate_json_file(path, data):
    if data.draw(st.integers(0, 4), label="raw?") == 0:
        mutate_bytes(path, data)
    else:
        value = mutate_value(json.loads(path.read_text(encoding="utf-8")), data)
        with deep_recursion():
            path.write_text(json.dumps(value), encoding="utf-8")


def mutate_tensors(state, data, numpy_arrays):
    """Replace one tensor by NaNs, integers, another shape, or delete it."""
    name = data.draw(st.sampled_from(sorted(state)), label="tensor")
    how = data.draw(st.sampled_from(["nan", "inf", "int", "shape", "delete", "scalar"]),
                    label="tensor how")
    array = np.array(state[name]) if numpy_arrays else state[name].numpy().copy()
    if how == "delete":
        del state[name]
        return
    new = {"nan": np.full_like(array, np.nan), "inf": np.full_like(array, np.inf),
           "int": array.astype(np.int64), "shape": np.zeros((3,) + array.shape, array.dtype),
           "scalar": np.array(1.0, array.dtype)}[how]
    state[name] = new if numpy_arrays else torch.from_numpy(new)


# --- one test per loader ---------------------------------------------------------------------

@FUZZ
@given(data=st.data())
def test_hugging_face_import_ends_with_a_model_sample_reads_or_one_line(originals,
                                                                       tmp_path_factory, data):
    directory = fresh(originals, tmp_path_factory, "hf")
    target = data.draw(st.sampled_from(["config.json", "tokenizer.json", "model.safetensors"]),
                       label="file")
    if target.endswith(".json"):
        mutate_json_file(directory / target, data)
    elif data.draw(st.booleans(), label="raw?"):
        mutate_bytes(directory / target, data)
    else:
        from safetensors.numpy import load_file, save_file
        state = load_file(directory / target)
        mutate_tensors(state, data, numpy_arrays=True)
        save_file(state, directory / target, metadata={"format": "pt"})
    result = run_bounded(lambda: import_round_trip(import_hf, directory,
                                                   directory.parent / "out"))
    record("Hugging Face", result, str(directory))


@FUZZ
@given(data=st.data())
def test_nanogpt_import_ends_with_a_model_sample_reads_or_one_line(originals, tmp_path_factory,
                                                                  data):
    directory = fresh(originals, tmp_path_factory, "nanogpt")
    target = data.draw(st.sampled_from(["ckpt.pt", "meta.pkl"]), label="file")
    path = directory / target
    if data.draw(st.integers(0, 3), label="raw?") == 0:
        mutate_bytes(path, data)
    elif target == "meta.pkl":
        meta = pickle.loads(path.read_bytes())  # our own file, written just now
        with deep_recursion():
            path.write_bytes(pickle.dumps(mutate_value(meta, data)))
    else:
        checkpoint = torch.load(path, weights_only=True)
        if data.draw(st.booleans(), label="tensors?"):
            mutate_tensors(checkpoint["model"], data, numpy_arrays=False)
        else:
            plain = {k: checkpoint[k] for k in ("model_args", "iter_num", "best_val_loss")}
            plain["best_val_loss"] = float(plain["best_val_loss"])
            plain = mutate_value(plain, data)
            checkpoint = {**checkpoint, **plain} if isinstance(plain, dict) else plain
            if isinstance(plain, dict):
                checkpoint = {k: v for k, v in checkpoint.items()
                              if k not in ("model_args", "iter_num", "best_val_loss") or k in plain}
        with deep_recursion():
            torch.save(checkpoint, path)
    result = run_bounded(lambda: import_round_trip(
        lambda source: import_nanogpt(str(source / "ckpt.pt")), directory,
        directory.parent / "out"))
    record("nanoGPT", result, str(directory))


@FUZZ
@given(data=st.data())
def test_our_checkpoint_loads_for_sample_or_says_what_is_wrong_in_one_line(originals,
                                                                          tmp_path_factory,
                                                                          data):
    directory = fresh(originals, tmp_path_factory, "ours")
    manifest = json.loads((directory / "config.json").read_text(encoding="utf-8"))
    snapshot = directory / manifest["best"]["file"]
    if data.draw(st.booleans(), label="config.json?"):
        mutate_json_file(directory / "config.json", data)
    else:
        if data.draw(st.booleans(), label="raw?"):
            mutate_bytes(snapshot, data)
        else:
            with np.load(snapshot) as npz:
                arrays = dict(npz)
            mutate_tensors(arrays, data, numpy_arrays=True)
            np.savez(snapshot, **arrays)
        if data.draw(st.booleans(), label="consistent?"):  # config.json updated to match
            from models.training.out_dir import sha256
            for which in ("best", "latest"):
                manifest[which].update(bytes=os.path.getsize(snapshot), sha256=sha256(snapshot))
            (directory / "config.json").write_text(json.dumps(manifest), encoding="utf-8")

    def load():
        model, tokenizer, _ = load_checkpoint(directory)
        return sample_check(model, tokenizer)

    record("our checkpoint", run_bounded(load), str(directory))


@pytest.fixture(scope="module", autouse=True)
def report_the_counts():
    """After the module: the cases per loader and their outcomes (seen with -s, or -rA)."""
    yield
    for loader, counts in COUNTS.items():
        print(f"\nloader fuzz: {loader}: {sum(counts.values())} cases, each within "
              f"{TIME_LIMIT} s of CPU time: {counts}")
