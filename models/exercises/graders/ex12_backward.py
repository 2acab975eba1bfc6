"""Grader of exercise 12, the engine's backward(): topological order and the chain rule (notes
3.8; micrograd's `backward`). The order is checked for what makes it topological (every node
after its inputs, each once, exactly the nodes the root depends on), on micrograd's hand
example, a node reached along paths of different lengths, a node used twice, random graphs
and a chain of 300; the gradients against an independent oracle, the total derivative
(I − L)⁻¹ of the graph's matrix of local derivatives L."""
import numpy as np

from .. import reference
from ..grading import (
    ExerciseFailure,
    Mistake,
    as_array,
    call,
    compare,
    inputs_rng,
    student_function,
)

HINT = ("order: depth-first from the root, a node's inputs before the node, each node placed "
        "once (a set); backward: grad[root] = 1, then over the order reversed (root first), "
        "grad[input] += local · grad[node]")


def _bfs(inputs, root):  # by distance from the root, then reversed: not topological
    order, seen, frontier = [], {root}, [root]
    while frontier:
        order.extend(frontier)
        nxt = []
        for node in frontier:
            for parent in inputs[node]:
                if parent not in seen:
                    seen.add(parent)
                    nxt.append(parent)
        frontier = nxt
    return order[::-1]


def _no_visited_set(inputs, root):  # a node reached along two paths is placed twice
    order = []

    def visit(node):
        for parent in inputs[node]:
            visit(parent)
        order.append(node)

    visit(root)
    return order


def _root_first(inputs, root):
    return reference.topological_order(inputs, root)[::-1]


def _assigned(inputs, local, root):  # = instead of +=
    grad = [0.0] * len(inputs)
    grad[root] = 1.0
    for node in reversed(reference.topological_order(inputs, root)):
        for parent, d in zip(inputs[node], local[node]):
            grad[parent] = d * grad[node]
    return grad


def _forward_order(inputs, local, root):  # the order not reversed: leaves first
    grad = [0.0] * len(inputs)
    grad[root] = 1.0
    for node in reference.topological_order(inputs, root):
        for parent, d in zip(inputs[node], local[node]):
            grad[parent] += d * grad[node]
    return grad


def _no_local(inputs, local, root):  # the chain rule without the local derivative
    grad = [0.0] * len(inputs)
    grad[root] = 1.0
    for node in reversed(reference.topological_order(inputs, root)):
        for parent in inputs[node]:
            grad[parent] += grad[node]
    return grad


def _root_zero(inputs, local, root):  # grad[root] never set to 1: everything stays 0
    grad = [0.0] * len(inputs)
    for node in reversed(reference.topological_order(inputs, root)):
        for parent, d in zip(inputs[node], local[node]):
            grad[parent] += d * grad[node]
    return grad


ORDER_HINTS = {
    "twice": "keep a set of the nodes already placed: a node reached along two paths (or used "
             "twice by one node) must appear once, or backward hands on its gradient twice",
    "reversed": "the order lists each node *after* its inputs, so the root comes last; "
                "backward then walks it reversed",
    "before input": "order by depth-first search (a node's inputs first, then the node), not "
                    "by distance from the root: a node reached along a short and a long path "
                    "must come before the nodes of both",
}
ORDER_MISTAKES = [
    Mistake("breadth first", ORDER_HINTS["before input"], _bfs),
    Mistake("no visited set", ORDER_HINTS["twice"], _no_visited_set),
    Mistake("root first", ORDER_HINTS["reversed"], _root_first),
]
BACKWARD_MISTAKES = [
    Mistake("= not +=", "accumulate: grad[input] += local · grad[node]; a node used by two "
            "nodes (or twice by one, x·x) receives both contributions", _assigned),
    Mistake("leaves first", "walk the order *reversed*, from the root: a node may hand on its "
            "gradient only after every node that uses it has handed it theirs", _forward_order),
    Mistake("no local derivative", "the chain rule multiplies by the local derivative: "
            "grad[input] += local[node][j] · grad[node]", _no_local),
    Mistake("grad[root] = 0", "start with grad[root] = 1 (∂root/∂root): with 0 every gradient "
            "stays 0", _root_zero),
]
MISTAKES_BY_FUNCTION = {"topological_order": ORDER_MISTAKES, "backward": BACKWARD_MISTAKES}


def _depends(inputs, root):
    """The nodes root depends on (root included)."""
    seen, stack = {root}, [root]
    while stack:
        for parent in inputs[stack.pop()]:
            if parent not in seen:
                seen.add(parent)
                stack.append(parent)
    return seen


def _order_problem(order, inputs, root):
    """(message, kind) of the first way `order` is not a topological order of root's graph, or
    None."""
    try:
        order = [int(node) for node in order]
    except (TypeError, ValueError):
        return "topological_order must return a list of node ids (ints)", "type"
    needed = _depends(inputs, root)
    seen = set()
    for node in order:
        if node in seen:
            return f"node {node} appears twice in the order", "twice"
        seen.add(node)
    if order and order[0] == root and len(order) > 1:
        return f"the order starts with the root, node {root}; it must end with it", "reversed"
    position = {node: i for i, node in enumerate(order)}
    for node in order:
        for parent in inputs[node] if 0 <= node < len(inputs) else ():
            if parent in position and position[parent] > position[node]:
                return (f"node {node} comes before its input {parent} (at {position[node]} "
                        f"and {position[parent]})", "before input")
    missing = sorted(needed - seen)
    if missing:
        return f"node {missing[0]} is missing: the root depends on it", "missing"
    extra = sorted(seen - needed)
    if extra:
        return f"node {extra[0]} is in the order, but the root does not depend on it", "extra"
    if order[-1] != root:
        return f"the order ends with node {order[-1]}, not the root {root}", "reversed"
    return None


