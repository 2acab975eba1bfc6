"""Imports point one way (CONTRACT): microtensor <- nn <- models, viz on microtensor alone; read
with ast from the package files."""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN = {"microtensor": {"nn", "models", "viz"}, "viz": {"nn", "models"},
             "nn": {"models", "viz"}}


def imported_packages(package):
    """{(file, top-level package imported)} for every import statement in `package`'s files."""
    found = set()
    for path in (ROOT / package).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            found.update((path.relative_to(ROOT).as_posix(), n.split(".")[0]) for n in names)
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_a_package_imports_nothing_above_it(package):
    wrong = sorted((f, p) for f, p in imported_packages(package) if p in FORBIDDEN[package])
    assert not wrong, (
        f"{package} may not import {sorted(FORBIDDEN[package])}; got (file, import): {wrong}")


def test_each_ops_forward_and_backward_work_on_arrays_alone():
    # the Tensor methods beside an op (issue 24: an op defined once) may use Tensor and apply;
    # the op's forward and backward see numpy arrays only
    wrong = []
    for path in (ROOT / "microtensor" / "ops").glob("*.py"):
        for cls in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(cls, ast.ClassDef):
                continue
            for method in cls.body:
                if isinstance(method, ast.FunctionDef) and method.name in ("forward", "backward"):
                    names = {n.id for n in ast.walk(method) if isinstance(n, ast.Name)}
                    if names & {"Tensor", "apply", "tensor_method"}:
                        wrong.append(f"{path.name}:{cls.name}.{method.name}")
    assert not wrong, f"forward/backward take and return numpy arrays; these use Tensor: {wrong}"


# the op files on the README's reading path (rows 3-7): the maths of each op, and nothing else
PATH_OPS = ("arithmetic", "matmul", "reduction", "shape", "pointwise", "softmax", "masking",
            "layer_norm", "embedding", "loss", "dropout")


def test_the_reading_paths_op_files_hold_no_argument_checks():
    # issue 31: an op file holds its formula, forward and backward; its argument checks,
    # dtype rules and torch's special forms live in parity/surface/
    wrong = []
    for name in PATH_OPS:
        path = ROOT / "microtensor" / "ops" / f"{name}.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Raise) or (
                    isinstance(node, ast.Call) and ast.unparse(node.func) == "isinstance"):
                wrong.append(f"{path.name}:{node.lineno}: {ast.unparse(node)[:60]}")
    assert not wrong, f"expected no raise or isinstance check in the path's op files; got {wrong}"


def test_importing_microtensor_leaves_the_process_allocator_alone():
    calls = []
    for path in (ROOT / "microtensor").rglob("*.py"):
        for stmt in ast.parse(path.read_text(encoding="utf-8")).body:  # module level only
            for node in ast.walk(stmt):
                if (isinstance(node, ast.Call) and not isinstance(stmt, (ast.FunctionDef,
                                                                         ast.ClassDef))
                        and "keep_freed_memory" in ast.unparse(node.func)):
                    calls.append(path.name)
    assert not calls, f"keep_freed_memory() must be called by programs, not at import: {calls}"


def test_the_model_definitions_at_the_top_of_models_import_no_machinery():
    machinery = {"cli", "interop", "training", "tasks", "exercises"}
    wrong = []
    for path in (ROOT / "models").glob("*.py"):
        if path.name == "__main__.py":  # `python -m models` runs the command line
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                modules = [alias.name.split(".") for alias in node.names]
            elif isinstance(node, ast.ImportFrom):  # `from .training import x`, `from . import x`
                module = (node.module or "").split(".")
                modules = [module] if node.module else [[a.name] for a in node.names]
                if node.level:
                    modules = [["models", *m] for m in modules]
            else:
                continue
            wrong += [(path.name, ".".join(m)) for m in modules
                      if m[0] == "models" and len(m) > 1 and m[1] in machinery]
    assert not wrong, ("models/*.py define models and import no training, cli, interop or "
                       f"tasks; got (file, import): {wrong}")
