"""Read the computation graph behind a tensor (its `grad_fn` nodes) into plain nodes and edges,
ready to draw.

Each op node carries what the engine keeps on its graph node: op name, role, output
shape, module scope and the arrays saved for backward. Gradient norms are not kept by
the engine: `record_grad_norms()` installs a backward hook (`microtensor.hooks`) that
notes them while backward runs, and `trace` reads them back. Graph walking follows
PyTorch's autograd graph (`grad_fn`, `inputs` ~ `next_functions`, `AccumulateGrad`).
"""
import contextlib
import weakref
from dataclasses import dataclass, field

import numpy as np

from microtensor import hooks
from microtensor.autograd import AccumulateGrad

# graph node -> (‖dL/d(output)‖, (‖dL/d(input_i)‖ or None, ...)), noted by record_grad_norms()
_grad_norms = weakref.WeakKeyDictionary()
# graph node -> {input slot: the caller's name for a constant input}, noted by viz.record_steps()
input_names = weakref.WeakKeyDictionary()


def _norm(a):
    flat = a.reshape(-1)
    return float(np.sqrt(np.dot(flat, flat)))


def _note_norms(fn, grad_inputs, grad_output):
    _grad_norms[fn] = (_norm(grad_output), tuple(None if g is None else _norm(g)
                                                  for g in grad_inputs))


@contextlib.contextmanager
def record_grad_norms():
    """While inside, every backward() notes the gradient norms that `draw_graph` draws.

        with viz.record_grad_norms():
            loss.backward()
        viz.draw_graph(loss)

    Outside it backward does no picture bookkeeping (a training loop pays nothing).
    The norms live as long as the graph's nodes do.
    """
    with hooks.register_backward_hook(_note_norms):
        yield


@dataclass
class Node:
    """One box of the picture: an op output, a parameter, an input, or a folded module."""

    key: object
    kind: str  # "op", "param", "input", "const" or "module" (a collapsed module)
    op: str = ""
    name: str = ""  # a leaf's name (a parameter's dotted name) or a folded module's path
    shape: tuple = ()
    scope: tuple = ()  # ((module path, class name), ...), outermost first
    grad_norm: float = None  # ‖∂L/∂(this tensor)‖, once backward() has run
    saved: dict = field(default_factory=dict)  # {name: shape} saved for backward
    consts: tuple = ()  # scalar constants folded into the op: the 1/√d_k of a scale, pow's p
    role: str = ""  # the op's named step (grad_fn.role): "S", "A", "residual", ...

    @property
    def module(self):
        return self.scope[-1][0] if self.scope else ""


@dataclass
class Edge:
    """Data flows src → dst; `grad_norm` is the gradient that flowed back along it (dst's input
    `slot`)."""

    src: object
    dst: object
    slot: int
    grad_norm: float = None
    label: str = ""  # what the edge carries, when the boxes do not say (a folded module's weight)


def _leaf_node(key, tensor):
    """A box for a leaf that requires grad: a parameter (`tensor.is_parameter`) or an input."""
    name = tensor.name or ""
    kind = "param" if tensor.is_parameter else "input"
    scope = ((name.rsplit(".", 1)[0], ""),) if kind == "param" and "." in name else ()
    grad = None if tensor.grad is None else _norm(tensor.grad.astype(np.float64))
    return Node(key, kind, name=name, shape=tensor.shape, scope=scope, grad_norm=grad)


def trace(root):
    """All nodes and edges behind `root` (a Tensor), walked through `root.grad_fn`.

    Returns (nodes: {key: Node}, edges: [Edge]). Scalar constants (e.g. the 1/√d_k factor)
    are folded into their op's `consts`; other constants get a "const" box each, named by
    the tensor's name when it has one, else by the caller's variable that `record_steps()`
    saw passed in (x, targets).
    """
    if root.grad_fn is None:
        key = id(root)
        if root.requires_grad:
            return {key: _leaf_node(key, root)}, []
        return {key: Node(key, "const", name=root.name or "", shape=root.shape)}, []
    nodes, edges = {}, []
    stack, seen = [root.grad_fn], {id(root.grad_fn)}
    while stack:
        fn = stack.pop()
        key = id(fn)
        if isinstance(fn, AccumulateGrad):  # a leaf that requires grad
            nodes[key] = _leaf_node(key, fn.variable)
            continue
        out_norm, in_norms = _grad_norms.get(fn, (None, ()))
        for slot, parent in enumerate(fn.inputs):
            norm = in_norms[slot] if slot < len(in_norms) else None
            if parent is None:
                if slot in fn.constants:
                    continue  # folded into the op's label below
                const_key = (key, slot)
                name = fn.constant_names.get(slot) or input_names.get(fn, {}).get(slot, "")
                nodes[const_key] = Node(const_key, "const", shape=fn.input_shapes[slot],
                                        name=name)
                edges.append(Edge(const_key, key, slot))
                continue
            edges.append(Edge(id(parent), key, slot, norm))
            if id(parent) not in seen:
                seen.add(id(parent))
                stack.append(parent)
        nodes[key] = Node(key, "op", op=fn.op, shape=fn.shape, scope=fn.scope,
                          grad_norm=out_norm, saved=fn.saved_shapes(),
                          consts=tuple(fn.constants[s] for s in sorted(fn.constants))
                          + ((fn.exponent,) if fn.op == "pow" else ()),
                          role=fn.role or "")
    return nodes, edges
