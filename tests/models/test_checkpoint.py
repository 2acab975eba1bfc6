"""Checkpoints: an exact round trip, best and latest side by side, atomic saves.

Also one-line errors for every broken file, and a second model kind.
"""
import hashlib
import json
import os
from dataclasses import asdict, dataclass

import numpy as np
import pytest

import microtensor
import nn
from models import GPT, CharTokenizer, GPTConfig
from models.training import checkpoint as ckpt
from models.training.checkpoint import Snapshot, load_checkpoint
from models.training.out_dir import CONFIG_FILE, CheckpointError, CheckpointExists
from models.training.run import TrainingRun, configure_optimizer
from models.training.settings import TrainConfig

TEXT = "hello, world\n"


def gpt(seed=0, **config):
    microtensor.manual_seed(seed)
    tok = CharTokenizer.from_text(TEXT)
    return GPT(GPTConfig(vocab_size=tok.vocab_size, block_size=8, n_layer=1, n_head=2,
                         n_embd=8, **config)), tok


def save(out, model, tok, it=7, best=True, latest=True, replace=False):
    arrays = ckpt.model_arrays(model)
    return ckpt.save_checkpoint(out, model, {"vocab": tok.chars},
                                best=Snapshot(it, 1.5, arrays) if best else None,
                                latest=Snapshot(it, 1.5, arrays, {"note": it}) if latest else None,
                                replace=replace)


def files(out):
    return {name: (out / name).read_bytes() for name in sorted(os.listdir(out))}


@pytest.mark.parametrize("config", [{}, dict(bias=False, norm_first=False, activation="relu")])
def test_round_trip_gives_identical_logits(tmp_path, config):
    model, tok = gpt(**config)
    save(tmp_path, model, tok)
    loaded, loaded_tok, manifest = load_checkpoint(tmp_path)
    assert loaded.config == model.config and loaded_tok.chars == tok.chars
    assert manifest["best"]["iter"] == 7 and manifest["latest"]["note"] == 7
    assert not loaded.training
    idx = np.array([tok.encode("hello")])
    model.eval()
    np.testing.assert_array_equal(loaded(idx)[0].data, model(idx)[0].data)


def test_best_and_latest_are_separate_and_an_unchanged_best_is_kept(tmp_path):
    best_model, tok = gpt(seed=0)
    save(tmp_path, best_model, tok, it=3)
    later, _ = gpt(seed=1)
    manifest = save(tmp_path, later, tok, it=9, best=False)
    assert (manifest["best"]["iter"], manifest["latest"]["iter"]) == (3, 9)
    best, _, _ = load_checkpoint(tmp_path)
    latest, _, _ = load_checkpoint(tmp_path, which="latest")
    for name, array in best_model.state_dict().items():
        assert np.array_equal(best.state_dict()[name], array), f"best {name}: expected iter 3's"
        assert np.array_equal(latest.state_dict()[name], later.state_dict()[name])
    assert sorted(os.listdir(tmp_path)) == sorted([CONFIG_FILE, manifest["best"]["file"],
                                                   manifest["latest"]["file"]])


def test_a_save_removes_the_files_it_replaces_and_strays_of_a_crashed_save(tmp_path):
    model, tok = gpt()
    first = save(tmp_path, model, tok)
    crashed = f"best.{first['save'] + 1}.npz"  # what a save cut off before config.json leaves
    (tmp_path / crashed).write_bytes(b"left by a crash")
    (tmp_path / "best.99.npz").write_bytes(b"a name like ours, the user's own file")
    second = save(tmp_path, model, tok, best=False)
    assert sorted(os.listdir(tmp_path)) == sorted([CONFIG_FILE, "best.99.npz",
                                                   second["best"]["file"],
                                                   second["latest"]["file"]])
    assert first["latest"]["file"] != second["latest"]["file"]


