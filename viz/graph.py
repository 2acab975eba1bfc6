"""`draw_graph`: the computation graph behind a tensor as a graphviz picture, grouped by module,
with gradient flow.

Boxes are ops (name and output shape), green ellipses are parameters; after `backward()`
each edge's width and colour show the gradient that flowed back along it (log scale).
Residual adds mark their skip and branch edges (the I + ∂F/∂x of notes 3.6) and the
attention chain is labelled S, A, Z as in notes 3.1–3.5: both are found by the role the
code that computes them gives their graph node (`grad_fn.role`), never by tensor names.
"""
from dataclasses import replace
from html import escape

import graphviz

from .fold import FoldedNode, fold_repeats
from .legend import legend_label
from .overlay import NOTES, OVERLAYS, overlay_lines
from .save import page_size
from .style import FILL, GradScale, fmt_norm, fmt_number, fmt_shape, mix
from .trace import trace
from .views import collapse, module_units
from .views import focus as focus_view

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
    """{node key: symbolic shape} for the S, A, Z steps, with T_q = T_k written as T when the scores
    are square."""
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
        lines = [node.op + consts + (f"  ({node.role})" if node.role else "") + " " + shape]
    elif node.kind == "module":
        name = _short_name(node, where)
        lines = [name, node.op, shape] if node.op else [name, shape]
    else:
        lines = [(_short_name(node, where) or node.kind) + " " + shape]
    norm = fmt_norm(node.grad_norm)
    return "\n".join(lines + ([norm] if norm else []))


def _folded_label(node, scale, where=""):
    """An HTML-like label: the run's name and class, then one bar per block, as tall as that
    block's ‖∂L/∂output‖ relative to the largest of the run and coloured as an edge carrying it."""
    name = node.name[len(where) + 1:] if where and node.name.startswith(where + ".") else node.name
    count = len(node.members)
    rows = [f"<tr><td><b>{escape(name)} · {escape(node.op)} ×{count}</b></td></tr>",
            f"<tr><td>{fmt_shape(node.shape)}</td></tr>"]
    norms = [n for _, n in node.members]
    if all(n is not None for n in norms):
        top = max(norms) or 1.0
        bars, numbers = [], []
        first = int(node.members[0][0].rpartition(".")[2])
        for i, n in enumerate(norms):
            t = scale.position(n)
            colour = mix(t) if t is not None else "#9e9e9e"
            bars.append(f'<td valign="bottom" fixedsize="true" width="16" height="26">'
                        f'<table border="0" cellspacing="0" cellpadding="0"><tr>'
                        f'<td bgcolor="{colour}" fixedsize="true" width="12" '
                        f'height="{max(1, round(24 * n / top))}"></td></tr></table></td>')
            numbers.append(f'<td><font point-size="9">{first + i}</font></td>')
        rows += [f'<tr><td><table border="0" cellspacing="1" cellpadding="0"><tr>{"".join(bars)}'
                 f'</tr><tr>{"".join(numbers)}</tr></table></td></tr>',
                 f"<tr><td>‖g‖ per block: {fmt_number(min(norms))} … {fmt_number(max(norms))}"
                 "</td></tr>"]
    return '<<table border="0" cellborder="0" cellspacing="1">' + "".join(rows) + "</table>>"


def _fill_kind(node):
    """The colour class of a node: its kind, with attention steps and residual adds apart."""
    if node.kind == "op" and node.role in ATTENTION_STEPS:
        return "attention"
    if node.kind == "op" and node.role == "residual":
        return "residual"
    return node.kind


def _node_attrs(node, show_saved, symbolic=None, where="", scale=None):
    kind = _fill_kind(node)
    attrs = {"label": _label(node, symbolic, where), "fillcolor": FILL[kind],
             "style": "filled,rounded", "shape": "box"}
    if kind in ("param", "input", "const"):
        attrs.update(shape="ellipse", style="filled")
    elif kind == "external":
        attrs.update(style="dashed,rounded")
    elif kind == "module":
        attrs.update(shape="box3d", style="filled")
        if isinstance(node, FoldedNode):
            attrs["label"] = _folded_label(node, scale, where)
    elif kind == "residual":
        attrs.update(shape="box", style="filled,bold")
    if node.kind == "op":
        tip = [f"module: {node.module or '(top level)'}"]
    else:
        tip = [node.name] if node.name else []
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
        if isinstance(node, FoldedNode):
            path = node.members[0][0]  # "blocks.0–3" sits where "blocks.0" would
        units = module_units(path)
        if node.kind == "module":
            units = units[:-1]  # a collapsed module sits in its parent's cluster
        members.setdefault(".".join(units), []).append(key)
    return members


