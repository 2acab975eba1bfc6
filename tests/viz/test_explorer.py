"""viz.explore and `microtensor explore` on the Python side: the page holds the engine's own forward
and backward order, its values and gradient norms, the op docstrings' formulas; bad input
gets one line. (tests/viz/test_explorer_browser.py drives the page in Chromium.)"""
import html
import json
import re
from pathlib import Path

import numpy as np
import pytest
from mt_testing import needs_dot

import microtensor as mt
import viz
from microtensor import hooks
from microtensor.ops.softmax import Softmax
from models.cli.main import main
from viz.compact import decode

pytestmark = needs_dot


def page_data(path):
    """The JSON the page embeds."""
    text = path.read_text(encoding="utf-8")
    return json.loads(re.search(r'<script id="mt-data" type="application/json">(.*?)</script>',
                                text, re.S).group(1).replace("<\\/", "</"))


def engine_orders(run):
    """(forward, backward): the graph-node ids in the order the engine ran them, noted by hooks of
    this test's own (independent of viz.record_steps)."""
    forward, backward = [], []

    def on_forward(fn, inputs, output):
        if output.grad_fn is fn:
            forward.append(id(fn))

    with hooks.register_forward_hook(on_forward), \
            hooks.register_backward_hook(lambda fn, *_: backward.append(id(fn))):
        loss = run()
    return loss, forward, backward


def recorded_gpt_step(tiny_gpt):
    """(loss, forward, backward) of one step of a 2-block GPT, recorded for the page."""
    model = tiny_gpt(n_layer=2)
    x = np.random.default_rng(0).integers(0, 11, (2, 8))

    def run():
        _, loss = model(x, x)
        loss.backward()
        return loss

    with viz.record_steps():
        return engine_orders(run)


def test_the_page_steps_in_the_engines_forward_and_backward_order(tmp_path, tiny_gpt):
    loss, forward, backward = recorded_gpt_step(tiny_gpt)
    data = page_data_of(loss, tmp_path)
    keys = list(viz.trace(loss)[0])  # the page's node table is the trace's order
    assert [keys[i] for i in data["forward"]] == forward, "forward steps != the engine's order"
    assert [keys[i] for i in data["backward"]] == backward, "backward steps != backward()'s order"
    assert len(backward) > len(forward), "backward also steps through every weight's gradient"


def page_data_of(root, tmp_path, **options):
    path = tmp_path / "page.html"
    viz.explore(root, path, **options)
    return page_data(path)


def test_values_and_gradient_norms_are_the_engines(tmp_path):
    x = mt.Tensor(np.arange(6.0).reshape(2, 3) / 5, requires_grad=True, name="x")
    w = mt.Tensor(np.linspace(-1, 1, 12).reshape(3, 4), requires_grad=True, name="w")
    c = np.linspace(0.5, 2.0, 8).reshape(2, 4)
    with viz.record_steps():
        h = x @ w
        h.retain_grad()
        a = h.softmax(axis=-1)
        loss = (a * c).sum()
        loss.backward()
    data = page_data_of(loss, tmp_path)
    nodes = data["nodes"]
    (mm,) = [n for n in nodes if n["op"] == "matmul"]
    assert mm["shape"] == [2, 3 + 1]
    assert mm["grad"]["stats"]["norm"] == pytest.approx(np.linalg.norm(h.grad), rel=1e-12), (
        "the norm of ∂L/∂h shown must be the one backward() left in h.grad")
    assert mm["value"]["stats"]["max"] == pytest.approx(h.data.max(), rel=1e-12)
    np.testing.assert_allclose(decode(mm["value"]["heat"])[0], h.data, atol=(
        h.data.max() - h.data.min()) / 250 / 2 + 1e-12, err_msg="heatmap != h within half a step")
    leaves = {n["name"]: n for n in nodes if n["kind"] == "input"}
    for name, t in (("x", x), ("w", w)):
        assert leaves[name]["grad"]["stats"]["norm"] == pytest.approx(np.linalg.norm(t.grad),
                                                                       rel=1e-12), name
    # what the matmul sends to each input is what arrives there (one reader each)
    assert mm["sent"] == pytest.approx([np.linalg.norm(x.grad), np.linalg.norm(w.grad)])
    (soft,) = [n for n in nodes if n["op"] == "softmax"]
    forward, backward = data["formulas"][soft["formula"]]
    assert backward == "ds = a ⊙ (da − Σ a ⊙ da)" and backward in Softmax.__doc__, backward
    assert forward.startswith("a = exp(s) / Σ exp(s)"), forward


