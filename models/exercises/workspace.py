"""A student's workspace: writing it (`exercises start`), and running its graders in-process with
pytest (`exercises check`, `exercises status`), one result per exercise.

    DIR/
      README.md                    what to do, in what order, how it is graded
      pytest.ini                   `pytest` in DIR runs graders/ (a course's CI does just that)
      exercises/ex03_softmax_backward.py    the student's files: stubs to fill in
      graders/test_ex03_softmax_backward.py the graders: thin pytest files
      reading/microtensor/ops/softmax.py    the reading path, read-only, exercises stubbed
      .microtensor-exercises       marks DIR as a workspace (which version wrote it)

How the student's code is run: each exercise's file is imported, by its path, in a child process
of its own (sandbox.py; never through sys.path, so nothing in the workspace can shadow the
installed `microtensor`, `nn` or `models`), afresh for each check; the grader, in this process,
sends it inputs and compares what comes back (plain arrays) with the expected values it
computed itself, plugging the student's function alone into the installed reference code where
a check needs it: exercise k needs no other exercise solved, and no file can change the verdict
of another exercise or of its own grader.
"""
import atexit
import contextlib
import io
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from .catalog import EXERCISES, exercise
from .grading import ExerciseFailure, NotStarted
from .reading import reading_files
from .remote import CheckTimeout, RemoteStudent

MARKER = ".microtensor-exercises"
FORMAT = 1
NOT_STARTED = "not started"

_GRADER_FILE = '''"""Grader of exercise {n}, {title} ({source}).

Written by `microtensor exercises start`; run by `microtensor exercises check {n}`, or `pytest`
in this folder. Keep it as it is: a course's CI grades the workspace with it."""
import pytest

from models.exercises.workspace import checks, grade

CHECKS = checks({n})


@pytest.mark.parametrize("check", CHECKS, ids=[c.__name__[len("check_"):] for c in CHECKS])
def test_{slug}(check):
    grade({n}, check, __file__)
'''

_PYTEST_INI = """[pytest]
testpaths = graders
addopts = --import-mode=importlib -p no:cacheprovider --ignore=reading
"""

_GITIGNORE = "__pycache__/\n.pytest_cache/\n"


def checks(number):
    """The check functions of exercise `number`, in order."""
    return list(exercise(number).grader().CHECKS)


def grade(number, check, grader_file):
    """Run one check on the student's file of exercise `number`, as a pytest test: a failure
    is one message (pytest.fail without a traceback); a stub still in place is "not started".

    The student's file runs in a child process of its own (remote.py, sandbox.py), one per
    exercise, imported afresh for each check; this process holds what the check compares
    against and makes the comparison, so that no student's file can change a verdict."""
    import pytest

    student = Path(grader_file).resolve().parent.parent / "exercises" / exercise(number).filename
    message = grade_check(number, check, student)
    if message:  # outside the except: pytest would print the exception it handled, too
        pytest.fail(message, pytrace=False)


def grade_check(number, check, student):
    """One check of exercise `number` on the student's file `student`: None when it passes,
    else the one-line message (a refusal, whatever the check made of it, is the verdict)."""
    ex = exercise(number)
    message = None
    remote = _remote(ex, Path(student))
    try:
        remote.start_check(CHECK_SECONDS)
        check(remote)
    except NotImplementedError as stub:  # the file is the stub, untouched: not started
        message = f"exercise {number}: {NOT_STARTED} ({stub})"
    except CheckTimeout:
        remote.close()
        message = (f"exercise {number}: a check ran for more than {CHECK_SECONDS} s and was "
                   "stopped (a loop that never ends?)")
    except NotStarted as stub:
        message = f"exercise {number}: {NOT_STARTED} ({stub})"
    except ExerciseFailure as failure:
        message = f"exercise {number}: {failure}"
    except Exception as error:  # a value the checks did not foresee, deep in a grader
        message = (f"exercise {number}: the grader stopped on what your code returned: "
                   f"{type(error).__name__}: {error} (check the shapes and types the file's "
                   "docstring asks for)")
    if remote.refusal:  # whatever the check made of it: the refusal is the verdict
        why, head = remote.refusal, f"exercise {number}"
        if why.startswith(head):  # the refusal names its exercise already: said once
            why = why[len(head):].lstrip(": ")
        message = f"exercise {number}: refused: {why}"
    return message


