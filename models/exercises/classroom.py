"""A teacher grades a class in one command, `microtensor exercises grade WORKSPACE...`: each
workspace in a process of its own (so that one student's code, even one that breaks its
grading process, cannot touch the next student's grade), with the checks this package ships,
never the workspace's own graders/ or conftest.py; one row per student, one column per
exercise (`k/m` checks), a message per failure, as a table, CSV or JSON (CONTRACT.md).

Run as `python -m models.exercises.classroom WORKSPACE` it grades one workspace and prints its
row as one JSON line: what the parent reads back.
"""
import csv
import io
import json
import subprocess
import sys
from pathlib import Path

from .catalog import EXERCISES

ROW_MARK = "\x1emicrotensor-grade: "


def grade_workspace(path):
    """The row of one workspace (this process): {"workspace", "exercises": {"1": {"passed",
    "checks_passed", "checks", "message", "status"}, ...}}; ValueError for a folder that is not
    a workspace."""
    from .workspace import MARKER, run_graders

    root = Path(path)
    if not root.is_dir():
        raise ValueError(f"{path} is not a folder")
    if not (root / MARKER).is_file():
        raise ValueError(f"{path} is not an exercises workspace (no {MARKER}); `microtensor "
                         "exercises start` writes one")
    results = run_graders(root, own_graders=True)
    return {"workspace": str(path), "exercises": {
        str(n): {"passed": r.status == "passed", "checks_passed": r.passed, "checks": r.total,
                 "message": r.messages[0] if r.messages else "", "status": r.status}
        for n, r in results.items()}}


def grade_class(paths):
    """Every workspace of `paths` graded in a child process of its own, in order: a list of
    rows; a row that could not be graded has "error" (one line) and no exercises."""
    rows = []
    for path in paths:
        # -I: neither the current folder nor PYTHONPATH goes on the child's path, so no folder
        # of the class can stand in for the package's graders
        done = subprocess.run([sys.executable, "-I", "-m", "models.exercises.classroom",
                               str(path)],
                              capture_output=True, text=True, encoding="utf-8",
                              errors="replace")
        marked = [line for line in done.stdout.split("\n") if line.startswith(ROW_MARK)]
        if marked:
            rows.append(json.loads(marked[-1][len(ROW_MARK):]))
            continue
        lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
        why = lines[-1] if lines else f"grading ended with exit code {done.returncode}"
        rows.append({"workspace": str(path), "error": why, "exercises": {}})
    return rows


def as_json(rows):
    return json.dumps(rows, indent=2, ensure_ascii=False) + "\n"


def as_csv(rows):
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["workspace", *(str(ex.number) for ex in EXERCISES), "exercises_passed",
                     "error"])
    for row in rows:
        cells = row["exercises"]
        writer.writerow([row["workspace"], *(_cell(cells.get(str(ex.number))) for ex in EXERCISES),
                         _total(row), row.get("error", "")])
    return out.getvalue()


def as_table(rows):
    """One line per workspace, `k/m` per exercise, then each failure's first message and one
    line counting the exercises not started."""
    width = max([len("workspace")] + [len(row["workspace"]) for row in rows])
    header = f"{'workspace':<{width}}  " + " ".join(f"{ex.number:>5}" for ex in EXERCISES)
    lines = [header + "  passed"]
    for row in rows:
        if "error" in row:
            lines.append(f"{row['workspace']:<{width}}  error: {row['error']}")
            continue
        cells = " ".join(f"{_cell(row['exercises'].get(str(ex.number))):>5}" for ex in EXERCISES)
        lines.append(f"{row['workspace']:<{width}}  {cells}  {_total(row)}")
    for row in rows:  # real failures one by one; exercises not started counted in one line
        failed = [(n, e) for n, e in row["exercises"].items()
                  if not e["passed"] and e["status"] != "not started"]
        idle = [n for n, e in row["exercises"].items() if e["status"] == "not started"]
        if failed or idle:
            lines.append("")
            lines.append(f"{row['workspace']}:")
            for n, e in failed:
                first = e["message"].splitlines()[0] if e["message"] else e["status"]
                lines.append(f"  {n:>2}  {first}")
            if idle:
                lines.append(f"  not started: {len(idle)} ({', '.join(idle)})")
    return "\n".join(lines) + "\n"


def _cell(entry):
    return "" if entry is None else f"{entry['checks_passed']}/{entry['checks']}"


def _total(row):
    if "error" in row:
        return ""
    return f"{sum(e['passed'] for e in row['exercises'].values())}/{len(EXERCISES)}"


def _main(path):
    try:
        row = grade_workspace(path)
    except ValueError as error:
        print(f"exercises grade: {error}", file=sys.stderr)
        return 1
    sys.stdout.write(ROW_MARK + json.dumps(row, ensure_ascii=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1]))
