"""Issue 33: grading that does not depend on the student's process behaving, fences on objects
rather than names, and a class graded in one command.

The cheats of the round (tests/exercises/cheats/, held by test_cheats.py with their messages)
and the honest answers refused before (tests/exercises/honest/, which must pass) are graded
there; this file holds what is not a single student's file: the grader's arrays after a call
that writes into them, a recorded table of ex 13's answers, a planted graders/__init__.py, the
syntax check on a student's own names, and `microtensor exercises grade` on a class."""
import csv
import io
import json
import shutil
import types
from pathlib import Path

import numpy as np
import pytest

from models.cli.main import main
from models.exercises import EXERCISES, classroom, exercise, grading, guard
from models.exercises.graders import ex10_kv_cache
from models.exercises.remote import RemoteStudent
from models.exercises.workspace import run_graders, start

HERE = Path(__file__).resolve().parent
SOLUTIONS = HERE / "solutions"


def _workspace(root, files=None, solved=()):
    root = start(root)
    for ex in EXERCISES:
        if ex.number in solved:
            shutil.copy(SOLUTIONS / ex.filename, root / "exercises" / ex.filename)
    for number, text in (files or {}).items():
        (root / "exercises" / exercise(number).filename).write_text(text, encoding="utf-8")
    return root


WRITES_BACK = '''def adamw_step(p, g, m, v, t, *settings):
    for a in (p, g, m, v):
        a[...] = 0
    return p, m, v
'''


def test_what_the_students_call_writes_into_its_arguments_never_reaches_the_graders_arrays(
        tmp_path):
    """The child works on copies: the grader's p, g, m, v keep their values; only the indices
    of the arguments written come back (for the "in place" hint)."""
    root = _workspace(tmp_path / "ws", {11: WRITES_BACK})
    student = RemoteStudent(exercise(11), root / "exercises" / exercise(11).filename)
    try:
        student.start_check(30)
        p, g, m, v = (np.full(3, 2.0) for _ in range(4))
        out, written = grading.call_watching(student.adamw_step, p, g, m, v, 1)
    finally:
        student.close()
    for name, array in zip("pgmv", (p, g, m, v)):
        assert np.array_equal(array, np.full(3, 2.0)), f"the grader's {name} became {array}"
    assert np.array_equal(out[0], np.zeros(3)), out
    assert written == {0, 1, 2, 3}, f"expected the four arguments named as written; got {written}"


def test_an_in_place_write_still_gets_its_hint_with_nothing_written_back(tmp_path):
    text = '''import numpy as np
def adamw_step(p, g, m, v, t, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
    b1, b2 = betas
    p *= 1 - lr * weight_decay
    m[...] = b1 * m + (1 - b1) * g
    v[...] = b2 * v + (1 - b2) * g * g
    p -= lr * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)
    return p, m, v
'''
    result = run_graders(_workspace(tmp_path / "ws", {11: text}), [11])[11]
    assert result.status == "failed", result.messages
    assert any("wrote into the caller's p" in m and "leave the caller's p, g, m, v" in m
               for m in result.messages), result.messages


def test_a_table_of_ex13s_answers_recorded_from_one_run_fails_the_next(tmp_path, monkeypatch):
    """Issue 33: 76 answers recorded from the reference passed 5/5. Every check but the notes'
    worked example now draws its inputs per run: the table passes the run it was recorded in
    (the test can fail) and not another."""
    from models.exercises import reference

    table = {}

    def recording(name):
        def fn(*args):
            key = repr((name, args))
            table[key] = getattr(reference, name)(*args)
            return table[key]
        return fn

    recorder = types.SimpleNamespace(**{n: recording(n) for n in exercise(13).functions})
    monkeypatch.setattr(grading, "_RUN_SEED", [1234])
    for check in exercise(13).grader().CHECKS:
        check(recorder)
    text = (f"TABLE = {table!r}\n\n"
            + "".join(f"def {n}(*args):\n    return TABLE.get(repr(({n!r}, args)))\n\n"
                      for n in exercise(13).functions))
    root = _workspace(tmp_path / "ws", {13: text})
    monkeypatch.setenv(grading.SEED_VARIABLE, "1234")
    same = run_graders(root, [13])[13]
    assert same.status == "passed", same.messages[:1]
    monkeypatch.setenv(grading.SEED_VARIABLE, "98765")
    monkeypatch.setattr(grading, "_RUN_SEED", [98765])
    other = run_graders(root, [13])[13]
    assert other.passed <= 1, (other.passed, other.messages[:1])  # the worked example alone


