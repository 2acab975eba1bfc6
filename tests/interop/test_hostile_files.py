"""Issue 16's hostile files, through the command line: `microtensor import` of each ends at once
with exit 1 and one `error:` line naming the file and the field, writes nothing, and whatever
it accepts `sample` reads."""
import json
import pickle

import numpy as np
import pytest
from mt_testing import run_bounded

import microtensor
from models import GPT, CharTokenizer, GPTConfig
from models.cli.main import main
from models.training.checkpoint import save_model

torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")
pytest.importorskip("tokenizers")

from models.interop import export_hf, export_nanogpt  # noqa: E402


def tiny():
    microtensor.manual_seed(0)
    tok = CharTokenizer.from_text("abcdefg \n")
    return GPT(GPTConfig(vocab_size=tok.vocab_size, block_size=8, n_layer=1, n_head=2,
                         n_embd=8)).eval(), tok


def cli(argv, capfd):
    """(exit status, stderr) of `microtensor argv` run in a child stopped after 2 s of CPU."""
    result = run_bounded(lambda: main(argv))
    captured = capfd.readouterr()
    assert result[0] == "ok", f"expected an exit status within 2 s, got {result}"
    return result[1], captured.err


def refused(tmp_path, capfd, source, *names):
    """Import of `source` exits 1 with one line naming each of `names`; OUT is not created."""
    out = tmp_path / "out"
    status, err = cli(["import", "--from", str(source), "--out", str(out)], capfd)
    lines = err.strip().splitlines()
    assert status == 1 and len(lines) == 1 and lines[0].startswith("microtensor import: error:"), \
        f"expected exit 1 and one error line, got {status} and {err!r}"
    for name in names:
        assert name in lines[0], f"expected the line to name {name!r}: {lines[0]!r}"
    assert not out.exists(), "a refused import wrote into --out"
    return lines[0]


# --- nanoGPT's meta.pkl --------------------------------------------------------------------

@pytest.fixture
def nanogpt_dir(tmp_path):
    model, tok = tiny()
    export_nanogpt(model, tok, tmp_path / "nano", train_state={"iter": 5, "best_val_loss": 2.0})
    return tmp_path / "nano"


def doubled(levels):
    value = []
    for _ in range(levels):
        value = [value, value]
    return value


@pytest.mark.parametrize("meta,why", [
    (pickle.dumps(doubled(64)), "meta.pkl: the value nests lists or dicts more than 32 deep"),
    (pickle.dumps({"itos": doubled(25)}), "shared objects over and over"),
    (b"\x80\x04" + b"]" * 5000 + b"a" * 4999 + b".", "more than 32 deep"),
    (b"\x80\x04]\x94h\x00a.", "contains itself (a cycle)"),
])
def test_a_meta_pkl_nested_shared_or_cyclic_ends_at_once(tmp_path, capfd, nanogpt_dir, meta,
                                                         why):
    (nanogpt_dir / "meta.pkl").write_bytes(meta)
    refused(tmp_path, capfd, nanogpt_dir, "meta.pkl", why)


def test_the_issues_meta_pkl_is_420_bytes_or_so():
    assert len(pickle.dumps(doubled(64))) < 500


def resave(path, **changes):
    checkpoint = torch.load(path, weights_only=True)
    checkpoint.update(changes)
    torch.save(checkpoint, path)


@pytest.mark.parametrize("changes,field", [
    ({"iter_num": -5}, "iter_num is -5 (an integer); expected an integer >= 0"),
    ({"iter_num": True}, "iter_num is True (a boolean)"),
    ({"best_val_loss": float("nan")}, "best_val_loss is nan (a number); expected a finite"),
    ({"model_args": {"n_layer": "1"}}, "model_args.n_layer is '1' (a string)"),
    ({"model_args": None}, "model_args is None (null); expected an object"),
])
def test_nanogpt_fields_of_the_wrong_type_or_range_are_refused(tmp_path, capfd, nanogpt_dir,
                                                               changes, field):
    if "model_args" in changes and changes["model_args"] is not None:
        args = torch.load(nanogpt_dir / "ckpt.pt", weights_only=True)["model_args"]
        changes = {"model_args": {**args, **changes["model_args"]}}
    resave(nanogpt_dir / "ckpt.pt", **changes)
    refused(tmp_path, capfd, nanogpt_dir, "ckpt.pt", field)


