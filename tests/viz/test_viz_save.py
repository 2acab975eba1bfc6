"""viz.save writes SVG, PNG and PDF through Graphviz's dot; without dot it still writes the .dot
source and says how to install Graphviz."""
import os
import xml.etree.ElementTree as ET

import pytest
from mt_testing import needs_dot

import microtensor as mt
import viz


@pytest.fixture
def graph():
    x = mt.randn(2, 3, requires_grad=True, name="x")
    loss = (x.tanh() * 2.0).sum()
    with viz.record_grad_norms():
        loss.backward()
    return viz.draw_graph(loss)


@needs_dot
def test_an_svg_render_is_well_formed_xml_with_one_group_per_box(graph, tmp_path):
    path = viz.save(graph, str(tmp_path / "g.svg"))
    root = ET.parse(path).getroot()
    assert root.tag.endswith("svg"), f"expected an <svg> root, got {root.tag}"
    groups = [g for g in root.iter("{http://www.w3.org/2000/svg}g") if g.get("class") == "node"]
    assert len(groups) == 4, f"expected 4 node groups (x, tanh, mul, sum), got {len(groups)}"
    assert os.listdir(tmp_path) == ["g.svg"], \
        f"expected no leftover files, got {os.listdir(tmp_path)}"


@needs_dot
@pytest.mark.parametrize("suffix, magic", [(".png", b"\x89PNG"), (".pdf", b"%PDF")])
def test_png_and_pdf_renders_are_real_files_of_that_format(graph, tmp_path, suffix, magic):
    path = viz.save(graph, str(tmp_path / ("g" + suffix)))
    with open(path, "rb") as f:
        head = f.read(4)
    assert head == magic, f"expected a file starting {magic!r}, got {head!r}"


def test_a_dot_suffix_writes_the_source_without_graphviz(graph, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no dot anywhere on PATH
    path = viz.save(graph, str(tmp_path / "g.dot"))
    with open(path, encoding="utf-8") as f:
        assert f.read() == graph.source, "expected the DOT source itself"


def test_without_dot_saving_writes_the_source_and_says_how_to_install_graphviz(graph, tmp_path,
                                                                              monkeypatch):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # as on a machine without Graphviz
    with pytest.raises(RuntimeError) as raised:
        viz.save(graph, str(tmp_path / "g.svg"))
    message = str(raised.value)
    assert "install Graphviz" in message and "apt-get install graphviz" in message, \
        f"expected install instructions, got {message!r}"
    assert str(tmp_path / "g.dot") in message, \
        f"expected the message to name the .dot file: {message!r}"
    with open(tmp_path / "g.dot", encoding="utf-8") as f:
        assert f.read() == graph.source, "expected the DOT source saved next to the picture"
    assert not (tmp_path / "g.svg").exists(), "expected no half-written picture"


def test_an_unknown_suffix_is_refused(graph, tmp_path):
    with pytest.raises(ValueError, match=r"\.svg, \.png, \.pdf"):
        viz.save(graph, str(tmp_path / "g.jpeg"))


def test_charts_save_by_suffix(tmp_path):
    figure = viz.loss_curve([{"iter": 0, "train_loss": 4.0, "val_loss": 4.1}])
    path = viz.save_figure(figure, str(tmp_path / "loss.svg"))
    assert ET.parse(path).getroot().tag.endswith("svg"), "expected an SVG chart"
    with pytest.raises(ValueError, match="cannot tell the picture format"):
        viz.save_figure(figure, str(tmp_path / "loss.txt"))