CHECK_SECONDS = 60  # a check takes well under a second: past this the student's code is stuck

_REMOTES = {}  # (exercise number, student file) -> its RemoteStudent, while its checks run


def _remote(ex, path):
    """The child process of exercise `ex` on `path`, started once for its checks; the children
    of other exercises are stopped (one at a time is alive)."""
    key = (ex.number, str(path))
    for other in [k for k in _REMOTES if k != key]:
        _REMOTES.pop(other).close()
    if key not in _REMOTES:
        _REMOTES[key] = RemoteStudent(ex, path)
    return _REMOTES[key]


def close_remotes():
    """Stop every child process (after a run, and at exit)."""
    while _REMOTES:
        _REMOTES.popitem()[1].close()


atexit.register(close_remotes)


def _write(path, text, mode=0o644):
    """Write `text` to `path` atomically (a temporary file renamed into place)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def _readme():
    rows = "\n".join(f"| {ex.number} | {ex.section} | {ex.title} | `exercises/{ex.filename}` |"
                     for ex in EXERCISES)
    return f"""# microtensor exercises

Write the pieces of a Transformer the course notes (chapter 3) derive; the graders check them
against finite differences, the notes' hand example and the project's reference code.

Each file under `exercises/` holds, at its top, the notes' section, the formula in the notes'
symbols, the shapes and a hint; replace the `raise NotImplementedError(...)` with your code.
The exercises stand alone: exercise k grades your piece inside the project's own code, so you
can do them in any order (the order below builds up from the engine: the backward passes of
notes 3.8, then attention, the heads, the block, decoding and the optimizer).

| # | notes | exercise | file |
|---|-------|----------|------|
{rows}

Grade your work (from this folder; it needs the microtensor package with pytest,
`pip install 'microtensor[exercises]'` from your course's copy):

    microtensor exercises check        # every exercise
    microtensor exercises check 3      # one
    microtensor exercises status       # progress
    pytest                             # the same graders, as a course's CI runs them

Keep `graders/`, `pytest.ini` and the function names and signatures as they are.

Your file runs in a process of its own, one per exercise; the grader compares what it returns.
The piece must be yours: the grader refuses, with a line saying why, a file that imports the
project's own version of it (the engine's inside, the reference answers), torch, or Python's
introspection, or that calls the piece (exercise 7 calling `nn.scaled_dot_product_attention`,
exercise 9 `block(x)`). Each file's docstring says what you may use.

`reading/` holds the reading path's code (the files of the project README's table), read-only:
the installed package's source, with each exercise's piece replaced by a stub that names your
file, the notes' section and the formula, e.g. `Softmax.backward` in
`reading/microtensor/ops/softmax.py`. Read it around the piece you write; nothing imports it
and pytest skips it: the graders plug your function from `exercises/` into the installed
package.
"""


def start(directory):
    """Write a fresh workspace into `directory` (created; it must be absent or empty).

    Raises ValueError for a directory that holds anything: a file the project did not write is
    never overwritten.
    """
    root = Path(directory)
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise ValueError(f"exercises start: {directory} exists and is not empty; give a new "
                         "folder (nothing there is overwritten)")
    for ex in EXERCISES:
        _write(root / "exercises" / ex.filename, ex.stub_source())
        _write(root / "graders" / ex.grader_filename,
               _grader_text(ex))
    for path, text in reading_files().items():
        _write(root / "reading" / path, text, mode=0o444)
    _write(root / "README.md", _readme())
    _write(root / "pytest.ini", _PYTEST_INI)
    _write(root / ".gitignore", _GITIGNORE)
    _write(root / MARKER, json.dumps({"format": FORMAT, "exercises": len(EXERCISES)}) + "\n")
    return root


def find_workspace(start_dir):
    """The workspace holding `start_dir` (it or a parent has the marker); ValueError if none."""
    here = Path(start_dir).resolve()
    for folder in (here, *here.parents):
        if (folder / MARKER).is_file():
            return folder
    raise ValueError(f"{start_dir} is not inside an exercises workspace (no {MARKER} found); "
                     "create one with `microtensor exercises start DIR`, or pass --dir DIR")


@dataclass
class Result:
    """One exercise's grade: status "passed", "failed" or "not started"; the checks that passed
    of how many; the first failure's message."""

    exercise: object
    status: str = "passed"
    passed: int = 0
    total: int = 0
    messages: list = field(default_factory=list)


