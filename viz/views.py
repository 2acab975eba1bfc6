"""Smaller views of a traced graph: fold modules below a depth into one box each, or keep only the
inside of one module.

Both take and return the (nodes, edges) of `viz.trace`, so `draw_graph` can draw any of them.
Module paths follow `nn.Module.named_modules()`: "blocks.0.attn.q_proj".
"""
from .style import fmt_shape
from .trace import Edge, Node


def module_units(path):
    """"blocks.0.attn.q_proj" -> ["blocks.0", "attn", "q_proj"]: a list index stays with its
    container."""
    units = []
    for part in path.split(".") if path else []:
        if part.isdigit() and units:
            units[-1] += "." + part
        else:
            units.append(part)
    return units


def inside(path, module):
    """True if `path` is `module` itself or a module nested in it ("" is the top level, inside
    nothing)."""
    return bool(module) and (path == module or path.startswith(module + "."))


def collapse(nodes, edges, depth):
    """Fold every module `depth` units down (with everything inside it) into one "module" node.

    The folded node shows the module's class and the shape and gradient norm of the op
    output that leaves it. A parameter read outside its module (GPT's tied wte.weight read
    by the LM head) leaves by an edge labelled with the parameter's name, so the sharing
    stays visible. Edges between the same two boxes merge into one, keeping the largest
    gradient norm.
    """
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
    merged, labels = {}, {}
    for e in edges:
        src, dst = group_of.get(e.src, e.src), group_of.get(e.dst, e.dst)
        if src == dst:
            continue
        leaving = nodes[e.src]
        if src in groups and leaving.kind == "op" and groups[src].shape == ():
            # the module's output: an op result, never one of its weights
            groups[src].shape, groups[src].grad_norm = leaving.shape, leaving.grad_norm
        key = (src, dst) if (src in groups or dst in groups) else (src, dst, e.slot)
        if src in groups and leaving.kind == "param":
            labels[key] = f"{leaving.name} {fmt_shape(leaving.shape)}"
        if key not in merged or (e.grad_norm or 0) > (merged[key].grad_norm or 0):
            merged[key] = Edge(src, dst, e.slot, e.grad_norm)
    for key, label in labels.items():
        merged[key].label = label
    used = {e.src for e in merged.values()} | {e.dst for e in merged.values()}
    kept.update({k: g for k, g in groups.items() if k in used or not merged})
    return kept, list(merged.values())


def focus(nodes, edges, path):
    """Only the nodes made inside module `path`, plus dashed stand-ins for what feeds in and reads
    out.

    Raises ValueError, listing some module paths, when `path` matches no module.
    """
    kept = {k: n for k, n in nodes.items() if inside(n.module, path)}
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

