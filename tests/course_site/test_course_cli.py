"""`microtensor course` without a browser (issue 34): the cells run in CPython as they will in the
tab, the fetcher refuses a bad hash and never overwrites a file it did not write, the builder
refuses a foreign folder and points a default build at Pyodide's CDN."""
import io
import json
import tarfile
import zipfile

import numpy as np
import pytest

from models.cli.main import main
from models.course import fetch, site
from models.course.cells import SECTIONS
from models.course.runtime import attention_picture, check_exercise, exercise_list, run_cell


@pytest.mark.parametrize("section", SECTIONS, ids=[s["id"] for s in SECTIONS])
def test_each_cell_runs_in_cpython_and_prints_what_it_expects(section):
    result = run_cell(section["code"], {})
    assert result["ok"], f"{section['id']} raised:\n{result['text']}"
    missing = [e for e in section["expect"] if e not in result["text"]]
    assert not missing, f"{section['id']}: expected {missing}; got:\n{result['text']}"


def test_a_cells_graph_is_dot_source_and_its_heatmap_has_the_weights_shape():
    result = run_cell("import numpy as np, microtensor as mt\n"
                      "x = mt.Tensor([1., 2.], requires_grad=True)\n"
                      "show_graph((x * x).sum())\n"
                      "show_attention(np.full((2, 3, 3), 1 / 3), list('abc'), 'uniform')", {})
    assert result["graphs"][0].lstrip().startswith("digraph"), result["graphs"]
    weights = result["heatmaps"][0]["weights"]
    assert (len(weights), len(weights[0]), len(weights[0][0])) == (2, 3, 3), weights


def test_exercise_1_stub_is_not_started_and_a_syntax_error_is_reported():
    stub = check_exercise(1, site_stub(1))
    assert {r["status"] for r in stub["results"]} == {"not started"}, stub["text"]
    broken = check_exercise(1, "def unbroadcast(grad, shape) return grad")
    assert broken["results"][0]["status"] == "failed" and "SyntaxError" in broken["text"], \
        broken["text"]


def _cell(section_id, old, new):
    code = next(s["code"] for s in SECTIONS if s["id"] == section_id)
    assert old in code, f"{section_id}'s cell no longer has {old!r}"
    result = run_cell(code.replace(old, new), {})
    assert result["ok"], result["text"]
    return result["heatmaps"][0]


@pytest.mark.parametrize("section_id, old, new, keys", [
    ("3.1", "T, D, d_k, d_v = 4,", "T, D, d_k, d_v = 6,", 6),
    ("3.3", "T, d = 5,", "T, d = 7,", 7),
    ("3.5", "B, T, D, H = 2, 5, 24, 3", "B, T, D, H = 2, 6, 24, 4", 6)])
def test_heatmap_labels_follow_the_matrix_when_a_student_changes_its_size(section_id, old, new,
                                                                           keys):
    heatmap = _cell(section_id, old, new)
    t_k = len(heatmap["weights"][0][0])
    assert t_k == keys and len(heatmap["labels"]) == keys, \
        f"{section_id}: expected {keys} keys and {keys} labels; got {t_k} and {heatmap['labels']}"


def test_3_5_caption_counts_the_heads_it_draws():
    heatmap = _cell("3.5", "B, T, D, H = 2, 5, 24, 3", "B, T, D, H = 2, 5, 24, 4")
    assert len(heatmap["weights"]) == 4 and "4 heads" in heatmap["title"] \
        and "three" not in heatmap["title"], f"expected a caption of 4 heads; got {heatmap}"


def test_labels_of_the_wrong_length_fall_back_to_indices_with_a_note():
    picture = attention_picture(np.full((3, 3), 1 / 3), "abcd", "A")
    assert picture["labels"] == ["0", "1", "2"], picture["labels"]
    assert "4 given for 3 keys" in picture["title"], picture["title"]


def test_untouched_stub_says_which_line_to_replace_and_names_no_file():
    stub = exercise_list()[2]["stub"]
    assert "exercises/ex03" not in stub and "\"the editor\")" in stub, stub
    report = check_exercise(3, stub)["text"]
    assert "replace the line `raise NotImplementedError(...)` in softmax_backward" in report \
        and "exercises/ex03" not in report, report


