"""Without PyTorch: the nanoGPT format says so in one line; the Hugging Face export needs none."""
import sys

import pytest

from models.cli.main import main

FAST = ["--max-iters", "1", "--eval-interval", "1", "--eval-iters", "1", "--batch-size", "2",
        "--block-size", "8", "--n-layer", "1", "--n-head", "1", "--n-embd", "8", "--quiet"]


@pytest.fixture
def no_torch(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)     # `import torch` now raises ImportError


def test_nanogpt_export_without_torch_is_one_line_naming_it(tmp_path, no_torch, capsys):
    (tmp_path / "t.txt").write_text("abcabcabcabc\n" * 20, encoding="utf-8")
    assert main(["train", "--data", str(tmp_path / "t.txt"), "--out", str(tmp_path / "o")]
                + FAST) == 0
    capsys.readouterr()
    code = main(["export", "--out", str(tmp_path / "o"), "--to", str(tmp_path / "e"),
                 "--format", "nanogpt"])
    err = capsys.readouterr().err
    assert code == 1
    assert err.count("\n") == 1 and "needs the 'torch' package" in err, f"got {err!r}"


def test_hf_export_needs_no_torch(tmp_path, no_torch):
    pytest.importorskip("safetensors")
    pytest.importorskip("tokenizers")
    (tmp_path / "t.txt").write_text("abcabcabcabc\n" * 20, encoding="utf-8")
    assert main(["train", "--data", str(tmp_path / "t.txt"), "--out", str(tmp_path / "o")]
                + FAST) == 0
    assert main(["export", "--out", str(tmp_path / "o"), "--to", str(tmp_path / "e"),
                 "--format", "hf"]) == 0
    assert (tmp_path / "e" / "model.safetensors").stat().st_size > 0
