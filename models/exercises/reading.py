"""The workspace's reading/ folder: a read-only copy of the reading path's files (README.md's
table), taken from the installed package, with each exercise's piece replaced by a stub.

A piece is found by its qualified name (`Softmax.backward`) in the file's syntax tree (`ast`),
and its body, after the docstring, becomes a comment naming the exercise and one
`raise NotImplementedError("exercise N: write …")`; every other line stays as the package has
it. reading/ is for reading only: nothing imports it, the graders plug the student's function
from exercises/ into the installed package.
"""
import ast
import importlib.util
from pathlib import Path

from .catalog import EXERCISES, READING_PATH

HEADER = ("# Read-only copy of the installed package's {path}, exercises stubbed; never "
          "imported: the graders use the installed package.\n")


def package_source(path):
    """The installed package's text of `path` ("microtensor/ops/softmax.py")."""
    module = path[:-len(".py")].replace("/", ".")
    origin = importlib.util.find_spec(module).origin
    return Path(origin).read_text(encoding="utf-8")


def find_piece(tree, qualname):
    """The function node named `qualname` ("Class.method" or "function") in module `tree`;
    LookupError if the file has none."""
    body = tree.body
    *owners, name = qualname.split(".")
    for owner in owners:
        classes = [n for n in body if isinstance(n, ast.ClassDef) and n.name == owner]
        if not classes:
            raise LookupError(f"no class {owner} for {qualname}")
        body = classes[0].body
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return node
    raise LookupError(f"no function {qualname}")


def body_lines(node):
    """The 1-based line range (first, last) of `node`'s body after its docstring."""
    body = node.body
    if (isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str) and len(body) > 1):
        body = body[1:]
    return body[0].lineno, node.end_lineno


def stub_message(ex, qualname):
    return f"exercise {ex.number}: write {qualname} in exercises/{ex.filename}"


def stubbed(source, pieces):
    """`source` with the body of each (exercise, qualified name) in `pieces` replaced."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    spans = []
    for ex, qualname in pieces:
        node = find_piece(tree, qualname)
        first, last = body_lines(node)
        indent = " " * node.body[-1].col_offset
        stub = (f"{indent}# exercise {ex.number} (notes {ex.section}): {ex.formula}\n"
                f"{indent}# write it in exercises/{ex.filename} (the graders plug yours into the "
                "installed package)\n"
                f"{indent}raise NotImplementedError({stub_message(ex, qualname)!r})\n")
        spans.append((first, last, stub))
    for first, last, stub in sorted(spans, reverse=True):  # from the end: line numbers hold
        lines[first - 1:last] = [stub]
    return "".join(lines)


def reading_files():
    """{path: text} of reading/: each READING_PATH file, stubbed, under the header line."""
    pieces = {}
    for ex in EXERCISES:
        for path, qualname in ex.pieces:
            pieces.setdefault(path, []).append((ex, qualname))
    return {path: HEADER.format(path=path) + stubbed(package_source(path), pieces.get(path, ()))
            for path in READING_PATH}
