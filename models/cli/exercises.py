"""`microtensor exercises`: write a student's workspace of stubs (`start DIR`), grade it
(`check [N]`), show progress (`status`), grade a class (`grade WORKSPACE...`, a teacher's).
See models/exercises/ and docs/exercises.md.

`check` exits 0 when every exercise it graded passes, 1 otherwise (a course's script can rely
on it); the graders run in this process with pytest, as `pytest` in the workspace would, and
each exercise's student file in a child process of its own (models/exercises/sandbox.py).
"""
import argparse


def add_parser(subparsers):
    p = subparsers.add_parser(
        "exercises", help="write and grade the course exercises (backward passes, attention, ...)",
        description="Exercises beside the notes' chapter 3: write a workspace of stubs, then "
                    "grade your code against finite differences, the notes' hand example and "
                    "the project's reference code.")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    s = actions.add_parser("start", help="write a fresh workspace into DIR",
                           description="Write a workspace: exercises/ (the stubs you fill in), "
                                       "graders/ (pytest files), README.md. DIR must be new "
                                       "or empty.")
    s.add_argument("dir", metavar="DIR", help="the folder to create")
    s.set_defaults(run=run_start)
    c = actions.add_parser("check", help="grade the workspace (all exercises, or exercise N)",
                           description="Grade the workspace: pass or fail per exercise, and for "
                                       "a failure the first wrong number, where, and a hint.")
    c.add_argument("number", metavar="N", nargs="?", type=_exercise_number,
                   help="grade only exercise N")
    c.add_argument("--dir", default=".", help="the workspace (default: the current folder)")
    c.add_argument("--all-messages", action="store_true",
                   help="every failing check's message, not only the first per exercise")
    c.set_defaults(run=run_check)
    t = actions.add_parser("status", help="progress: which exercises pass",
                           description="Grade every exercise quietly and print one line each.")
    t.add_argument("--dir", default=".", help="the workspace (default: the current folder)")
    t.set_defaults(run=run_status)
    g = actions.add_parser(
        "grade", help="a teacher's: grade a class of workspaces, one row per student",
        description="Grade each WORKSPACE in a process of its own with the graders this package "
                    "ships (never the workspace's own graders/ or conftest.py): one row per "
                    "student, one column per exercise (checks passed/checks), the first message "
                    "of each failure. Exits 0 once every workspace was graded, whatever it "
                    "scored; 1 when a path could not be graded (its row says why).")
    g.add_argument("workspaces", metavar="WORKSPACE", nargs="+", help="a student's workspace")
    g.add_argument("--format", choices=("table", "csv", "json"), default="table",
                   help="table (a terminal's, the default), csv (one row per workspace, one "
                        "column per exercise, k/m) or json (a list, one object per workspace)")
    g.set_defaults(run=run_grade)


def _exercise_number(text):
    from models.exercises import EXERCISES

    try:
        number = int(text)
    except ValueError:
        number = None
    if number is None or not 1 <= number <= len(EXERCISES):
        raise argparse.ArgumentTypeError(f"must be an exercise number 1 to {len(EXERCISES)}; "
                                         f"got {text!r}")
    return number


def run_start(args):
    from models.exercises import EXERCISES
    from models.exercises.workspace import start

    root = start(args.dir)
    print(f"wrote {len(EXERCISES)} exercises into {root}/exercises/ and their graders into "
          f"{root}/graders/")
    print(f"the reading path's code, to read around them (exercises stubbed): {root}/reading/")
    print(f"next: open {root}/exercises/{EXERCISES[0].filename}, then run "
          f"`microtensor exercises check 1` in {root}")
    return 0


def _grade(directory, numbers):
    from models.exercises.workspace import find_workspace, run_graders

    return run_graders(find_workspace(directory), numbers)


def run_check(args):
    results = _grade(args.dir, [args.number] if args.number else None)
    for result in results.values():
        ex = result.exercise
        mark = {"passed": "PASS", "failed": "FAIL"}.get(result.status, "TODO")
        checks = f"{result.passed}/{result.total} checks"
        print(f"{mark}  exercise {ex.number:2d}  {ex.title} ({ex.source}): "
              f"{result.status}, {checks}")
        if result.status == "failed":
            for message in result.messages if args.all_messages else result.messages[:1]:
                print("      " + message.replace("\n", "\n      "))
    passed = sum(r.status == "passed" for r in results.values())
    print(f"{passed} of {len(results)} passed")
    return 0 if passed == len(results) else 1


def run_status(args):
    from models.exercises import EXERCISES

    results = _grade(args.dir, None)
    done = sum(r.status == "passed" for r in results.values())
    print(f"{done} of {len(EXERCISES)} exercises pass")
    for result in results.values():
        ex = result.exercise
        box = {"passed": "[x]", "failed": "[~]"}.get(result.status, "[ ]")
        print(f"{box} {ex.number:2d}. {ex.title} ({ex.source}): {result.status}"
              + (f", {result.passed}/{result.total} checks" if result.status == "failed" else ""))
    upcoming = [r for r in results.values() if r.status != "passed"]
    if upcoming:
        ex = upcoming[0].exercise
        print(f"next: exercises/{ex.filename}, then `microtensor exercises check {ex.number}`")
    return 0


def run_grade(args):
    from models.exercises import classroom

    rows = classroom.grade_class(args.workspaces)
    print({"table": classroom.as_table, "csv": classroom.as_csv,
           "json": classroom.as_json}[args.format](rows), end="")
    return 1 if any("error" in row for row in rows) else 0
