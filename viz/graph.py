"""`draw_graph`: the computation graph behind a tensor as a graphviz picture, grouped by module, with gradient flow.

Boxes are ops (name and output shape), green ellipses are parameters; after `backward()`
each edge's width and colour show the gradient that flowed back along it (log scale).
Residual adds mark their skip and branch edges (the I + ∂F/∂x of notes 3.6) and the
attention chain is labelled S, A, Z as in notes 3.1–3.5: both are found by the role the
code that computes them gives their graph node (`grad_fn.role`), never by tensor names.
"""
import graphviz

from .style import FILL, GradScale, fmt_norm, fmt_shape
from .trace import trace
from .views import collapse, focus as focus_view, module_units

# The roles nn.scaled_dot_product_attention gives its steps -> (title, symbolic shape).
# "T_k" / "T_q" become plain "T" in self-attention, where the score matrix is square.
ATTENTION_STEPS = {
    "QKᵀ": ("QKᵀ", "[B,H,T_q,T_k]"),
    "S": ("S = QKᵀ/√d_k", "[B,H,T_q,T_k]"),
    "S + M": ("S + M  (additive mask)", "[B,H,T_q,T_k]"),
    "S (masked)": ("mask: S → −∞ where blocked", "[B,H,T_q,T_k]"),
    "A": ("A = softmax(S)  (rows over keys)", "[B,H,T_q,T_k]"),
    "Z": ("Z = AV", "[B,H,T_q,d_v]"),
}


def _fmt_const(op, c, attention=False):
    """A scalar folded into an arithmetic op; in attention's scaling step 0.1768 reads ×1/√32
    (the 1/√d_k). Other ops' scalars (LayerNorm's default weight 1 and bias 0) are not shown."""
    if op not in ("add", "sub", "mul", "div"):
        return ""
    if op != "mul":
        return f" {c:.4g}"
    if attention and c > 0:
        n = 1.0 / (c * c)
        if n >= 2 and abs(n - round(n)) < 1e-3 * n:
            return f" ×1/√{round(n)}"
    return f" ×{c:.4g}"


def _attention_shapes(nodes, edges):
    """{node key: symbolic shape} for the S, A, Z steps, with T_q = T_k written as T when the scores are square."""
    square = {key for key, n in nodes.items()
              if n.kind == "op" and n.role in ATTENTION_STEPS and n.role != "Z"
              and len(n.shape) >= 2 and n.shape[-1] == n.shape[-2]}
    a_of_z = {e.dst: e.src for e in edges if e.slot == 0}  # Z = A V: A is input 0
    shapes = {}
    for key, n in nodes.items():
        if n.kind != "op" or n.role not in ATTENTION_STEPS:
            continue
        symbolic = ATTENTION_STEPS[n.role][1]
        is_square = a_of_z.get(key) in square if n.role == "Z" else key in square
        if is_square:
            symbolic = symbolic.replace("T_q", "T").replace("T_k", "T")
        shapes[key] = symbolic
    return shapes


def _short_name(node, where):
    """A name as it reads inside the cluster `where`: a parameter keeps its module's last unit
    ("blocks.0.attn.q_proj.weight" -> "q_proj.weight"), a folded module drops the path of
    the cluster around it ("blocks.0.ln_1" in blocks.0 -> "ln_1")."""
    if node.kind == "param" and "." in node.name:
        module, attr = node.name.rsplit(".", 1)
        return f"{module_units(module)[-1]}.{attr}"
    if node.kind == "module" and where and node.name.startswith(where + "."):
        return node.name[len(where) + 1:]
    return node.name


def _label(node, symbolic=None, where=""):
    shape = fmt_shape(node.shape)
    attention = node.kind == "op" and node.role in ATTENTION_STEPS
    consts = "".join(_fmt_const(node.op, c, attention) for c in node.consts)
    if attention:
        title = ATTENTION_STEPS[node.role][0]
        lines = [title, node.op + consts, f"{symbolic or ATTENTION_STEPS[node.role][1]} = {shape}"]
    elif node.kind == "op":
        lines = [node.op + consts + (f"  ({node.role})" if node.role else ""), shape]
    elif node.kind == "module":
        name = _short_name(node, where)
        lines = [name, node.op, shape] if node.op else [name, shape]
    else:
        lines = [_short_name(node, where) or node.kind, shape]
    norm = fmt_norm(node.grad_norm)
    return "\n".join(lines + ([norm] if norm else []))


def _node_attrs(node, show_saved, symbolic=None, where=""):
    kind = node.kind
    if kind == "op" and node.role in ATTENTION_STEPS:
        kind = "attention"
    elif kind == "op" and node.role == "residual":
        kind = "residual"
    attrs = {"label": _label(node, symbolic, where), "fillcolor": FILL[kind], "style": "filled,rounded",
             "shape": "box"}
    if kind in ("param", "input", "const"):
        attrs.update(shape="ellipse", style="filled")
    elif kind == "external":
        attrs.update(style="dashed,rounded")
    elif kind == "module":
        attrs.update(shape="box3d", style="filled")
    elif kind == "residual":
        attrs.update(shape="box", style="filled,bold")
    tip = [f"module: {node.module or '(top level)'}"] if node.kind == "op" else [node.name] if node.name else []
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
    reads = {}
    for i, e in enumerate(edges):
        reads.setdefault(e.src, []).append(i)
    marks = {}
    for i, e in enumerate(edges):
        node = nodes.get(e.dst)
        if node is not None and node.kind == "op" and node.role == "residual" and e.slot == 0:
            marks[i] = "skip"
            for j in reads[e.src]:
                if edges[j].dst != e.dst and j not in marks:
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


