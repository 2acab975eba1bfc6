"""Read the computation graph that microtensor recorded behind a tensor into plain nodes and edges, ready to draw.

Each op node carries what the engine stored on its `Function`: op name, output shape,
module scope, the arrays saved for backward, and, after `backward()`, gradient norms.
"""
from dataclasses import dataclass, field


@dataclass
class Node:
    """One box of the picture: an op output, a parameter, an input, or a folded module."""

    key: int
    kind: str  # "op", "param", "input", "const" or "module" (a collapsed module)
    op: str = ""
    name: str = ""  # tensor name: a parameter's dotted name, or "S", "A", "Z" in attention
    shape: tuple = ()
    scope: tuple = ()  # ((module path, class name), ...), outermost first
    grad_norm: float = None  # ‖∂L/∂(this tensor)‖, once backward() has run
    saved: dict = field(default_factory=dict)  # {name: shape} saved for backward
    consts: tuple = ()  # scalar constants folded into the op, e.g. the 1/√d_k of a scale

    @property
    def module(self):
        return self.scope[-1][0] if self.scope else ""


@dataclass
class Edge:
    """Data flows src → dst; `grad_norm` is the gradient that flowed back along it (dst's input `slot`)."""

    src: int
    dst: int
    slot: int
    grad_norm: float = None
    label: str = ""  # what the edge carries, when the boxes do not say (a folded module's weight)


def _leaf_node(tensor):
    name = tensor.name or ""
    if tensor.requires_grad:
        kind = "param" if type(tensor).__name__ == "Parameter" else "input"  # viz may not import nn
        scope = ((name.rsplit(".", 1)[0], ""),) if "." in name else ()
        grad = None if tensor.grad is None else float((tensor.grad.astype("float64") ** 2).sum() ** 0.5)
        return Node(id(tensor), kind, name=name, shape=tensor.shape, scope=scope, grad_norm=grad)
    return Node(id(tensor), "const", name=name, shape=tensor.shape)


def trace(root):
    """All nodes and edges behind `root` (a Tensor).

    Returns (nodes: {key: Node}, edges: [Edge]). Scalar constants (e.g. the 1/√d_k factor)
    are folded into their op's `consts` instead of getting a box of their own.
    """
    nodes, edges = {}, []
    stack, seen = [root], {id(root)}
    while stack:
        tensor = stack.pop()
        fn = tensor._node
        if fn is None:
            nodes[id(tensor)] = _leaf_node(tensor)
            continue
        consts = []
        for slot, parent in enumerate(fn.inputs):
            if parent._node is None and not parent.requires_grad and parent.size == 1:
                consts.append(float(parent.data))
                continue
            norms = fn.input_grad_norms
            edges.append(Edge(id(parent), id(tensor), slot, norms[slot] if slot < len(norms) else None))
            if id(parent) not in seen:
                seen.add(id(parent))
                stack.append(parent)
        nodes[id(tensor)] = Node(id(tensor), "op", op=fn.op, name=tensor.name or "",
                                 shape=tensor.shape, scope=fn.scope, grad_norm=fn.grad_norm,
                                 saved=fn.saved_shapes(), consts=tuple(consts))
    if root.grad is not None and root._node is not None and nodes[id(root)].grad_norm is None:
        nodes[id(root)].grad_norm = float((root.grad.astype("float64") ** 2).sum() ** 0.5)
    return nodes, edges