def _check_order(fn, inputs, root, context):
    got = call(fn, [list(i) for i in inputs], root, what="topological_order(...)",
               context=context, hint=HINT)
    if got is None:
        raise ExerciseFailure("topological_order returned None; did you forget `return`?")
    problem = _order_problem(list(got), inputs, root)
    if problem:
        message, kind = problem
        raise ExerciseFailure(f"{message}, expected each node after all of its inputs, root "
                              f"last ({context}). Hint: {ORDER_HINTS.get(kind, HINT)}")


def oracle(inputs, local, root):
    """∂root/∂node for every node, by linear algebra alone: with L[i, j] the local derivative
    of node i on node j (summed over repeated edges), the total derivatives are the root's row
    of (I − L)⁻¹ = I + L + L² + … (L is nilpotent: the graph has no cycle)."""
    n = len(inputs)
    matrix = np.zeros((n, n))
    for i, (parents, ds) in enumerate(zip(inputs, local)):
        for parent, d in zip(parents, ds):
            matrix[i, parent] += d
    return np.linalg.solve((np.eye(n) - matrix).T, np.eye(n)[root])


def _check_backward(fn, inputs, local, root, context):
    args = ([list(i) for i in inputs], [list(d) for d in local], root)
    compare(fn, args, oracle(inputs, local, root), "grad", hint=HINT,
            mistakes=BACKWARD_MISTAKES, atol=1e-9, rtol=1e-7, context=context)


# micrograd's README example: e = a·b, d = e + c, L = d·f with a = 2, b = −3, c = 10, f = −2
HAND = ([[], [], [], [0, 1], [3, 2], [], [4, 5]],
        [[], [], [], [-3.0, 2.0], [1.0, 1.0], [], [-2.0, 4.0]], 6)
# x (0); y = x² (1, from x twice: local 2x each... written as x·x); z = y + x (2)
TWICE = ([[], [0, 0], [1, 0]], [[], [3.0, 3.0], [1.0, 1.0]], 2)  # x = 3


def check_hand_example(student):
    """micrograd's: a = 2, b = −3, c = 10, f = −2, e = a·b, d = e + c, L = d·f (node 6):
    ∂L/∂a = 6, ∂L/∂b = −4, ∂L/∂c = −2, ∂L/∂f = 4, ∂L/∂e = ∂L/∂d = −2."""
    inputs, local, root = HAND
    context = "micrograd's e = a·b, d = e + c, L = d·f"
    _check_order(student_function(student, "topological_order"), inputs, root, context)
    fn = student_function(student, "backward")
    compare(fn, (inputs, local, root), [6.0, -4.0, -2.0, -2.0, -2.0, 4.0, 1.0], "grad",
            hint=HINT, mistakes=BACKWARD_MISTAKES, context=context)


def check_a_node_used_twice_and_along_two_paths(student):
    """x = 3, y = x·x, z = y + x: x is used twice by y and reached along paths of lengths 1
    and 2; ∂z/∂x = 2x + 1 = 7. Then a diamond whose branches have different depths."""
    order = student_function(student, "topological_order")
    fn = student_function(student, "backward")
    inputs, local, root = TWICE
    _check_order(order, inputs, root, "x = 3, y = x·x, z = y + x")
    _check_backward(fn, inputs, local, root, "x = 3, y = x·x, z = y + x")
    # a = leaf; b = f(a); c = g(b); d = h(c); e = d + a·… : a reached at depths 1 and 3
    diamond = ([[], [0], [1], [2], [3, 0]], [[], [2.0], [-1.5], [0.5], [1.0, 4.0]], 4)
    _check_order(order, *diamond[::2], "a chain a → b → c → d, then e = d + a")
    _check_backward(fn, *diamond, "a chain a → b → c → d, then e = d + a")


def _random_graph(rng, n, extra_roots=3):
    """A random DAG: node i's inputs drawn from the nodes before it; nodes after the root
    (which the root does not depend on) are included too."""
    inputs, local = [], []
    for i in range(n):
        k = 0 if i < 3 else int(rng.integers(1, 4))
        parents = [int(p) for p in rng.integers(0, i, size=k)] if i else []
        inputs.append(parents)
        local.append([float(d) for d in rng.normal(size=len(parents))])
    return inputs, local, n - 1 - extra_roots


def check_random_graphs_and_a_long_chain(student):
    """Five random graphs of 25 nodes (repeated inputs, nodes the root does not depend on)
    against (I − L)⁻¹; a chain of 300 nodes."""
    order = student_function(student, "topological_order")
    fn = student_function(student, "backward")
    rng = inputs_rng(40)
    for trial in range(5):
        inputs, local, root = _random_graph(rng, 25)
        context = f"random graph {trial} of 25 nodes, root {root}"
        _check_order(order, inputs, root, context)
        _check_backward(fn, inputs, local, root, context)
    n = 300
    inputs = [[]] + [[i] for i in range(n - 1)]
    local = [[]] + [[1.0 + 0.001 * i] for i in range(n - 1)]
    _check_order(order, inputs, n - 1, "a chain of 300 nodes")
    _check_backward(fn, inputs, local, n - 1, "a chain of 300 nodes")
    grad = as_array(call(fn, inputs, local, n - 1, what="backward(...)", hint=HINT), "grad")
    if len(grad) != n:
        raise ExerciseFailure(f"grad has {len(grad)} entries, expected {n}. Hint: {HINT}")


CHECKS = [check_hand_example, check_a_node_used_twice_and_along_two_paths,
          check_random_graphs_and_a_long_chain]