@pytest.mark.parametrize("crash_on", ["best", "latest", CONFIG_FILE])
def test_a_crash_during_a_save_leaves_the_previous_checkpoint_whole(tmp_path, monkeypatch,
                                                                    crash_on):
    model, tok = gpt(seed=0)
    save(tmp_path, model, tok, it=3)
    before = files(tmp_path)
    real = ckpt.atomic_write

    def crash(path, write):
        if os.path.basename(path).startswith(crash_on):
            raise KeyboardInterrupt  # e.g. a second Ctrl-C in the middle of the save
        real(path, write)

    monkeypatch.setattr(ckpt, "atomic_write", crash)
    with pytest.raises(KeyboardInterrupt):
        save(tmp_path, gpt(seed=1)[0], tok, it=9)
    monkeypatch.undo()
    loaded, _, manifest = load_checkpoint(tmp_path, which="latest")
    assert manifest["latest"]["iter"] == 3, "expected the old checkpoint, whole"
    assert all(files(tmp_path)[name] == data for name, data in before.items())
    for name, array in model.state_dict().items():
        assert np.array_equal(loaded.state_dict()[name], array)


def test_save_model_writes_a_checkpoint_without_training_state(tmp_path):
    model, tok = gpt()
    ckpt.save_model(tmp_path, model, tok)
    _, loaded_tok, manifest = load_checkpoint(tmp_path)
    assert loaded_tok.chars == tok.chars and "rng" not in manifest["latest"]


# --- broken checkpoints: one line naming the file and the fault ------------------------------

def rewrite_snapshot(out, which, change):
    """Replace the arrays of snapshot `which` by change(arrays), with a matching manifest:
    what a foreign or buggy writer would leave."""
    manifest = json.loads((out / CONFIG_FILE).read_text())
    path = out / manifest[which]["file"]
    arrays = dict(np.load(path))
    change(arrays)
    with open(path, "wb") as f:
        np.savez(f, **arrays)
    data = path.read_bytes()
    manifest[which].update(bytes=len(data), sha256=hashlib.sha256(data).hexdigest())
    (out / CONFIG_FILE).write_text(json.dumps(manifest))


def truncate(out):
    path = out / json.loads((out / CONFIG_FILE).read_text())["best"]["file"]
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def flip_a_byte(out):
    path = out / json.loads((out / CONFIG_FILE).read_text())["best"]["file"]
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def delete_best(out):
    os.remove(out / json.loads((out / CONFIG_FILE).read_text())["best"]["file"])


def set_config(text):
    return lambda out: (out / CONFIG_FILE).write_text(text)


def drop_array(arrays):
    del arrays["model/wte.weight"]


def add_array(arrays):
    arrays["model/extra"] = np.zeros(3, np.float32)


def reshape_array(arrays):
    arrays["model/wte.weight"] = arrays["model/wte.weight"][:, :4]


def pickle_inside(arrays):
    arrays["model/wte.weight"] = np.array([object()], dtype=object)


def edit_manifest(change):
    """A damage that rewrites config.json as change(manifest) returns it (a hand edit)."""
    def damage(out):
        manifest = json.loads((out / CONFIG_FILE).read_text())
        (out / CONFIG_FILE).write_text(json.dumps(change(manifest)))
    return damage


def model_config(**changes):
    return edit_manifest(lambda m: {**m, "model_config": {**m["model_config"], **changes}})


def compress(out):
    """The best snapshot rewritten by np.savez_compressed: a member could unpack 1000x larger."""
    manifest = json.loads((out / CONFIG_FILE).read_text())
    path = out / manifest["best"]["file"]
    arrays = dict(np.load(path))
    with open(path, "wb") as f:
        np.savez_compressed(f, **arrays)
    data = path.read_bytes()
    manifest["best"].update(bytes=len(data), sha256=hashlib.sha256(data).hexdigest())
    (out / CONFIG_FILE).write_text(json.dumps(manifest))


def nested(value, depth):
    for _ in range(depth):
        value = [value]
    return value


