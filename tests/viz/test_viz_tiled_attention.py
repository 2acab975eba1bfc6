"""Tiled attention in a picture (notes 3.8): one box with its formula instead of QKᵀ, S, A and Z,
and the saved-bytes overlay prints what it keeps, a fraction of ordinary attention's A."""
import numpy as np

import microtensor as mt
import nn
import viz
from models.cli.main import main
from viz.style import fmt_count


def _graph_source(attention):
    mt.manual_seed(0)
    mha = nn.MultiHeadAttention(16, 2, bias=False, attention=attention)
    with viz.record_costs() as prof:
        out = mha(mt.Tensor(np.random.default_rng(0).normal(size=(2, 32, 16)), dtype=np.float32),
                  is_causal=True)
    return viz.draw_graph(out.sum(), overlay="saved").source, prof


def test_tiled_attention_is_one_box_with_its_formula_and_its_saved_bytes():
    source, prof = _graph_source("tiled")
    assert source.count("tiled_attention") == 1, "expected one tiled_attention box"
    assert "Z = softmax(QKᵀ/√d_k + M) V" in source and "A = softmax(S)" not in source, source
    kept = prof.saved_bytes(op="tiled_attention")  # Q, K, V, Z [2, 2, 32, 8] and L [2, 2, 32, 1]
    assert kept == 4 * 2 * 2 * 32 * 8 * 4 + 2 * 2 * 32 * 4, kept
    assert f"saved {fmt_count(kept, 'B')}" in source, f"expected the box to print {kept} bytes"


def test_ordinary_attention_draws_each_step_and_keeps_A():
    source, prof = _graph_source("ordinary")
    assert "A = softmax(S)" in source and "tiled_attention" not in source
    assert prof.saved_bytes(op="softmax") == 2 * 2 * 32 * 32 * 4  # A [B, H, T, T] float32


def test_the_graph_command_draws_a_tiled_preset(tmp_path):
    path = tmp_path / "g.dot"
    assert main(["graph", "--preset", "tiny", "--attention", "tiled", "--focus", "blocks.0.attn",
                 "-o", str(path)]) == 0
    assert "tiled_attention" in path.read_text(encoding="utf-8")