def test_layer_norms_forward_formula_is_a_formula_not_its_shapes():
    from microtensor.ops import layer_norm
    from viz.formulas import op_formulas

    forward, backward = op_formulas(layer_norm.LayerNorm())
    module_first = " ".join(layer_norm.__doc__.split("\n\n")[0].split())
    assert "y = (x − μ)/√(σ² + ε) ⊙ w + b" in module_first, module_first
    assert forward.startswith(module_first) and forward.endswith("normalized on its own."), (
        f"LayerNorm's forward formula leads with its module docstring's; got {forward!r}")
    assert backward.startswith("Backward, with x̂ = (x − μ)·r"), backward


def test_masked_scores_keep_their_minus_infinity_in_the_heatmap(tmp_path, tiny_gpt):
    model = tiny_gpt(n_layer=1)
    x = np.random.default_rng(0).integers(0, 11, (2, 8))
    with viz.record_steps():
        _, loss = model(x, x)
        loss.backward()
    data = page_data_of(loss, tmp_path)
    (masked,) = [n for n in data["nodes"] if n["role"] == "S (masked)"]
    scores = decode(masked["value"]["heat"])  # [heads, T, T] of batch row 0
    assert scores.shape == (2, 8, 8)
    blocked = np.triu(np.ones((8, 8), bool), k=1)
    assert np.isneginf(scores[:, blocked]).all() and np.isfinite(scores[:, ~blocked]).all(), (
        "the causal mask's −inf above the diagonal must survive the compact storage")
    assert masked["value"]["stats"]["inf"] == 2 * 2 * blocked.sum()  # B·H·(blocked per head)


def test_a_weights_gradient_heatmap_keeps_every_row_when_the_batch_divides_them(tmp_path,
                                                                                  tiny_gpt):
    model = tiny_gpt(n_layer=1)  # width 8: B = 2 divides a [8, 8] weight's 8 rows
    x = np.random.default_rng(0).integers(0, 11, (2, 8))
    with viz.record_steps():
        _, loss = model(x, x)
        loss.backward()
    data = page_data_of(loss, tmp_path)
    weights = dict(model.named_parameters())
    for n in data["nodes"]:
        if n["kind"] == "param" and n["grad"] and n["name"] in weights:
            grad = weights[n["name"]].grad
            got = decode(n["grad"]["heat"])[0]
            assert got.shape == grad.reshape(-1, grad.shape[-1]).shape, (
                f"{n['name']} {list(grad.shape)}: its gradient's heatmap kept {list(got.shape)} "
                "(a weight's rows are not the batch's positions)")
    (logits,) = [n for n in data["nodes"] if n["op"] == "reshape" and n["shape"] == [16, 11]]
    assert logits["value"]["heat"]["shape"] == [1, 8, 11], (
        "a flattened [B·T, V] keeps batch row 0's T = 8 positions")


def test_a_module_box_opens_into_the_ops_inside_it(tmp_path, tiny_gpt):
    model = tiny_gpt(n_layer=2)
    x = np.random.default_rng(0).integers(0, 11, (2, 8))
    with viz.record_steps():
        _, loss = model(x, x)
        loss.backward()
    data = page_data_of(loss, tmp_path, depth=1)
    top = data["views"][0]
    assert top["title"] == "model · depth 1"
    (fold,) = [box for box, view in top["opens"].items()
               if data["views"][view]["title"].endswith("unfolded")]
    unfolded = data["views"][top["opens"][fold]]
    assert len(unfolded["opens"]) > len(top["opens"]), "the folded run opens into its blocks"
    titles = {data["views"][v]["title"] for v in unfolded["opens"].values()}
    assert "blocks.1 · every op" in titles
    ops = {i for i, n in enumerate(data["nodes"]) if n["module"].startswith("blocks.")
           and n["kind"] == "op"}
    assert set(top["boxes"][fold]) >= ops, "the folded box stands for every op of its blocks"


