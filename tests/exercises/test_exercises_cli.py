"""`microtensor exercises start | check [N] | status`, and plain `pytest` in a workspace (what a
course's CI, e.g. GitHub Classroom's autograding, runs)."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import models
from models.cli.main import main
from models.exercises import EXERCISES

SOLUTIONS = Path(__file__).resolve().parent / "solutions"


@pytest.fixture()
def workspace(tmp_path, capsys):
    root = tmp_path / "ws"
    assert main(["exercises", "start", str(root)]) == 0
    capsys.readouterr()
    return root


def solve(root, *numbers):
    for ex in EXERCISES:
        if ex.number in numbers:
            shutil.copy(SOLUTIONS / ex.filename, root / "exercises" / ex.filename)


def test_start_writes_a_stub_and_a_grader_per_exercise(workspace):
    for ex in EXERCISES:
        stub = (workspace / "exercises" / ex.filename).read_text(encoding="utf-8")
        assert stub.startswith(f'"""Exercise {ex.number} · ')
        assert f"exercise {ex.number}: write" in stub and "Hint:" in stub and "Shapes:" in stub
        assert (workspace / "graders" / ex.grader_filename).is_file()
    assert "microtensor exercises check" in (workspace / "README.md").read_text(encoding="utf-8")
    assert (workspace / "pytest.ini").is_file()


def test_start_refuses_a_folder_that_holds_anything(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("mine", encoding="utf-8")
    assert main(["exercises", "start", str(tmp_path)]) == 1
    assert "not empty" in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


def test_check_reports_not_started_then_a_pointed_failure_then_a_pass(workspace, capsys):
    assert main(["exercises", "check", "3", "--dir", str(workspace)]) == 1
    out = capsys.readouterr().out
    assert "TODO  exercise  3  softmax backward (notes 3.2, 3.8): not started, 0/" in out
    stub = workspace / "exercises" / EXERCISES[2].filename
    text = stub.read_text(encoding="utf-8")
    body = text[text.index("    raise NotImplementedError"):]
    stub.write_text(text.replace(body, "    return a * da\n"), encoding="utf-8")
    assert main(["exercises", "check", "3", "--dir", str(workspace)]) == 1
    out = capsys.readouterr().out
    assert "FAIL  exercise  3" in out and "∂L/∂s[0, 0] = 1.34, expected 0.2212" in out
    assert "Traceback" not in out
    solve(workspace, 3)
    assert main(["exercises", "check", "3", "--dir", str(workspace)]) == 0
    assert "PASS  exercise  3" in capsys.readouterr().out


def test_status_counts_progress_and_names_the_next_exercise(workspace, capsys):
    solve(workspace, 1, 2)
    assert main(["exercises", "status", "--dir", str(workspace / "exercises")]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"2 of {len(EXERCISES)} exercises pass")
    # exercise 11 is in no section of the notes: said so, not "(notes training)"
    assert "AdamW's step (training, after the notes' chapter 3)" in out
    assert "notes training" not in out
    assert "[x]  1." in out and "[x]  2." in out and "[ ]  3." in out
    assert "next: exercises/ex03_softmax_backward.py" in out


def test_check_outside_a_workspace_and_a_bad_number_are_one_line_errors(tmp_path, capsys):
    assert main(["exercises", "check", "--dir", str(tmp_path)]) == 1
    assert "not inside an exercises workspace" in capsys.readouterr().err
    assert main(["exercises", "check", "14"]) == 2
    assert "must be an exercise number 1 to 13; got '14'" in capsys.readouterr().err


def test_plain_pytest_in_the_workspace_grades_it_as_a_course_ci_would(workspace):
    """GitHub Classroom's autograding runs `pytest` in the student's repository: the graders
    need only the installed package (here: this checkout on PYTHONPATH)."""
    solve(workspace, *range(1, 14))
    (workspace / "exercises" / EXERCISES[6].filename).write_text(
        (SOLUTIONS / EXERCISES[6].filename).read_text(encoding="utf-8").replace(
            "/ math.sqrt(d_k)", ""), encoding="utf-8")
    root = str(Path(models.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q"], cwd=workspace, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "exercise 7: A[0, 0] = 0.7311, expected 0.6698" in run.stdout
    assert "scale the scores by 1/√d_k" in run.stdout
    total = sum(len(ex.grader().CHECKS) for ex in EXERCISES)
    # the hand example, the random shapes and the gradients (held to the reference's) fail
    assert run.stdout.splitlines()[-1].startswith(f"3 failed, {total - 3} passed"), run.stdout


def test_check_shows_what_the_students_code_printed(workspace, capsys):
    stub = workspace / "exercises" / EXERCISES[0].filename
    text = stub.read_text(encoding="utf-8")
    body = text[text.index("    raise NotImplementedError"):]
    stub.write_text(text.replace(body, "    print('grad shape', grad.shape)\n    return grad\n"),
                    encoding="utf-8")
    assert main(["exercises", "check", "1", "--dir", str(workspace)]) == 1
    out = capsys.readouterr().out
    assert "your code printed:" in out and "grad shape (2, 3, 4)" in out


def test_an_unforeseen_return_value_is_still_one_message(workspace, capsys):
    stub = workspace / "exercises" / EXERCISES[10].filename
    text = stub.read_text(encoding="utf-8")
    body = text[text.index("    raise NotImplementedError"):]
    stub.write_text(text.replace(body, "    return p[:1], m, v\n"), encoding="utf-8")
    assert main(["exercises", "check", "11", "--dir", str(workspace), "--all-messages"]) == 1
    out = capsys.readouterr().out
    assert "FAIL  exercise 11" in out and "Traceback" not in out
    assert "p has shape [1], expected [3]" in out


def test_a_value_a_grader_did_not_foresee_is_one_message_not_a_traceback(workspace, capsys):
    stub = workspace / "exercises" / EXERCISES[8].filename
    text = stub.read_text(encoding="utf-8")
    body = text[text.index("    raise NotImplementedError"):]
    stub.write_text(text.replace(body, "    return 0.0\n"), encoding="utf-8")
    assert main(["exercises", "check", "9", "--dir", str(workspace), "--all-messages"]) == 1
    out = capsys.readouterr().out
    assert "the grader stopped on what your code returned: IndexError" in out
    assert "Traceback" not in out


def test_check_stops_a_student_loop_that_never_ends_with_one_line(workspace, capsys,
                                                                    monkeypatch):
    from models.exercises import workspace as ws
    monkeypatch.setattr(ws, "CHECK_SECONDS", 1)
    stub = workspace / "exercises" / EXERCISES[2].filename
    text = stub.read_text(encoding="utf-8")
    body = text[text.index("    raise NotImplementedError"):]
    stub.write_text(text.replace(body, "    while True:\n        pass\n"), encoding="utf-8")
    assert main(["exercises", "check", "3", "--dir", str(workspace)]) == 1
    out = capsys.readouterr().out
    assert "FAIL  exercise  3" in out and "ran for more than 1 s" in out, (
        f"expected a one-line stop after 1 s, got: {out}")
    assert "Traceback" not in out
