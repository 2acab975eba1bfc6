"""`draw_graph`: the computation graph behind a tensor as a graphviz picture, grouped by module,
with gradient flow.

Boxes are ops (name and output shape), green ellipses are parameters; after `backward()`
each edge's width and colour show the gradient that flowed back along it (log scale).
Residual adds mark their skip and branch edges (the I + ∂F/∂x of notes 3.6) and the
attention chain is labelled S, A, Z as in notes 3.1–3.5: both are found by the role the
code that computes them gives their graph node (`grad_fn.role`), never by tensor names.
"""
from dataclasses import replace

import graphviz

from .fold import fold_repeats
from .labels import attention_shapes, fill_kind, node_attrs
from .layout import ancestors, cluster_tree, emit_clusters, forward_order
from .legend import legend_label
from .overlay import NOTES, OVERLAYS, overlay_lines
from .save import page_size
from .style import GradScale, fmt_number
from .trace import trace
from .views import collapse, module_units
from .views import focus as focus_view


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
    nodes = forward_order(nodes, edges)
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
    symbolic = attention_shapes(nodes, edges)
    flatten = {p for p in ancestors(focus)} if focus else set()

    def attrs_of(key, where):
        node = nodes[key]
        if key in pending:
            node = replace(node, grad_norm=None)
        attrs = node_attrs(node, show_saved, symbolic.get(key), where, scale)
        if key in pending and has_grads:
            attrs.update(label=attrs["label"] + "\n" + PENDING, fontcolor="#8c8c8c",
                         color="#bdbdbd")
        if key in overlay and not attrs["label"].startswith("<"):
            attrs["label"] += "\n" + overlay[key]
        if key == current:
            attrs.update(color="#d62728", penwidth="4", fillcolor="#fff2a8")
        return attrs

    emit_clusters(graph, nodes, ids, cluster_tree(nodes), attrs_of, edges, flatten,
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
        kinds = {fill_kind(n) for n in nodes.values()}
        graph.attr(label=legend_label(scale, has_grads, direction, kinds, title, overlay_note),
                   labelloc="b", labeljust="l")
    elif title:
        graph.attr(label=title, labelloc="t")
    return graph
