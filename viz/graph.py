"""`draw_graph`: the computation graph behind a tensor as a graphviz picture, grouped by module, with gradient flow.

Boxes are ops (name and output shape), green ellipses are parameters; after `backward()`
each edge's width and colour show the gradient that flowed back along it (log scale).
Residual adds mark their skip and branch edges (the I + ∂F/∂x of notes 3.6) and the
attention chain is labelled S, A, Z as in notes 3.1–3.4.
"""
import graphviz

from .style import FILL, GradScale, fmt_norm, fmt_shape
from .trace import Edge, Node, trace

# The tensor names scaled_dot_product_attention gives its steps -> (label, symbolic shape)
ATTENTION_STEPS = {
    "QKᵀ": ("QKᵀ", "[B,H,T_q,T_k]"),
    "S": ("S = QKᵀ/√d_k", "[B,H,T_q,T_k]"),
    "S + M": ("S + M  (additive mask)", "[B,H,T_q,T_k]"),
    "S (masked)": ("mask: S → −∞ where blocked", "[B,H,T_q,T_k]"),
    "A": ("A = softmax(S)  (rows over keys)", "[B,H,T_q,T_k]"),
    "Z": ("Z = AV", "[B,H,T_q,d_v]"),
}


def module_units(path):
    """"blocks.0.attn.q_proj" -> ["blocks.0", "attn", "q_proj"]: a list index stays with its container."""
    units = []
    for part in path.split(".") if path else []:
        if part.isdigit() and units:
            units[-1] += "." + part
        else:
            units.append(part)
    return units


def _collapse(nodes, edges, depth):
    """Fold every module `depth` levels down (and everything inside it) into one node."""
    group_of, groups = {}, {}
    for key, node in nodes.items():
        units = module_units(node.module)
        if len(units) >= depth:
            path = ".".join(units[:depth])
            group_of[key] = "m:" + path
            kind = next((k for p, k in node.scope if p == path), "") if node.kind == "op" else ""
            group = groups.setdefault("m:" + path, Node("m:" + path, "module", op=kind, name=path))
            group.op = group.op or kind
    kept = {k: n for k, n in nodes.items() if k not in group_of}
    merged = {}
    for e in edges:
        src, dst = group_of.get(e.src, e.src), group_of.get(e.dst, e.dst)
        if src == dst:
            continue
        if src in groups and e.src in nodes and groups[src].shape == ():
            groups[src].shape, groups[src].grad_norm = nodes[e.src].shape, nodes[e.src].grad_norm
        key = (src, dst) if (src in groups or dst in groups) else (src, dst, e.slot)
        if key not in merged or (e.grad_norm or 0) > (merged[key].grad_norm or 0):
            merged[key] = Edge(src, dst, e.slot, e.grad_norm)
    used = {e.src for e in merged.values()} | {e.dst for e in merged.values()}
    kept.update({k: g for k, g in groups.items() if k in used or not merged})
    return kept, list(merged.values())


def _focus(nodes, edges, path):
    """Only the nodes made inside module `path`, plus dashed stand-ins for what feeds in and reads out."""
    def inside(node):
        return node.module == path or node.module.startswith(path + ".")

    kept = {k: n for k, n in nodes.items() if inside(n)}
    if not kept:
        modules = sorted({n.module for n in nodes.values() if n.module})
        raise ValueError(f"focus={path!r} matches no module in this graph; modules include "
                         f"{modules[:12]}")
    out_edges = []
    for e in edges:
        if e.src in kept and e.dst in kept:
            out_edges.append(e)
        elif e.dst in kept:  # an input from outside the module
            src = nodes[e.src]
            where = src.module or "model"
            kept.setdefault(("in", e.src), Node(("in", e.src), "external", op=src.op or src.kind,
                                                name=f"from {where}: {src.name or src.op}",
                                                shape=src.shape, grad_norm=src.grad_norm))
            out_edges.append(Edge(("in", e.src), e.dst, e.slot, e.grad_norm))
        elif e.src in kept:  # read by an op outside
            dst = nodes[e.dst]
            kept.setdefault(("out", e.dst), Node(("out", e.dst), "external", op=dst.op,
                                                 name=f"to {dst.module or 'model'}: {dst.op}",
                                                 shape=dst.shape))
            out_edges.append(Edge(e.src, ("out", e.dst), e.slot, e.grad_norm))
    return kept, out_edges


def _label(node):
    shape = fmt_shape(node.shape)
    if node.kind == "op" and node.name in ATTENTION_STEPS:
        title, symbolic = ATTENTION_STEPS[node.name]
        consts = "".join(f" ×{c:.4g}" for c in node.consts)
        lines = [title, node.op + consts, f"{symbolic} = {shape}"]
    elif node.kind == "op":
        consts = "".join(f" ×{c:.4g}" if node.op == "mul" else f" {c:.4g}" for c in node.consts)
        lines = [node.op + consts + (f"  ({node.name})" if node.name else ""), shape]
    elif node.kind == "module":
        lines = [node.name, node.op, shape] if node.op else [node.name, shape]
    else:
        lines = [node.name or node.kind, shape]
    norm = fmt_norm(node.grad_norm)
    return "\n".join(lines + ([norm] if norm else []))