def test_check_refuses_a_graders_folder_holding_a_file_start_did_not_write(tmp_path):
    """A graders/__init__.py replaced workspace.grade under pytest: 13/13 with every stub
    untouched. `check` never imports graders/, and refuses to grade beside such a file."""
    root = _workspace(tmp_path / "ws")
    (root / "graders" / "__init__.py").write_text(
        "import models.exercises.workspace as w\nw.grade = lambda *a, **k: None\n",
        encoding="utf-8")
    results = run_graders(root)
    assert all(r.status == "failed" and r.passed == 0 for r in results.values()), {
        n: (r.status, r.passed) for n, r in results.items()}
    assert "graders/ holds __init__.py, which `microtensor exercises start` did not write" in \
        results[1].messages[0], results[1].messages


@pytest.mark.parametrize("text", [
    "def f(inputs, node):\n    for input in inputs[node]:\n        yield input\n",
    "def sublayer(x, norm, fn):\n    return x + fn(norm(x))\n",
    "class KVCache:\n    pass\n",
    "def scaled_dot_product_attention(q, k, v, mask=None):\n"
    "    return scaled_dot_product_attention(q, k, v, None)\n",
    "import nn\ndef f(block):\n    return isinstance(block, nn.TransformerBlock)\n",
    "def f(x, d):\n    return getattr(x, 'shape', d)\n",
    "import copy\nx = copy.deepcopy([1])\n",
    "if __name__ == '__main__':\n    print(type(1).__name__)\n",
], ids=["input", "sublayer", "KVCache", "recursion", "isinstance", "getattr", "copy", "main"])
def test_the_syntax_check_refuses_no_name_of_the_students_own(text):
    for number in (7, 9, 10) if "import nn" in text else (7, 9, 10, 12):
        ex = exercise(number)
        assert guard.static_check(text, ex.filename, number, ex.engine) is None, (number, text)


def test_the_syntax_check_still_refuses_a_string_run_as_code_and_the_machinery():
    for text, why in (("x = eval('1')\n", "`eval` is refused"),
                      ("f = len.__self__\n", "`.__self__` reaches into Python's machinery"),
                      ("import sys\n", "your file imports sys")):
        refusal = guard.static_check(text, "ex01_unbroadcast.py", 1, False)
        assert refusal and why in refusal, (text, refusal)
    assert guard.static_check("eval = max\nx = eval(1, 2)\n", "ex01_unbroadcast.py", 1,
                              False) is None  # a student's own `eval` is theirs


def test_ex10s_steps_are_timed_one_by_one_and_a_step_is_never_negative():
    """Issue 33 printed "cached steps take -0.01 s": each step is now timed on its own, from
    the clock read just before and after it, and a clock that goes back counts 0."""
    ticks = iter(range(10**6, 0, -1))
    times = ex10_kv_cache._cpu_of_steps(
        types.SimpleNamespace(attend_with_cache=__import__(
            "models.exercises.reference", fromlist=["x"]).attend_with_cache),
        lambda: next(ticks), *(np.zeros((1, 1, ex10_kv_cache.LONG + ex10_kv_cache.STEPS_TIMED,
                                         2), np.float32) for _ in range(3)))
    assert len(times) == ex10_kv_cache.STEPS_TIMED and min(times) == 0.0, times


# ---- a class graded in one command ----

