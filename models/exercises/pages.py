"""The docs page of each exercise (docs/exercises/NN-name.md), written from its stub (what the
student reads) and its grader (what is checked, which mistakes get which hint), so that the
page never drifts from the code: `python -m models.exercises.pages docs/exercises` rewrites
them, and tests/exercises checks that the committed pages are current.
"""
import ast
import sys
from pathlib import Path

from .catalog import EXERCISES


def page_name(ex):
    return f"{ex.slug[2:4]}-{ex.slug[5:].replace('_', '-')}.md"


def _mistakes(grader):
    for mistakes in getattr(grader, "MISTAKES_BY_FUNCTION", {}).values():
        yield from mistakes
    for attr in ("MISTAKES", "FORWARD_MISTAKES", "BACKWARD_MISTAKES", "SPLIT_MISTAKES",
                 "MERGE_MISTAKES"):
        found = getattr(grader, attr, None)
        if found:
            yield from (found.values() if isinstance(found, dict) else found)


def _doc(fn):
    return " ".join((fn.__doc__ or "").split())


def page(ex):
    """The Markdown text of exercise `ex`'s page."""
    stub = ast.get_docstring(ast.parse(ex.stub_source()))
    title, _, body = stub.partition("\n")
    title = title.rstrip(".")
    grader = ex.grader()
    checks = "\n".join(f"- `{c.__name__[len('check_'):]}`: {_doc(c)}" for c in grader.CHECKS)
    mistakes = "\n".join(f"- *{m.name}*: {m.hint}" for m in _mistakes(grader))
    signatures = ", ".join(f"`{name}`" for name in ex.functions)
    return f"""# {title}

*(generated from `models/exercises/stubs/{ex.filename}` and its grader by
`python -m models.exercises.pages docs/exercises`; the exercises: [exercises.md](../exercises.md))*

Where: {ex.source}; in the code: [reading guide](../reading-guide.md)
([中文](../reading-guide.zh.md)). You write {signatures} in `exercises/{ex.filename}` of your
workspace, then run `microtensor exercises check {ex.number}`.

```text
{body.strip()}
```

## What the grader checks

{checks}

## Mistakes it recognizes (and the hint it prints)

{mistakes}
"""


def write(folder):
    """Write every exercise's page into `folder`; returns the paths."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for ex in EXERCISES:
        path = folder / page_name(ex)
        path.write_text(page(ex), encoding="utf-8")
        paths.append(path)
    return paths


if __name__ == "__main__":
    for path in write(sys.argv[1] if len(sys.argv) > 1 else "docs/exercises"):
        print(path)