def test_explore_without_recorded_steps_says_how_to_record_them(tmp_path):
    x = mt.Tensor(np.ones(3), requires_grad=True)
    loss = (x * 2).sum()
    with pytest.raises(ValueError, match="record_steps"):
        viz.explore(loss, tmp_path / "p.html")
    with pytest.raises(ValueError, match=r"\.html"):
        viz.explore(loss, tmp_path / "p.svg")


def test_explore_command_writes_one_self_contained_page(tmp_path, capsys):
    out = tmp_path / "pages" / "step.html"
    status = main(["explore", "--preset", "tiny", "--n-layer", "1", "--batch-size", "2",
                   "--seq-len", "8", "--depth", "1", "--output", str(out)])
    assert status == 0 and out.exists()
    text = out.read_text(encoding="utf-8")
    assert not re.search(r'(src|href)="(https?:)?//', text), "the page must not load anything"
    data = page_data(out)
    assert data["forward"] and data["backward"] and len(data["views"]) > 2
    assert "wrote" in capsys.readouterr().out
    assert [p.name for p in out.parent.iterdir()] == ["step.html"], "no temporary file is left"
    assert main(["explore", "--preset", "tiny", "--n-layer", "1", "--batch-size", "2",
                 "--seq-len", "8", "--output", str(out)]) == 0, "its own page is rewritten"