def _emit_clusters(graph, nodes, ids, members, attrs_of, flatten=(), parent="", where=""):
    """One dashed cluster per module, nested as the modules are; paths in `flatten` get no box
    (the modules around a focused one, which would only frame it). `where` is the innermost
    cluster drawn so far: labels inside it leave out its path."""
    for key in members.get(parent, []):
        graph.node(ids[key], **attrs_of(key, where))
    depth = len(module_units(parent))
    children = sorted({".".join(module_units(p)[:depth + 1]) for p in members
                       if p and len(module_units(p)) > depth
                       and module_units(p)[:depth] == module_units(parent)})
    for child in children:
        if child in flatten:
            _emit_clusters(graph, nodes, ids, members, attrs_of, flatten, child, where)
            continue
        kind = next((k for n in nodes.values() for p, k in n.scope if p == child), "")
        name = child[len(where) + 1:] if where else child
        with graph.subgraph(name="cluster_" + child) as sub:
            sub.attr(label=f"{name}  {kind}".strip(), tooltip=child, style="rounded,dashed",
                     color="#7f7f7f", fontname="Helvetica", fontsize="11")
            _emit_clusters(sub, nodes, ids, members, attrs_of, flatten, child, child)


def draw_graph(root, *, depth=None, focus=None, show_saved=False, rankdir="TB", title=None):
    """The graph of ops behind `root` (a Tensor) as a `graphviz.Digraph`.

    Args:
        root: usually a loss; any tensor made by microtensor ops.
        depth: fold modules this many levels down (a list index stays with its list, so
            depth=1 shows `blocks.0`, `blocks.1`, ... as one box each); None draws every op.
            With `focus`, depth counts from the focused module: focus="blocks.0", depth=1
            shows its ln_1, attn, ln_2 and mlp as one box each, between the residual adds.
        focus: a module path such as "blocks.0.attn": draw only the inside of that module,
            with dashed boxes for its inputs and for the ops that read its outputs.
        show_saved: also print, in each op box, the arrays it saved for backward.
        rankdir: graphviz layout direction ("TB" top to bottom, "LR" left to right).
        title: a caption; the default names the edge scale once gradients exist.
    Returns:
        graphviz.Digraph: displays inline in Jupyter; `viz.save(graph, "g.svg")` renders it.
    Raises:
        ValueError: depth < 1, an unknown rankdir, or `focus` names no module of the graph.
    """
    if depth is not None and depth < 1:
        raise ValueError(f"draw_graph: depth must be >= 1 (or None); got {depth}")
    if rankdir not in ("TB", "LR", "BT", "RL"):
        raise ValueError(f"draw_graph: rankdir must be TB, LR, BT or RL; got {rankdir!r}")
    nodes, edges = trace(root)
    if focus:
        nodes, edges = focus_view(nodes, edges, focus)
    if depth is not None:
        nodes, edges = collapse(nodes, edges, depth + (len(module_units(focus)) if focus else 0))
    scale = GradScale([e.grad_norm for e in edges])
    has_grads = any(e.grad_norm is not None for e in edges)

    graph = graphviz.Digraph("microtensor")
    caption = title or (scale.legend() if has_grads else "forward graph (run backward() for gradients)")
    graph.attr(rankdir=rankdir, fontname="Helvetica", label=caption, labelloc="t", fontsize="12",
               ranksep="0.3", nodesep="0.25")  # compact: a whole model should fit one slide
    graph.attr("node", fontname="Helvetica", fontsize="10")
    graph.attr("edge", fontname="Helvetica", fontsize="9", arrowsize="0.6")
    ids = {key: f"n{i}" for i, key in enumerate(nodes)}  # DOT names: keys may hold ':' or tuples
    symbolic = _attention_shapes(nodes, edges)
    flatten = {p for p in _ancestors(focus)} if focus else set()
    _emit_clusters(graph, nodes, ids, _cluster_tree(nodes),
                   lambda key, where: _node_attrs(nodes[key], show_saved, symbolic.get(key), where),
                   flatten)

    marks = _residual_marks(nodes, edges)
    for i, e in enumerate(edges):
        attrs = scale.edge_attrs(e.grad_norm) if has_grads else {"color": "#555555"}
        if i in marks:
            norm = f" {e.grad_norm:.2e}" if e.grad_norm is not None else ""
            attrs["label"] = f"{marks[i]}{norm}"
            attrs["style"] = "bold" if marks[i] == "skip" else "dashed"
            if marks[i] == "skip":
                attrs["weight"] = "4"  # keep the residual stream straight in the layout
        elif e.label:
            attrs["label"] = e.label
        graph.edge(ids[e.src], ids[e.dst], **attrs)
    return graph


def _ancestors(path):
    """"blocks.0.attn" -> ["blocks.0"]: the modules that enclose `path` (not `path` itself)."""
    units = module_units(path)
    return [".".join(units[:i]) for i in range(1, len(units))]