def _grader_text(ex):
    """The grader file `start` writes for exercise `ex`."""
    return _GRADER_FILE.format(n=ex.number, title=ex.title, source=ex.source, slug=ex.slug)


def foreign_grader_files(workspace):
    """The files under the workspace's graders/ that `start` did not write (pytest's
    __pycache__ aside): a `graders/__init__.py` or `conftest.py` there would run inside
    plain pytest's grading."""
    folder = Path(workspace) / "graders"
    expected = {ex.grader_filename for ex in EXERCISES}
    if not folder.is_dir():
        return []
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*")
                  if path.name not in expected and "__pycache__" not in path.parts
                  and not (path.is_dir() and path.name == "__pycache__"))


def run_graders(workspace, numbers=None, own_graders=False):
    """Grade the exercises `numbers` (default: all) of `workspace`: each check of the package's
    own graders run here on the student's file (in a child process per exercise: `grade_check`);
    returns {number: Result}. What the student's code printed is kept with its failure.

    The workspace's graders/ is never imported (a planted file or bytecode there cannot run);
    `check` refuses to grade one that holds a file `start` did not write, or one whose grader
    files differ from the ones `start` wrote, so that `check` and plain `pytest` agree.
    own_graders=True (a teacher's `exercises grade`) ignores the workspace's graders/."""
    workspace = Path(workspace)
    selected = [exercise(n) for n in numbers] if numbers else list(EXERCISES)
    results = {ex.number: Result(ex) for ex in selected}
    refused = []
    if not own_graders:
        foreign = foreign_grader_files(workspace)
        for ex in selected:
            path = workspace / "graders" / ex.grader_filename
            if foreign:
                why = (f"graders/ holds {', '.join(foreign)}, which `microtensor exercises "
                       "start` did not write (pytest would run it inside grading); remove it "
                       "to grade")
            elif not path.is_file():
                why = (f"graders/{ex.grader_filename} is missing; copy it from a fresh "
                       "`microtensor exercises start`")
            elif path.read_text(encoding="utf-8", errors="replace") != _grader_text(ex):
                why = (f"graders/{ex.grader_filename} is not the file `microtensor exercises "
                       "start` wrote (it was edited); copy it from a fresh start to grade")
            else:
                continue
            refused.append(ex)
            results[ex.number].status = "failed"
            results[ex.number].messages.append(why)
    try:
        for ex in selected:
            if ex in refused:
                continue
            result = results[ex.number]
            student = workspace / "exercises" / ex.filename
            for check in checks(ex.number):
                printed = io.StringIO()
                with contextlib.redirect_stdout(printed):
                    message = grade_check(ex.number, check, student)
                result.total += 1
                if message is None:
                    result.passed += 1
                    continue
                lines = printed.getvalue().strip().splitlines()
                if lines:  # the student's own print() calls, kept for debugging (20 lines)
                    message += "\n  your code printed:\n" + "\n".join(
                        "    " + line for line in lines[:20])
                result.messages.append(message)
            if result.messages:
                started = any(NOT_STARTED not in m.splitlines()[0] for m in result.messages)
                result.status = "failed" if started else NOT_STARTED
    finally:
        close_remotes()
    return results