@pytest.mark.parametrize("argv, expected", [
    (["--output", "g.svg"], "must end in .html"),
    (["--output", "p.html", "--depth", "0"], "must be an integer >= 1"),
    (["--output", "p.html", "--seq-len", "99"], "exceeds the model's block size"),
    (["--output", "p.html", "--focus", "nope"], "matches no module"),
])
def test_explore_command_bad_flags_get_one_line(tmp_path, capsys, argv, expected, monkeypatch):
    monkeypatch.chdir(tmp_path)
    status = main(["explore", "--preset", "tiny", "--n-layer", "1", "--batch-size", "2"] + argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert status in (1, 2) and expected in err[-1], err
    assert status == 2 or len(err) == 1, f"one line, got {err}"
    assert not list(tmp_path.iterdir()), "nothing is written"


def test_explore_never_overwrites_a_file_it_did_not_write(tmp_path, capsys):
    mine = tmp_path / "notes.html"
    mine.write_text("<p>my notes</p>", encoding="utf-8")
    status = main(["explore", "--preset", "tiny", "--n-layer", "1", "--batch-size", "2",
                   "--seq-len", "8", "--output", str(mine)])
    assert status == 1 and "refusing to overwrite" in capsys.readouterr().err
    assert mine.read_text(encoding="utf-8") == "<p>my notes</p>"


def test_a_focused_page_steps_through_the_modules_nodes_in_the_engines_order(tmp_path, tiny_gpt):
    loss, forward, backward = recorded_gpt_step(tiny_gpt)
    data = page_data_of(loss, tmp_path, focus="blocks.1.attn")
    nodes, _ = viz.trace(loss)
    keys = list(nodes)
    inside = [k for k in forward if nodes[k].module.startswith("blocks.1.attn")]
    assert [keys[i] for i in data["forward"]] == inside, "the module's ops, in the engine's order"
    assert {nodes[keys[i]].module.split(".")[:3] == ["blocks", "1", "attn"]
            for i in data["backward"]} == {True}
    outside = [n for n in data["nodes"] if n["module"].startswith("blocks.0")]
    assert all("heat" not in (n["value"] or {}) for n in outside), "no heatmap outside the picture"


def test_ci_counts_a_skip_for_want_of_chromium_as_a_missing_dependency():
    import importlib.util
    from pathlib import Path
    from types import SimpleNamespace

    from mt_testing import CHROMIUM_MISSING

    spec = importlib.util.spec_from_file_location(
        "suite_conftest", Path(__file__).resolve().parents[1] / "conftest.py")
    suite = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(suite)
    report = SimpleNamespace(skipped=True, nodeid="t::browser",
                             longrepr=("t.py", 1, f"Skipped: {CHROMIUM_MISSING}"))
    suite._note_missing_import(report)
    assert suite._missing == [f"t::browser: Skipped: {CHROMIUM_MISSING}"], suite._missing


def test_explore_returns_the_path_that_a_notebook_shows_inline(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    x = mt.Tensor(np.ones(3), requires_grad=True)
    with viz.record_steps():
        loss = (x * 2).sum()
        loss.backward()
    page = viz.explore(loss, "pages/p.html")
    assert page == "pages/p.html" and (tmp_path / "pages" / "p.html").exists()
    shown = page._repr_html_()
    srcdoc = html.unescape(re.search(r'srcdoc="([^"]*)"', shown).group(1))
    assert srcdoc == (tmp_path / "pages" / "p.html").read_text(encoding="utf-8"), (
        "the notebook shows the page itself")
    assert 'href="pages/p.html"' in shown


def test_explore_command_reads_a_checkpoint(tmp_path, capsys):
    from models import GPT, CharTokenizer, GPTConfig
    from models.training.checkpoint import save_model

    tokenizer = CharTokenizer.from_text("hello world")
    model = GPT(GPTConfig(vocab_size=tokenizer.vocab_size, block_size=8, n_layer=1, n_head=2,
                          n_embd=12))
    save_model(str(tmp_path / "ckpt"), model, tokenizer)
    out = tmp_path / "trained.html"
    assert main(["explore", "--out", str(tmp_path / "ckpt"), "--batch-size", "2",
                 "--output", str(out)]) == 0
    data = page_data(out)
    (wte,) = [n for n in data["nodes"] if n["name"] == "wte.weight"]
    assert wte["shape"] == [tokenizer.vocab_size, 12]
    assert wte["value"]["stats"]["norm"] == pytest.approx(np.linalg.norm(
        model.wte.weight.data.astype(np.float64)), rel=1e-6), "the checkpoint's weights"
    assert main(["explore", "--out", str(tmp_path / "ckpt"), "--n-layer", "2",
                 "--output", str(out)]) == 1
    assert "--n-layer goes with --preset" in capsys.readouterr().err


def test_the_panel_names_unnamed_inputs_as_the_picture_does(tmp_path, read_dot):
    a, b = (mt.Tensor(np.full((2, 2), v), requires_grad=True) for v in (1.0, 2.0))
    with viz.record_steps():
        loss = (a * 3 + b).sum()
        loss.backward()
    data = page_data_of(loss, tmp_path)
    names = {n["name"]: n["value"]["stats"]["mean"] for n in data["nodes"] if n["kind"] == "input"}
    assert names == {"input 1": 1.0, "input 2": 2.0}, names  # a (all 1) is read first
    dot = read_dot(viz.draw_graph(loss))
    (first,) = dot.find("input 1 [2,2]")
    (reader,) = [dst for src, dst, _ in dot.edges if src == first]
    assert dot.nodes[reader]["label"].startswith("mul"), "the picture's input 1 is a, read by a*3"


def test_the_committed_example_page_carries_the_explorers_current_code():
    """docs/explorer/attention.html is a page `microtensor explore` wrote: it must embed today's
    explorer.js, panel.js and explorer.css, or the docs show an explorer that no longer exists."""
    root = Path(__file__).resolve().parents[2]
    page = (root / "docs/explorer/attention.html").read_text(encoding="utf-8")
    for name in ("explorer.js", "panel.js", "marks.js", "frame.js", "explorer.css"):
        code = (root / "viz/explorer" / name).read_text(encoding="utf-8").strip()
        assert code in page, (f"expected docs/explorer/attention.html to embed the current "
                              f"viz/explorer/{name}; remake it (docs/explorer.md's command)")


def test_the_docs_quote_the_committed_example_pages_size():
    """docs/explorer.md says how large docs/explorer/attention.html is: the file's size, in MB."""
    root = Path(__file__).resolve().parents[2]
    size = (root / "docs/explorer/attention.html").stat().st_size / 1e6
    docs = (root / "docs/explorer.md").read_text(encoding="utf-8")
    quoted = re.findall(r"batch 2 × 16[^|\n]*?(?:\| )?(\d+\.\d\d) MB", docs)
    assert quoted and all(float(q) == round(size, 2) for q in quoted), (
        f"docs/explorer.md quotes {quoted} MB for the example page; it is {size:.2f} MB")