CLEARS_THE_GRAPH = '''def topological_order(inputs, root):
    for parents in inputs:
        parents.clear()          # the grader's graph, were it shared, would lose its edges
    return [root]


def backward(inputs, local, root):
    for parents in inputs:
        parents.clear()
    return [0.0] * len(inputs)
'''

M_NOT_CORRECTED = '''import numpy as np
def adamw_step(p, g, m, v, t, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
    b1, b2 = betas
    p = p * (1 - lr * weight_decay)
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    return p - lr * m / (np.sqrt(v / (1 - b2 ** t)) + eps), m, v
'''


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    """Five rows: a cheat (a planted graders/__init__.py, a graph cleared in place), a solved
    workspace, a partial one (ex 11 with m not bias-corrected, ex 1–3 solved), the stubs, and
    a path that is no workspace; graded once, in that order."""
    base = tmp_path_factory.mktemp("class")
    cheat = _workspace(base / "cheat", {12: CLEARS_THE_GRAPH})
    (cheat / "graders" / "__init__.py").write_text(
        "import models.exercises.workspace as w\nw.grade = lambda *a, **k: None\n",
        encoding="utf-8")
    (cheat / "conftest.py").write_text("raise SystemExit(0)\n", encoding="utf-8")
    _workspace(base / "solved", solved=[ex.number for ex in EXERCISES])
    _workspace(base / "partial", {11: M_NOT_CORRECTED}, solved=(1, 2, 3))
    _workspace(base / "stubs")
    paths = [str(base / name) for name in ("cheat", "solved", "partial", "stubs", "missing")]
    return paths, classroom.grade_class(paths)


def test_grade_gives_one_row_per_workspace_in_the_contracts_json(graded_class):
    paths, rows = graded_class
    assert [row["workspace"] for row in rows] == paths
    cheat, solved, partial, stubs, missing = rows
    numbers = [str(ex.number) for ex in EXERCISES]
    for row in rows[:4]:
        assert list(row["exercises"]) == numbers, row
        for entry in row["exercises"].values():
            assert set(entry) >= {"passed", "checks_passed", "checks", "message"}, entry
            assert 0 <= entry["checks_passed"] <= entry["checks"] > 0, entry
    assert all(e["passed"] and e["checks_passed"] == e["checks"] and e["message"] == ""
               for e in solved["exercises"].values()), solved
    assert not any(e["passed"] or e["checks_passed"] for e in stubs["exercises"].values())
    assert "not started" in stubs["exercises"]["1"]["message"]
    assert missing["exercises"] == {} and "is not a folder" in missing["error"], missing


def test_grade_uses_the_packages_graders_and_one_students_code_cannot_touch_the_next(
        graded_class):
    """The cheat's graders/__init__.py and conftest.py change nothing (its stubs are not
    started, not passed); its ex 12, which clears the graph it is given, fails alone: the next
    student's ex 12, right, passes 3/3."""
    _, (cheat, solved, partial, *_) = graded_class
    assert cheat["exercises"]["1"]["status"] == "not started", cheat["exercises"]["1"]
    assert cheat["exercises"]["12"]["passed"] is False
    assert sum(e["passed"] for e in cheat["exercises"].values()) == 0
    assert solved["exercises"]["12"]["checks_passed"] == 3, solved["exercises"]["12"]
    assert [partial["exercises"][str(n)]["passed"] for n in (1, 2, 3, 4)] == [
        True, True, True, False]


def test_grade_names_the_slip_of_an_m_without_bias_correction(graded_class):
    _, (_, _, partial, *_) = graded_class
    message = partial["exercises"]["11"]["message"]
    assert "you corrected v but not m" in message, message