def test_syntax_error_shows_the_students_line_and_no_hint_nor_frame_of_ours():
    result = check_exercise(3, "import numpy as np\ndef softmax_backward(a, da, axis=-1)\n"
                               "    return a\n")
    assert "line 2: def softmax_backward(a, da, axis=-1)" in result["text"] \
        and "SyntaxError" in result["text"], result["text"]
    assert "runtime.py" not in result["text"] and result["hint"] == "", result


def test_a_wrong_answers_hint_is_given_once_outside_the_report():
    stub = exercise_list()[2]
    wrong = check_exercise(3, "import numpy as np\ndef softmax_backward(a, da, axis=-1):\n"
                              "    return a * da\n")
    assert "Hint" not in wrong["text"] and "hint:" not in wrong["text"], wrong["text"]
    assert "subtract the row's" in wrong["hint"], f"expected the a ⊙ da mistake's hint; {wrong}"
    assert "Hint:" not in stub["stub"] and stub["hint"].startswith("the Σ is a weighted sum"), \
        stub


def site_stub(number):
    from models.exercises import EXERCISES

    return next(e for e in EXERCISES if e.number == number).stub_source()


def test_fetch_names_the_file_whose_sha256_is_wrong(tmp_path, monkeypatch):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.addfile(tarfile.TarInfo("package/pyodide.js"), io.BytesIO(b""))
    monkeypatch.setattr(fetch, "npm_tarball", lambda package, version: buffer.getvalue())
    with pytest.raises(ValueError, match=r"^pyodide-0\.27\.7\.tgz: sha256 [0-9a-f]{64}, expected "
                                         "89d5d952"):
        fetch.fetch(tmp_path, log=lambda line: None)
    assert list(tmp_path.iterdir()) == [], "nothing may be written after a bad hash"


def test_fetch_keeps_an_identical_file_and_refuses_to_overwrite_another(tmp_path):
    (tmp_path / "mine.txt").write_bytes(b"a teacher's file")
    assert fetch.write_new(tmp_path, "same.bin", b"x") == str(tmp_path / "same.bin")
    fetch.write_new(tmp_path, "same.bin", b"x")  # the same bytes again: kept
    with pytest.raises(ValueError, match="mine.txt exists and is not the file to fetch"):
        fetch.write_new(tmp_path, "mine.txt", b"other bytes")
    assert (tmp_path / "mine.txt").read_bytes() == b"a teacher's file"


def test_build_refuses_a_folder_with_files_it_did_not_write(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("keep me")
    assert main(["course", "--output", str(tmp_path)]) == 1
    assert "did not write" in capsys.readouterr().err
    assert (tmp_path / "notes.txt").read_text() == "keep me"


def test_default_build_loads_pyodide_and_viz_js_from_their_cdn_and_zips_the_packages(tmp_path):
    out = tmp_path / "site"
    assert main(["course", "--output", str(out)]) == 0
    assert main(["course", "--output", str(out)]) == 0  # its own folder: rebuilt in place
    page = (out / "index.html").read_text(encoding="utf-8")
    config = json.loads(page.split('type="application/json">')[1].split("</script>")[0])
    assert config["indexURL"] == fetch.PYODIDE_CDN and "0.27.7" in fetch.PYODIDE_CDN, config
    assert config["pypi"] == site.PYPI_WHEELS and config["wheels"] is None, config
    assert [s["id"] for s in config["sections"]] == [s["id"] for s in SECTIONS]
    names = zipfile.ZipFile(out / "microtensor.zip").namelist()
    for needed in ("microtensor/__init__.py", "nn/__init__.py", "models/course/runtime.py",
                   "viz/graph.py", "models/exercises/stubs/ex01_unbroadcast.py"):
        assert needed in names, f"{needed} missing from microtensor.zip"
    assert not any("__pycache__" in n for n in names)


def test_pyodide_folder_without_its_files_is_named_in_the_error(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert main(["course", "--output", str(tmp_path / "s"), "--pyodide",
                 str(tmp_path / "empty")]) == 1
    assert "pyodide.js is missing" in capsys.readouterr().err


def test_pyodide_without_output_is_a_usage_error(tmp_path, capsys):
    assert main(["course", "--serve", str(tmp_path), "--pyodide", "x"]) == 1
    assert "--pyodide goes with --output" in capsys.readouterr().err
