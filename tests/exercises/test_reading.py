"""The workspace's reading/ folder: the reading path's files as the installed package has them,
each exercise's piece replaced by a stub that raises "exercise N: write …", nothing else changed,
and never collected by pytest."""
import ast
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import models
from models.cli.main import main
from models.exercises import EXERCISES
from models.exercises.catalog import READING_PATH
from models.exercises.reading import HEADER, body_lines, find_piece, package_source

PIECES = [(ex, path, qualname) for ex in EXERCISES for path, qualname in ex.pieces]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("reading") / "ws"
    assert main(["exercises", "start", str(root)]) == 0
    return root


def test_every_exercise_names_a_piece_of_a_reading_path_file():
    # exercise 13's reference, the BPE trainer, is not on the reading path (README's table)
    assert all(ex.pieces and ex.formula for ex in EXERCISES if ex.number != 13)
    assert EXERCISES[12].formula
    assert {path for _, path, _ in PIECES} <= set(READING_PATH)
    assert "microtensor/ops/softmax.py" in READING_PATH and "models/gpt.py" in READING_PATH


def test_reading_holds_each_listed_file_read_only_under_its_header(workspace):
    written = sorted(str(p.relative_to(workspace / "reading")).replace(os.sep, "/")
                     for p in (workspace / "reading").rglob("*.py"))
    assert written == sorted(READING_PATH)
    for path in READING_PATH:
        file = workspace / "reading" / path
        assert file.read_text(encoding="utf-8").startswith(HEADER.format(path=path)), path
        assert not file.stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH), path


@pytest.mark.parametrize("ex, path, qualname", PIECES,
                         ids=[f"ex{ex.number:02d}-{q}" for ex, _, q in PIECES])
def test_each_piece_is_a_stub_that_raises_its_exercise_alone(workspace, ex, path, qualname):
    text = (workspace / "reading" / path).read_text(encoding="utf-8")
    node = find_piece(ast.parse(text), qualname)
    reference = find_piece(ast.parse(package_source(path)), qualname)
    assert ast.dump(node.args) == ast.dump(reference.args), "the signature is kept"
    assert ast.get_docstring(node) == ast.get_docstring(reference), "the docstring is kept"
    segment = ast.get_source_segment(text, node)
    assert f"exercise {ex.number} (notes {ex.section}): {ex.formula}" in segment
    assert f"exercises/{ex.filename}" in segment
    # run the piece on its own (decorators and defaults dropped: only its body matters)
    node.decorator_list, node.args = [], ast.parse("def f(*a, **k): pass").body[0].args
    scope = {}
    exec(compile(ast.fix_missing_locations(ast.Module([node], [])), path, "exec"), scope)
    with pytest.raises(NotImplementedError) as raised:
        scope[node.name](None, None, None)
    assert str(raised.value) == (f"exercise {ex.number}: write {qualname} in "
                                 f"exercises/{ex.filename}")


@pytest.mark.parametrize("path", READING_PATH)
def test_the_rest_of_each_file_is_the_package_source(workspace, path):
    """Putting the package's bodies back into the stubs gives the package's file, line for
    line: nothing but the pieces changed."""
    original = package_source(path)
    text = (workspace / "reading" / path).read_text(encoding="utf-8")
    header = HEADER.format(path=path)
    assert text.startswith(header)
    text = text[len(header):]
    qualnames = [q for _, p, q in PIECES if p == path]
    spans = []
    for qualname in qualnames:
        raise_ = find_piece(ast.parse(text), qualname).body[-1]  # after its two comment lines
        assert isinstance(raise_, ast.Raise)
        stub_first, stub_last = raise_.lineno - 2, raise_.end_lineno
        first, last = body_lines(find_piece(ast.parse(original), qualname))
        spans.append((stub_first, stub_last, original.splitlines(keepends=True)[first - 1:last]))
    lines = text.splitlines(keepends=True)
    for stub_first, stub_last, body in sorted(spans, key=lambda s: s[0], reverse=True):
        assert lines[stub_first - 1:stub_last] != body
        lines[stub_first - 1:stub_last] = body
    assert "".join(lines) == original


def test_pytest_in_the_workspace_never_collects_reading(workspace, tmp_path):
    """Even a test-named file under reading/ stays out of `pytest .` in the workspace."""
    trap = workspace / "reading" / "test_trap.py"
    trap.write_text("raise SystemExit('reading/ was collected')\n", encoding="utf-8")
    root = str(Path(models.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    try:
        run = subprocess.run([sys.executable, "-m", "pytest", "-q", "--collect-only", "."],
                             cwd=workspace, env=env, capture_output=True, text=True, timeout=300)
    finally:
        trap.unlink()
    assert run.returncode == 0, run.stdout + run.stderr
    assert "reading" not in run.stdout and "graders/test_ex03_softmax_backward.py" in run.stdout