def _node_attrs(node, show_saved):
    kind = node.kind
    if kind == "op" and node.name in ATTENTION_STEPS:
        kind = "attention"
    elif kind == "op" and node.op == "residual_add":
        kind = "residual"
    attrs = {"label": _label(node), "fillcolor": FILL[kind], "style": "filled,rounded",
             "shape": "box"}
    if kind in ("param", "input", "const"):
        attrs.update(shape="ellipse", style="filled")
    elif kind == "external":
        attrs.update(style="dashed,rounded")
    elif kind == "module":
        attrs.update(shape="box3d", style="filled")
    elif kind == "residual":
        attrs.update(shape="box", style="filled,bold")
    tip = [f"module: {node.module or '(top level)'}"] if node.kind == "op" else []
    if node.saved:
        saved = ", ".join(f"{k}{fmt_shape(v)}" for k, v in node.saved.items())
        tip.append("saved for backward: " + saved)
        if show_saved:
            attrs["label"] += "\nsaved: " + saved
    if tip:
        attrs["tooltip"] = "\n".join(tip)
    return attrs


def _residual_marks(nodes, edges):
    """{edge index: "skip" | "branch"}: a residual add's input 0 is its skip path; the other
    reads of that same tensor start the branch F that is added back."""
    marks = {}
    for i, e in enumerate(edges):
        node = nodes.get(e.dst)
        if node is not None and node.kind == "op" and node.op == "residual_add" and e.slot == 0:
            marks[i] = "skip"
            for j, other in enumerate(edges):
                if other.src == e.src and other.dst != e.dst and j not in marks:
                    marks[j] = "branch"
    return marks


def _cluster_tree(nodes):
    """{module path: [node keys directly in it]} for the nodes that sit inside modules."""
    members = {}
    for key, node in nodes.items():
        path = node.name if node.kind == "module" else node.module
        units = module_units(path)
        if node.kind == "module":
            units = units[:-1]  # a collapsed module sits in its parent's cluster
        members.setdefault(".".join(units), []).append(key)
    return members


def _emit_clusters(graph, nodes, ids, members, show_saved, parent=""):
    for key in members.get(parent, []):
        graph.node(ids[key], **_node_attrs(nodes[key], show_saved))
    prefix_len = len(module_units(parent))
    children = sorted({".".join(module_units(p)[:prefix_len + 1]) for p in members
                       if p and len(module_units(p)) > prefix_len
                       and module_units(p)[:prefix_len] == module_units(parent)})
    for child in children:
        kind = next((k for n in nodes.values() for p, k in n.scope if p == child), "")
        with graph.subgraph(name="cluster_" + child) as sub:
            sub.attr(label=f"{child}  {kind}".strip(), style="rounded,dashed", color="#7f7f7f",
                     fontname="Helvetica", fontsize="11")
            _emit_clusters(sub, nodes, ids, members, show_saved, child)


def draw_graph(root, *, depth=None, focus=None, show_saved=False, rankdir="TB", title=None):
    """The graph of ops behind `root` (a Tensor) as a `graphviz.Digraph`.

    Args:
        root: usually a loss; any tensor made by microtensor ops.
        depth: fold modules this many levels down (a list index stays with its list, so
            depth=1 shows `blocks.0`, `blocks.1`, ... as one box each); None draws every op.
        focus: a module path such as "blocks.0.attn": draw only the inside of that module,
            with dashed boxes for its inputs and for the ops that read its outputs.
        show_saved: also print, in each op box, the arrays it saved for backward.
        rankdir: graphviz layout direction ("TB" top to bottom, "LR" left to right).
        title: a caption; the default names the edge scale once gradients exist.
    Returns:
        graphviz.Digraph: displays inline in Jupyter; `viz.save(graph, "g.svg")` renders it.
    Raises:
        ValueError: depth < 1, or `focus` names no module of the graph.
    """
    if depth is not None and depth < 1:
        raise ValueError(f"draw_graph: depth must be >= 1 (or None); got {depth}")
    nodes, edges = trace(root)
    if focus:
        nodes, edges = _focus(nodes, edges, focus)
    if depth is not None:
        nodes, edges = _collapse(nodes, edges, depth)
    scale = GradScale([e.grad_norm for e in edges])
    has_grads = any(e.grad_norm is not None for e in edges)

    graph = graphviz.Digraph("microtensor")
    caption = title or (scale.legend() if has_grads else "forward graph (run backward() for gradients)")
    graph.attr(rankdir=rankdir, fontname="Helvetica", label=caption, labelloc="t", fontsize="12")
    graph.attr("node", fontname="Helvetica", fontsize="10")
    graph.attr("edge", fontname="Helvetica", fontsize="9", arrowsize="0.6")
    ids = {key: f"n{i}" for i, key in enumerate(nodes)}  # DOT names: keys may hold ':' or tuples
    _emit_clusters(graph, nodes, ids, _cluster_tree(nodes), show_saved)

    marks = _residual_marks(nodes, edges)
    for i, e in enumerate(edges):
        attrs = scale.edge_attrs(e.grad_norm) if has_grads else {"color": "#555555"}
        if i in marks:
            norm = f" {e.grad_norm:.2e}" if e.grad_norm is not None else ""
            attrs["label"] = f"{marks[i]}{norm}"
            attrs["style"] = "bold" if marks[i] == "skip" else "dashed"
            if marks[i] == "skip":
                attrs["weight"] = "4"  # keep the residual stream straight in the layout
        graph.edge(ids[e.src], ids[e.dst], **attrs)
    return graph