def test_grade_as_csv_and_as_a_table(graded_class):
    paths, rows = graded_class
    table = list(csv.reader(io.StringIO(classroom.as_csv(rows))))
    assert table[0] == ["workspace", *[str(ex.number) for ex in EXERCISES],
                        "exercises_passed", "error"]
    assert [r[0] for r in table[1:]] == paths
    solved = table[2]
    assert solved[1:14] == [f"{n}/{n}" for n in
                            (rows[1]["exercises"][str(ex.number)]["checks"] for ex in EXERCISES)]
    assert solved[14] == f"{len(EXERCISES)}/{len(EXERCISES)}" and solved[15] == ""
    assert table[5][1:15] == [""] * 14 and "is not a folder" in table[5][15]
    text = classroom.as_table(rows)
    lines = text.splitlines()
    assert lines[0].split()[:2] == ["workspace", "1"] and lines[0].split()[-1] == "passed"
    assert any(line.startswith(paths[1]) and line.rstrip().endswith("13/13") for line in lines)
    assert any(line.startswith(paths[4]) and "error:" in line for line in lines)
    assert "you corrected v but not m" in text


def test_the_grade_command_exits_0_once_every_workspace_was_graded(tmp_path, capsys):
    a, b = _workspace(tmp_path / "a"), _workspace(tmp_path / "b", solved=(13,))
    assert main(["exercises", "grade", str(a), str(b), "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["exercises"]["13"]["passed"] for r in rows] == [False, True], rows
    assert main(["exercises", "grade", str(a), str(tmp_path / "nowhere")]) == 1
    out = capsys.readouterr().out
    assert "error: exercises grade:" in out and "nowhere is not a folder" in out, out


def test_a_student_who_clears_the_graph_in_place_changes_nothing_for_the_next_in_one_process(
        tmp_path):
    """Issue 33: graded in one process, a student's ex 12 that rewrote the grader's module-level
    graph made the next, right student fail 2/3 with a wrong hint. Nothing a call writes comes
    back now: the next student passes 3/3."""
    first = run_graders(_workspace(tmp_path / "a", {12: CLEARS_THE_GRAPH}), [12])[12]
    second = run_graders(_workspace(tmp_path / "b", solved=(12,)), [12])[12]
    assert first.status == "failed", first.messages
    assert second.status == "passed" and second.passed == 3, second.messages[:1]


CHEATS = Path(__file__).resolve().parent / "cheats"


@pytest.mark.parametrize("cheat", ["ex13_writes_classmate.py", "ex13_os_open_classmate.py"])
def test_grade_a_cheat_that_writes_a_classmates_file_is_refused_and_the_classmate_still_passes(
        tmp_path, cheat):
    """Issue 33, round five: the child grading one workspace opens nothing for writing (open,
    os.open, ctypes' libc: all refused by the audit hook), so the next workspace's ex 13 is the
    file its student wrote and passes."""
    text = (CHEATS / cheat).read_text(encoding="utf-8")
    a = _workspace(tmp_path / "a", {13: text})
    victim = _workspace(tmp_path / "victim", solved=(13,))
    before = (victim / "exercises" / exercise(13).filename).read_bytes()
    rows = classroom.grade_class([str(a), str(victim)])
    after = (victim / "exercises" / exercise(13).filename).read_bytes()
    assert after == before, "the classmate's ex13_bpe_merge.py was changed"
    cheat_13, victim_13 = rows[0]["exercises"]["13"], rows[1]["exercises"]["13"]
    assert "for writing" in cheat_13["message"] and not cheat_13["passed"], cheat_13
    assert victim_13["passed"] and victim_13["checks_passed"] == victim_13["checks"], victim_13


def test_grade_as_a_table_lists_real_failures_and_counts_the_exercises_not_started():
    def entry(passed, status, message=""):
        return {"passed": passed, "checks_passed": 1 if passed else 0, "checks": 1,
                "message": message, "status": status}

    row = {"workspace": "ann", "exercises": {
        "1": entry(True, "passed"), "2": entry(False, "failed", "exercise 2: dA[0, 0] = 1"),
        "3": entry(False, "not started", "exercise 3: not started (stub)"),
        "4": entry(False, "not started", "exercise 4: not started (stub)")}}
    text = classroom.as_table([row])
    assert "exercise 2: dA[0, 0] = 1" in text, text
    assert "exercise 3: not started" not in text and "exercise 4: not started" not in text, text
    assert "  not started: 2 (3, 4)" in text.splitlines(), text