def _merge_tail(nodes, edges, start, allowed):
    """The ops that follow Z = AV while they stay in its module and have one reader each:
    the head merge (transpose, reshape) that joins Z's row."""
    readers = {}
    for e in edges:
        readers.setdefault(e.src, []).append(e.dst)
    tail = []
    for key in start:
        while len(readers.get(key, [])) == 1 and readers[key][0] in allowed:
            key = readers[key][0]
            tail.append(key)
    return tail


def _emit_clusters(graph, nodes, ids, members, attrs_of, edges, flatten=(), parent="",
                   where="", rows=False):
    """One dashed cluster per module, nested as the modules are; paths in `flatten` get no box
    (the modules around a focused one, which would only frame it). `where` is the innermost
    cluster drawn so far: labels inside it leave out its path."""
    here = members.get(parent, [])
    # with `rows`, attention's steps stand side by side: QKᵀ → S → mask → A → Z reads across
    # the page under the Q, K and V columns, which keeps a slide landscape
    steps = [k for k in here if rows and _fill_kind(nodes[k]) == "attention"]
    steps += _merge_tail(nodes, edges, [k for k in steps if nodes[k].role == "Z"], set(here))
    # a weight beside the op that reads it (W → x W in a Linear): one rank less, and the
    # input's edges come into the projections from above instead of around the weights
    beside = {}
    for key in here if rows else ():
        readers = [e.dst for e in edges if e.src == key and e.dst in here]
        if nodes[key].kind == "param" and len(readers) == 1 and readers[0] not in steps:
            beside.setdefault(readers[0], []).append(key)
    paired = set(beside) | {k for params in beside.values() for k in params}
    for key in here:
        if key not in paired and (key not in steps or len(steps) < 2):
            graph.node(ids[key], **attrs_of(key, where))
    for reader, params in beside.items():
        with graph.subgraph() as pair:
            pair.attr(rank="same")
            for key in params + [reader]:
                pair.node(ids[key], **attrs_of(key, where))
    if len(steps) >= 2:
        with graph.subgraph() as row:
            row.attr(rank="same")
            for key in steps:
                row.node(ids[key], **attrs_of(key, where))
    depth = len(module_units(parent))
    # in order of first use (members follow the forward order): q_proj, k_proj, v_proj, out_proj
    children = list(dict.fromkeys(".".join(module_units(p)[:depth + 1]) for p in members
                                  if p and len(module_units(p)) > depth
                                  and module_units(p)[:depth] == module_units(parent)))
    for child in children:
        if child in flatten:
            _emit_clusters(graph, nodes, ids, members, attrs_of, edges, flatten, child, where,
                           rows)
            continue
        kind = next((k for n in nodes.values() for p, k in n.scope if p == child and k), "")
        name = child[len(where) + 1:] if where else child
        with graph.subgraph(name="cluster_" + child) as sub:
            sub.attr(label=f"{name}  {kind}".strip(), tooltip=child, style="rounded,dashed",
                     color="#7f7f7f", fontname="Helvetica", fontsize="11")
            _emit_clusters(sub, nodes, ids, members, attrs_of, edges, flatten, child, child,
                           rows)


def _forward_order(nodes, edges):
    """`nodes` reordered as a forward pass would make them, an op's inputs in slot order
    (Q before K before V): dot keeps the order boxes are declared in where it can."""
    inputs = {}
    for e in sorted(edges, key=lambda e: e.slot):
        inputs.setdefault(e.dst, []).append(e.src)
    readers = {e.src for e in edges}
    order, done = [], set()
    for sink in [k for k in nodes if k not in readers] + list(nodes):
        stack = [(sink, False)]
        while stack:
            key, expanded = stack.pop()
            if expanded:
                order.append(key)
                continue
            if key in done:
                continue
            done.add(key)
            stack.append((key, True))
            stack.extend((k, False) for k in reversed(inputs.get(key, [])) if k not in done)
    return {k: nodes[k] for k in order}


