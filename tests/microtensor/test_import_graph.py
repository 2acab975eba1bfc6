"""No import circles: the graph of which module imports which, read with ast from the source of
microtensor, nn, models and viz (every import statement, at module level or inside a function,
since a lazy import that dodges a circle is still one)."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("microtensor", "nn", "models", "viz")


def module_name(path):
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph():
    """{module: {modules it imports by name}}, within the four packages."""
    files = {module_name(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}
    graph = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([node.module] if node.module else []))
                for alias in node.names:  # `from pkg import sub` imports the module pkg.sub
                    targets.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in files
                                else base)
        graph[name] = {t for t in targets if t in files and t != name}
    return graph


def cycles(graph):
    """Every strongly connected set of more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_import_graph_reader_sees_a_circle_when_there_is_one():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_microtensor_modules_import_each_other_in_no_circle():
    graph = import_graph()
    engine = {m: {t for t in ts if t.startswith("microtensor")}
              for m, ts in graph.items() if m.startswith("microtensor")}
    assert engine["microtensor.ops.arithmetic"] >= {"microtensor.tensor"}, \
        "expected the reader to see arithmetic.py import tensor.py"
    found = cycles(engine)
    assert found == [], f"expected no import circle in microtensor; got {found}"


def test_no_import_circle_in_the_four_packages():
    found = cycles(import_graph())
    assert found == [], f"expected no import circle in microtensor, nn, models, viz; got {found}"