BROKEN = {
    "the string false for bias": (model_config(bias="false"),
                                  "model_config.bias is 'false' (a string); expected true or "
                                  "false"),
    "a float for a size": (model_config(n_embd=16.0), "model_config.n_embd is 16.0 (a number)"),
    "a model far larger than its snapshot": (model_config(n_layer=10 ** 6),
                                             "model_config describes a model of"),
    "a compressed .npz member": (compress, "is not a stored .npy array"),
    "JSON nested 100 deep": (edit_manifest(lambda m: {**m, "info": {"x": nested(1, 100)}}),
                             "nests arrays or objects more than 64 deep"),
    "a vocabulary that is a string": (edit_manifest(lambda m: {**m, "info": {
        **m["info"], "vocab": "".join(m["info"]["vocab"])}}), "info.vocab is"),
    "a NaN validation loss": (edit_manifest(lambda m: {**m, "best": {**m["best"],
                                                                      "val_loss": float("nan")}}),
                              "best.val_loss is nan (a number); expected null or a finite"),
    "a number for the hash": (edit_manifest(lambda m: {**m, "best": {**m["best"], "sha256": 5}}),
                              "best.sha256 is 5 (an integer); expected a string of 64"),
    "half a .npz": (truncate, "bytes"),
    "a changed byte": (flip_a_byte, "SHA-256"),
    "a missing file": (delete_best, "is missing"),
    "config.json that is not JSON": (set_config("{not json"), "is not JSON"),
    "a foreign config.json": (set_config('{"format": "something-else"}'), "not a microtensor"),
    "a version 1 checkpoint": (set_config('{"format": "microtensor-char-gpt"}'), "older"),
    "a missing array": (lambda out: rewrite_snapshot(out, "best", drop_array), "missing arrays"),
    "an extra array": (lambda out: rewrite_snapshot(out, "best", add_array), "unexpected arrays"),
    "a wrong shape": (lambda out: rewrite_snapshot(out, "best", reshape_array), "shape"),
    "a pickle inside": (lambda out: rewrite_snapshot(out, "best", pickle_inside), "pickle"),
}


@pytest.mark.parametrize("fault", sorted(BROKEN))
def test_a_broken_checkpoint_is_one_line_naming_the_file(tmp_path, fault):
    model, tok = gpt()
    save(tmp_path, model, tok)
    damage, message = BROKEN[fault]
    damage(tmp_path)
    with pytest.raises(CheckpointError) as caught:
        load_checkpoint(tmp_path)
    text = str(caught.value)
    assert "\n" not in text and str(tmp_path) in text and message in text, (
        f"{fault}: expected one line naming {tmp_path} and {message!r}; got {text!r}")