def _number_leaves(nodes):
    """Unnamed inputs read "input 1", "input 2", ... so that two of them tell apart."""
    count = 0
    for node in nodes.values():
        if node.kind in ("input", "const") and not node.name:
            count += 1
            node.name = f"{node.kind} {count}"


def draw_graph(root, *, depth=None, focus=None, show_saved=False, rankdir="TB", title=None,
               direction="forward", fold=True, size=None, legend=True, overlay=None):
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
        title: the first line of the key (default: none).
        direction: "forward" draws arrows the way data flows; "backward" turns every arrow
            round, the way the gradient flows (the layout stays the same).
        fold: with `depth`, draw a run of repeated blocks (blocks.0, blocks.1, ... of one
            class) as one box "blocks.0–3 · TransformerBlock ×4" with a bar per block's ‖g‖;
            False draws each block (`focus` opens one).
        size: a page to fill: "16:9" or "4:3" (a 13.33-inch-wide slide), "WxH" in inches
            ("10x5.625"), or a (width, height) pair in inches. None: Graphviz's natural size.
        legend: print the key (what width, colour, ‖g‖ and edge labels mean) in the picture.
        overlay: "flops" or "saved": print in each box the FLOPs or the bytes saved for
            backward that `microtensor.profile()` counts for it (the forward pass must have
            run inside `viz.record_costs()`; a folded module shows the sum of its ops);
            "grad": print on every edge the ‖∂L/∂x‖ it carried back.
    Returns:
        graphviz.Digraph: displays inline in Jupyter as SVG; `viz.save(graph, "g.svg")`
        renders it.
    Raises:
        ValueError: depth < 1, an unknown rankdir, direction or overlay, a size that is not
            a page, `focus` names no module of the graph, or an overlay of costs that were
            not recorded.
    """
    if depth is not None and depth < 1:
        raise ValueError(f"draw_graph: depth must be >= 1 (or None); got {depth}")
    if overlay is not None and overlay not in OVERLAYS:
        raise ValueError(f"draw_graph: overlay must be one of {', '.join(OVERLAYS)} (or None); "
                         f"got {overlay!r}")
    nodes, edges = graph_view(root, depth=depth, focus=focus, fold=fold)
    lines = overlay_lines(root, nodes, overlay) if overlay in ("flops", "saved") else None
    return render(nodes, edges, focus=focus, show_saved=show_saved, rankdir=rankdir, title=title,
                  direction=direction, size=size, legend=legend, overlay=lines,
                  overlay_note=NOTES.get(overlay), edge_numbers=overlay == "grad")


def graph_view(root, depth=None, focus=None, fold=True):
    """The (nodes, edges) that `draw_graph` draws: `trace(root)`, cut to `focus`, folded to
    `depth`, repeated blocks folded, in forward order, unnamed inputs numbered."""
    nodes, edges = trace(root)
    if focus:
        nodes, edges = focus_view(nodes, edges, focus)
    if depth is not None:
        nodes, edges = collapse(nodes, edges, depth + (len(module_units(focus)) if focus else 0))
        if fold:
            nodes, edges = fold_repeats(nodes, edges)
    nodes = _forward_order(nodes, edges)
    _number_leaves(nodes)
    return nodes, edges


PENDING = "‖g‖ ?"  # a gradient backward() has not reached yet (the frames of viz.animate)


def render(nodes, edges, *, focus=None, show_saved=False, rankdir="TB", title=None,
           direction="forward", size=None, legend=True, overlay=None, overlay_note=None,
           edge_numbers=False, pending=(), current=None):
    """Draw (nodes, edges) of `graph_view` as a `graphviz.Digraph` (see `draw_graph`).

    overlay: {node key: extra line for its box} (`viz.overlay`), explained in the key by
        `overlay_note`.
    edge_numbers: label every edge with its gradient norm.
    pending: keys of nodes whose gradient is not known yet: their boxes are grey and read
        "‖g‖ ?", the edges into them carry nothing yet.
    current: the key of the node to highlight (the one backward() is at).
    """
    if rankdir not in ("TB", "LR", "BT", "RL"):
        raise ValueError(f"draw_graph: rankdir must be TB, LR, BT or RL; got {rankdir!r}")
    if direction not in ("forward", "backward"):
        raise ValueError(f"draw_graph: direction must be 'forward' or 'backward'; "
                         f"got {direction!r}")
    page = page_size(size) if size is not None else None
    overlay = overlay or {}
    scale = GradScale([e.grad_norm for e in edges])
    has_grads = any(e.grad_norm is not None for e in edges)

    graph = graphviz.Digraph("microtensor")
    graph.attr(rankdir=rankdir, fontname="Helvetica", fontsize="11", ranksep="0.3",
               nodesep="0.25")  # compact: a whole model should fit one slide
    if page:
        # "!": scale the whole drawing, text included, up or down until it just fits the page
        graph.attr(size=f"{page[0]:.3f},{page[1]:.3f}!")
    graph.attr("node", fontname="Helvetica", fontsize="11")
    graph.attr("edge", fontname="Helvetica", fontsize="10", arrowsize="0.6")
    ids = {key: f"n{i}" for i, key in enumerate(nodes)}  # DOT names: keys may hold ':' or tuples
    symbolic = _attention_shapes(nodes, edges)
    flatten = {p for p in _ancestors(focus)} if focus else set()

    def attrs_of(key, where):
        node = nodes[key]
        if key in pending:
            node = replace(node, grad_norm=None)
        attrs = _node_attrs(node, show_saved, symbolic.get(key), where, scale)
        if key in pending and has_grads:
            attrs.update(label=attrs["label"] + "\n" + PENDING, fontcolor="#8c8c8c",
                         color="#bdbdbd")
        if key in overlay and not attrs["label"].startswith("<"):
            attrs["label"] += "\n" + overlay[key]
        if key == current:
            attrs.update(color="#d62728", penwidth="4", fillcolor="#fff2a8")
        return attrs

    _emit_clusters(graph, nodes, ids, _cluster_tree(nodes), attrs_of, edges, flatten,
                   rows=rankdir in ("TB", "BT"))

    marks = _residual_marks(nodes, edges)
    # edges into each box in input order, so dot places an op's first input leftmost
    # (Q left of K above QKᵀ, A left of V at Z = AV)
    for i in sorted(range(len(edges)), key=lambda i: edges[i].slot):
        e = edges[i]
        norm = None if e.dst in pending else e.grad_norm
        attrs = scale.edge_attrs(norm) if has_grads else {"color": "#555555"}
        if has_grads and e.dst in pending:
            attrs.update(color="#cfcfcf", style="dotted")  # no gradient has come this way yet
        if i in marks:
            attrs["label"] = marks[i] + (f" {fmt_number(norm)}" if norm is not None else "")
            attrs["style"] = "bold" if marks[i] == "skip" else "dashed"
            if marks[i] == "skip":
                attrs["weight"] = "4"  # keep the residual stream straight in the layout
        elif e.label:
            attrs["label"] = e.label
        elif edge_numbers and norm is not None:
            attrs["label"] = fmt_number(norm)
        if direction == "backward":
            attrs["dir"] = "back"  # same layout, arrowhead at the input: the gradient's way
        graph.edge(ids[e.src], ids[e.dst], **attrs)
    if legend:
        kinds = {_fill_kind(n) for n in nodes.values()}
        graph.attr(label=legend_label(scale, has_grads, direction, kinds, title, overlay_note),
                   labelloc="b", labeljust="l")
    elif title:
        graph.attr(label=title, labelloc="t")
    return graph


def _ancestors(path):
    """"blocks.0.attn" -> ["blocks.0"]: the modules that enclose `path` (not `path` itself)."""
    units = module_units(path)
    return [".".join(units[:i]) for i in range(1, len(units))]