def test_nanogpt_nan_weights_are_refused_before_anything_is_written(tmp_path, capfd,
                                                                    nanogpt_dir):
    weights = torch.load(nanogpt_dir / "ckpt.pt", weights_only=True)["model"]
    weights["transformer.h.0.mlp.c_fc.weight"][0, 0] = float("nan")
    resave(nanogpt_dir / "ckpt.pt", model=weights)
    refused(tmp_path, capfd, nanogpt_dir, "ckpt.pt", "h.0.mlp.c_fc.weight holds NaN")


def test_a_ckpt_pt_with_tuples_nested_a_million_deep_is_refused_before_torch_load(
        tmp_path, capfd, nanogpt_dir):
    """Hashing such a tuple (a dict key) crashes Python; the pickle is scanned first."""
    import zipfile

    path = nanogpt_dir / "ckpt.pt"
    with zipfile.ZipFile(path) as archive:
        members = {i.filename: archive.read(i) for i in archive.infolist()}
    name = next(n for n in members if n.endswith("data.pkl"))
    members[name] = b"\x80\x02}" + b")" + b"\x85" * 1_000_000 + b"K\x01s."
    with zipfile.ZipFile(path, "w") as archive:
        for member, data in members.items():
            archive.writestr(member, data)
    refused(tmp_path, capfd, nanogpt_dir, "ckpt.pt", "nests tuples more than 32 deep")


# --- Hugging Face directories ---------------------------------------------------------------

@pytest.fixture
def hf_dir(tmp_path):
    model, tok = tiny()
    export_hf(model, tok, tmp_path / "hf")
    return tmp_path / "hf"


def edit_json(path, change):
    value = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps(change(value)), encoding="utf-8")


def setting(key, value):
    return lambda config: {**config, key: value}


CONFIG_EDITS = {
    "a list for the config": (lambda c: [c], "config.json is [{"),
    "null for the config": (lambda c: None, "config.json is None (null); expected an object"),
    "a string for a number": (setting("n_embd", "8"), "n_embd is '8' (a string); expected an "
                                                      "integer"),
    "null for a number": (setting("n_layer", None), "n_layer is None (null)"),
    "a float for an int": (setting("n_head", 2.0), "n_head is 2.0 (a number)"),
    "a bool for an int": (setting("vocab_size", True), "vocab_size is True (a boolean)"),
    "a list for the activation": (setting("activation_function", ["gelu"]),
                                  "activation_function is ['gelu'] (an array)"),
    "the string false for the bias": (setting("microtensor_bias", "false"),
                                      "microtensor_bias is 'false' (a string); expected true "
                                      "or false"),
    "a dropout of 1": (setting("resid_pdrop", 1), "resid_pdrop is 1 (an integer)"),
    "nan for the epsilon": (setting("layer_norm_epsilon", float("nan")),
                            "layer_norm_epsilon is nan"),
}
TOKENIZER_EDITS = {
    "a list for the model": (lambda t: {**t, "model": []}, "model is [] (an array)"),
    "vocabulary ids that are strings": (
        lambda t: {**t, "model": {**t["model"], "vocab": {k: str(v) for k, v in
                                                          t["model"]["vocab"].items()}}},
        "model.vocab['\\n'] is '0' (a string); expected an integer"),
    "a string for added_tokens": (lambda t: {**t, "added_tokens": "none"},
                                  "added_tokens is 'none' (a string)"),
    "a number for the decoder": (lambda t: {**t, "decoder": 3}, "decoder is 3 (an integer)"),
    "an id of -1": (lambda t: {**t, "model": {**t["model"], "vocab": {"a": -1}}},
                    "model.vocab['a'] is -1"),
}


@pytest.mark.parametrize("edit", sorted(CONFIG_EDITS))
def test_a_hf_config_field_of_the_wrong_json_type_is_one_line(tmp_path, capfd, hf_dir, edit):
    change, message = CONFIG_EDITS[edit]
    edit_json(hf_dir / "config.json", change)
    refused(tmp_path, capfd, hf_dir, "config.json", message)