def test_missing_directory_and_empty_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_checkpoint(tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        load_checkpoint(tmp_path)


def test_a_seq2seq_kind_is_refused_where_a_gpt_is_expected(tmp_path):
    model, tok = gpt()
    save(tmp_path, model, tok)
    manifest = json.loads((tmp_path / CONFIG_FILE).read_text())
    manifest["kind"] = "seq2seq"
    (tmp_path / CONFIG_FILE).write_text(json.dumps(manifest))
    with pytest.raises(CheckpointError, match="holds a 'seq2seq' model, not a 'gpt' one"):
        load_checkpoint(tmp_path)


# --- a second model kind uses the same files and the same run machinery --------------------

@dataclass
class ToyConfig:
    n: int

    def to_dict(self):
        return asdict(self)

    @classmethod
    def from_dict(cls, d):
        return cls(**d)


class Toy(nn.Module):
    kind, config_class = "toy", ToyConfig

    def __init__(self, config):
        super().__init__()
        self.config = config
        self.proj = nn.Linear(config.n, 1)


INFO = {"vocab": None, "train_config": {}, "data": {}}  # what a resume needs in config.json


def started(run, model, it=5, val_loss=0.25):
    """`run` with the toy model and an optimizer, as after an evaluation at iteration `it`."""
    run.start(model, nn.optim.AdamW(model.parameters()), INFO)
    run.last_eval, run.best_val_loss = {"iter": it, "val_loss": val_loss}, val_loss
    return run


def test_another_model_kind_uses_the_same_checkpoints_and_run_policy(tmp_path, monkeypatch):
    monkeypatch.setitem(ckpt.MODELS, "toy", Toy)
    model = Toy(ToyConfig(3))
    run = TrainingRun(tmp_path)
    started(run, model).save_state(5, 0.25, new_best=True)
    loaded, manifest = ckpt.load_model(tmp_path, kind="toy")
    assert manifest["kind"] == "toy" and manifest["latest"]["last_eval"]["iter"] == 5
    assert np.array_equal(loaded.proj.weight.data, model.proj.weight.data)
    with pytest.raises(CheckpointExists, match="latest iter 5 .val loss 0.2500."):
        TrainingRun(tmp_path)
    resumed = TrainingRun(tmp_path, resume=True, kind="toy")
    assert resumed.manifest["latest"]["iter"] == 5
    with pytest.raises(CheckpointError, match="holds a 'toy' model, not a 'gpt' one"):
        load_checkpoint(tmp_path)
    with pytest.raises(CheckpointError, match="holds a 'toy' model; this command continues 'gpt'"):
        TrainingRun(tmp_path, resume=True)


def test_a_second_run_into_the_same_out_stops_at_its_first_write_until_the_first_ends(tmp_path):
    pytest.importorskip("fcntl")  # POSIX locks (Windows has none)
    model = Toy(ToyConfig(3))
    first, second = TrainingRun(tmp_path / "out"), TrainingRun(tmp_path / "out")
    first.log({"iter": 0})
    with pytest.raises(CheckpointError, match="another training run is writing there"):
        second.log({"iter": 0})
    with pytest.raises(CheckpointError, match="another training run is writing there"):
        started(second, model).save_state(0, 1.0, new_best=True)
    lines = (tmp_path / "out" / "metrics.jsonl").read_text().splitlines()
    assert lines == ['{"iter": 0}'], f"expected only the first run's line; got {lines}"
    first.release()
    second.log({"iter": 1})  # the first run has ended: the directory is free
    second.release()


def test_a_resume_into_a_locked_out_changes_nothing(tmp_path, monkeypatch):
    pytest.importorskip("fcntl")
    monkeypatch.setitem(ckpt.MODELS, "toy", Toy)
    model = Toy(ToyConfig(3))
    running = TrainingRun(tmp_path)
    started(running, model).save_state(5, 0.25, new_best=True)
    running.log({"iter": 5})
    running.log({"iter": 8})  # the running job is past its latest save
    resumed = TrainingRun(tmp_path, resume=True, kind="toy")
    with pytest.raises(CheckpointError, match="another training run is writing there"):
        resumed.start_metrics()  # would drop the lines after the latest state (iter 5)
    lines = (tmp_path / "metrics.jsonl").read_text().splitlines()
    assert lines == ['{"iter": 5}', '{"iter": 8}'], f"expected metrics.jsonl untouched; got {lines}"
    running.release()


def test_a_resume_whose_optimizer_groups_differ_names_both_groupings_in_one_line(tmp_path):
    """As a `translate train` checkpoint written before its optimizer had configure_optimizer's
    two groups (decayed matrices first): each buffer would meet another parameter's shape."""
    model, tok = gpt()
    one_group = nn.optim.AdamW(model.parameters())
    run = TrainingRun(tmp_path)
    run.start(model, one_group, INFO, progress=False)
    idx = np.array([tok.encode("hello, w")])
    model(idx[:, :-1], idx[:, 1:])[1].backward()
    one_group.step()
    run.save_state(1, 2.0, new_best=True)
    run.release()
    two_groups = configure_optimizer(model, TrainConfig())
    sizes = [len(group["params"]) for group in two_groups.param_groups]
    with pytest.raises(CheckpointError) as error:
        TrainingRun(tmp_path, resume=True).start(model, two_groups, INFO, progress=False)
    assert str(error.value) == (
        f"{tmp_path / 'latest.1.npz'}: the optimizer state has 1 parameter group of "
        f"{sum(sizes)} parameters; this run's optimizer has 2 parameter groups ({sizes[0]} and "
        f"{sizes[1]} parameters): it was written by another version; start afresh with "
        "--overwrite"), f"got {error.value}"