@pytest.mark.parametrize("edit", sorted(TOKENIZER_EDITS))
def test_a_tokenizer_json_field_of_the_wrong_type_is_one_line(tmp_path, capfd, hf_dir, edit):
    change, message = TOKENIZER_EDITS[edit]
    edit_json(hf_dir / "tokenizer.json", change)
    refused(tmp_path, capfd, hf_dir, "tokenizer.json", message)


def test_hf_nan_and_integer_weights_are_refused(tmp_path, capfd, hf_dir):
    from safetensors.numpy import load_file, save_file

    state = load_file(hf_dir / "model.safetensors")
    state["transformer.wpe.weight"][1, 2] = np.inf
    save_file(state, hf_dir / "model.safetensors", metadata={"format": "pt"})
    refused(tmp_path, capfd, hf_dir, "model.safetensors", "wpe.weight holds NaN or infinite")
    state["transformer.wpe.weight"] = np.zeros(state["transformer.wpe.weight"].shape, np.int32)
    save_file(state, hf_dir / "model.safetensors", metadata={"format": "pt"})
    refused(tmp_path, capfd, hf_dir, "model.safetensors", "holds int32; expected floats")


def test_a_hf_config_asking_for_a_huge_model_allocates_nothing(tmp_path, capfd, hf_dir):
    edit_json(hf_dir / "config.json", setting("n_layer", 10 ** 9))
    refused(tmp_path, capfd, hf_dir, "model.safetensors", "n_layer=1000000000 needs more")
    edit_json(hf_dir / "config.json", lambda c: {**c, "n_layer": 1, "n_embd": 2 ** 20,
                                                 "n_head": 1})
    refused(tmp_path, capfd, hf_dir, "model.safetensors", "has shape")


# --- what import writes, sample reads -------------------------------------------------------

@pytest.mark.parametrize("fmt", ["hf", "nanogpt"])
def test_what_import_accepts_sample_reads(tmp_path, capfd, hf_dir, nanogpt_dir, fmt):
    source, out = (hf_dir if fmt == "hf" else nanogpt_dir), tmp_path / "out"
    status, err = cli(["import", "--from", str(source), "--out", str(out)], capfd)
    assert status == 0, err
    status, err = cli(["sample", "--out", str(out), "--num-chars", "5", "--top-k", "1"], capfd)
    assert status == 0, f"sample refused what import wrote: {err}"


def test_save_refuses_what_load_would_refuse_and_writes_nothing(tmp_path):
    """The writer runs the reader's checks first: a NaN weight or iter -5 never reaches disk."""
    from models.training.out_dir import CheckpointError

    model, tok = tiny()
    with pytest.raises(CheckpointError, match=r"best snapshot\): wte.weight holds NaN"):
        model.wte.weight.data[0, 0] = np.nan
        save_model(tmp_path / "a", model, tok)
    model, tok = tiny()
    with pytest.raises(CheckpointError, match=r"best.iter is -5 \(an integer\); expected an "
                                              r"integer >= 0"):
        save_model(tmp_path / "b", model, tok, iter=-5)
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_our_config_json_with_the_string_false_for_bias_is_refused(tmp_path, capfd):
    model, tok = tiny()
    save_model(tmp_path / "ours", model, tok)
    edit_json(tmp_path / "ours" / "config.json",
              lambda m: {**m, "model_config": {**m["model_config"], "bias": "false"}})
    status, err = cli(["sample", "--out", str(tmp_path / "ours")], capfd)
    assert status == 1 and "model_config.bias is 'false' (a string); expected true or false" \
        in err, err


def test_a_tensor_whose_strides_repeat_one_number_a_trillion_times_is_refused(tmp_path, capfd,
                                                                             nanogpt_dir):
    """4 bytes of storage viewed as [10⁶, 10⁶]: copying it would need 4 TB."""
    weights = torch.load(nanogpt_dir / "ckpt.pt", weights_only=True)["model"]
    weights["transformer.wpe.weight"] = torch.zeros(1).expand(10 ** 6, 10 ** 6)
    resave(nanogpt_dir / "ckpt.pt", model=weights)
    refused(tmp_path, capfd, nanogpt_dir, "ckpt.pt", "more elements than its storage holds")
